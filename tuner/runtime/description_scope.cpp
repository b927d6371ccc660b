#include "tuner/runtime/description_scope.h"

#include <algorithm>

#include <fmt/format.h>

namespace kernlathe {

DescriptionScope::DescriptionScope(const KernelDescription& description, const DeviceIdentity& device,
                                   const Problem& problem)
    : description_(description), problem_(complete_problem(description, problem)) {
  for (const auto& [name, value] : device.properties) set(scope_.add(name), value);
  for (const auto& [name, value] : problem_) set(scope_.add(name), value);
  // A condition reads the values of device and problem alone, even where a parameter or a derived value of the
  // same name rebinds the slot later.
  base_slots_ = slots_;
  for (const ProblemDefaultDescription& problem_default : description.problem_defaults)
    conditions_.push_back(compile(problem_default.when));
  for (const ParameterDescription& parameter : description.parameters) parameter_slots_.push_back(scope_.add(parameter.name));
  for (const NamedExpression& derived : description.derived) {
    derived_.push_back(compile(derived.expression));  // before its own name: it sees the earlier ones only
    derived_slots_.push_back(scope_.add(derived.name));
  }
  for (const std::string& constraint : description.constraints) constraints_.push_back(compile(constraint));
  slots_.resize(scope_.size());
}

DescriptionScope::Compiled DescriptionScope::compile(const std::string& text) const {
  Compiled compiled;
  try {
    compiled.expression = expr::Expression::parse(text, scope_);
  } catch (...) {
    compiled.error = std::current_exception();
    try {
      compiled.expression = expr::Expression::parse(text);  // for the names it reads, where it parses
    } catch (...) {
    }
  }
  return compiled;
}

Value DescriptionScope::run(const Compiled& compiled) const {
  if (compiled.error) std::rethrow_exception(compiled.error);
  return compiled.expression.evaluate(slots_);
}

void DescriptionScope::set(int slot, const Value& value) {
  const auto index = static_cast<std::size_t>(slot);
  if (index >= slots_.size()) slots_.resize(index + 1);
  slots_[index] = value;
}

Value DescriptionScope::problem_default_condition(std::size_t index) const {
  const Compiled& condition = conditions_.at(index);
  if (condition.error) std::rethrow_exception(condition.error);
  return condition.expression.evaluate(base_slots_);
}

std::string DescriptionScope::set_parameters(const ConfigurationValues& configuration) {
  // Every configuration starts from the device and the problem, as if no other had been checked before it.
  std::copy(base_slots_.begin(), base_slots_.end(), slots_.begin());
  for (std::size_t index = 0; index < parameter_slots_.size(); ++index) {
    const std::string& name = description_.parameters[index].name;
    auto found = configuration.find(name);
    if (found == configuration.end()) return fmt::format("it has no value for parameter {}", name);
    set(parameter_slots_[index], found->second);
  }
  return "";
}

Value DescriptionScope::evaluate_derived(std::size_t index) {
  Value value = run(derived_.at(index));
  set(derived_slots_[index], value);
  return value;
}

bool DescriptionScope::constraint_holds(std::size_t index) const { return expr::truthy(run(constraints_.at(index))); }

Value DescriptionScope::evaluate(const std::string& text) {
  auto found = others_.find(text);
  if (found == others_.end()) found = others_.emplace(text, compile(text)).first;
  return run(found->second);
}

std::vector<std::string> DescriptionScope::derived_reads(std::size_t index) const {
  const Compiled& derived = derived_.at(index);
  if (derived.expression.empty()) std::rethrow_exception(derived.error);
  return derived.expression.names();
}

std::string unusable_reason(DescriptionScope& scope, const ConfigurationValues& configuration) {
  const KernelDescription& description = scope.description();
  try {
    if (std::string why = scope.set_parameters(configuration); !why.empty()) return why;
    for (std::size_t index = 0; index < description.derived.size(); ++index) scope.evaluate_derived(index);
    for (std::size_t index = 0; index < description.constraints.size(); ++index) {
      if (!scope.constraint_holds(index)) return fmt::format("it breaks the constraint {}", description.constraints[index]);
    }
  } catch (const std::exception& error) {
    return fmt::format("its constraints cannot be checked here ({})", error.what());
  }
  return "";
}

}  // namespace kernlathe
