#include "tuner/space/configuration_checks.h"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kernlathe {
namespace {

std::int64_t evaluate_integer(const Expression& expression, const Bindings& bindings) {
  Expression bound = expression;  // binding mutates; the spec is shared
  bound.bind(bindings.scope);
  return bound.evaluate_integer(bindings.slots);
}

// The first constraint, in declared order, that `configuration` breaks; nullptr when it breaks none.
const Constraint* broken_constraint(const SpaceEnumerator& space, const Configuration& configuration) {
  Bindings bindings = space.bindings(configuration);
  for (const Constraint& constraint : space.space().constraints) {
    Expression bound = constraint.expression;
    bound.bind(bindings.scope);
    if (!bound.evaluate_bool(bindings.slots)) return &constraint;
  }
  return nullptr;
}

std::string problem_values(const KernelSpec& spec) {
  std::string text;
  for (const auto& [symbol, value] : spec.problem) text += fmt::format("{}{}={}", text.empty() ? "" : " ", symbol, value);
  return text.empty() ? "no problem symbols" : "problem " + text;
}

// Where to point when an invalid configuration breaks no single constraint (never expected; the space's file).
SourceLocation space_location(const KernelSpec& spec) {
  return SourceLocation{spec.space.file.empty() ? spec.file.string() : spec.space.file.string()};
}

std::string broken_text(const Constraint* broken) {
  if (broken == nullptr) return "the space's constraints";
  return fmt::format("the constraint '{}' ({})", broken->expression.text(), broken->expression.where().to_string());
}

// The run's default with the named values of one verify.reference mapping.
Configuration with_reference_values(const KernelSpec& spec, const SpaceEnumerator& space,
                                    const std::map<std::string, Value>& values) {
  Configuration configuration = run_default_configuration(spec, space).values;
  for (std::size_t index = 0; index < spec.space.parameters.size(); ++index) {
    auto named = values.find(spec.space.parameters[index].name);
    if (named != values.end()) configuration[index] = named->second;
  }
  return configuration;
}

void check_reference_configuration(const KernelSpec& spec, const SpaceEnumerator& space) {
  const Verification& verification = spec.verification;
  if (!verification.enabled || verification.reference_is_baseline || verification.reference.empty()) return;
  reference_configuration(spec, space);
}

void check_buffer_counts(const KernelSpec& spec, const Bindings& bindings) {
  for (const Argument& argument : spec.arguments) {
    if (!argument.is_buffer || argument.count.empty()) continue;
    const std::int64_t count = evaluate_integer(argument.count, bindings);
    if (count < 0) {
      throw InputError(argument.count.where(),
                       fmt::format("the count of buffer '{}' ('{}') is {} with {}; a count may not be negative",
                                   argument.name, argument.count.text(), count, problem_values(spec)));
    }
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(count, static_cast<std::int64_t>(dtype_size(argument.dtype)), &bytes)) {
      throw InputError(argument.count.where(),
                       fmt::format("the count of buffer '{}' ('{}') is {} elements of {} bytes with {}: more bytes "
                                   "than a 64-bit size holds",
                                   argument.name, argument.count.text(), count, dtype_size(argument.dtype),
                                   problem_values(spec)));
    }
  }
}

void check_launch_geometry(const KernelSpec& spec, const SpaceEnumerator& space, const RunDefault& probe) {
  const Bindings bindings = space.bindings(probe.values);
  const std::string values =
      fmt::format("{} {} and {}",
                  probe.fallback_note.empty() ? "the default configuration" : "the first valid configuration",
                  to_string(spec.space, probe.values), problem_values(spec));
  for (auto [dimensions, what] : {std::pair{&spec.launch.block, "launch.block"}, std::pair{&spec.launch.grid, "launch.grid"}}) {
    for (std::size_t axis = 0; axis < dimensions->size(); ++axis) {
      const Expression& dimension = (*dimensions)[axis];
      if (dimension.empty()) continue;
      const std::int64_t extent = evaluate_integer(dimension, bindings);
      if (extent < 1) {
        throw InputError(dimension.where(), fmt::format("{}[{}] '{}' is {} for {}; a dimension must be at "
                                                        "least 1",
                                                        what, axis, dimension.text(), extent, values));
      }
    }
  }
  const Expression& shared = spec.launch.dynamic_shared_bytes;
  if (!shared.empty()) {
    const std::int64_t bytes = evaluate_integer(shared, bindings);
    if (bytes < 0) {
      throw InputError(shared.where(), fmt::format("launch.shared_memory '{}' is {} bytes for {}; it may not "
                                                   "be negative",
                                                   shared.text(), bytes, values));
    }
  }
}

}  // namespace

RunDefault run_default_configuration(const KernelSpec& spec, const SpaceEnumerator& space) {
  Configuration declared = space.default_configuration();
  if (space.is_valid(declared)) return {std::move(declared), ""};
  Configuration first = space.at(0);  // the enumerator refuses a space with no valid configuration
  return {first, fmt::format("the declared default configuration ({}) breaks {}; the first valid configuration ({}) "
                             "stands for the default",
                             to_string(spec.space, declared), broken_text(broken_constraint(space, declared)),
                             to_string(spec.space, first))};
}

RunDefault run_default_for_problem(const KernelSpec& spec, const SpaceEnumerator& space) {
  const std::vector<ProblemDefault>& problem_defaults = spec.space.problem_defaults;
  if (problem_defaults.empty()) return run_default_configuration(spec, space);
  // A condition reads problem symbols and device properties only: the constants of any valid configuration's bindings.
  const Bindings constants = space.bindings(space.at(0));
  std::string passed_over;
  for (const ProblemDefault& problem_default : problem_defaults) {
    Expression condition = problem_default.when;
    condition.bind(constants.scope);
    if (!condition.evaluate_bool(constants.slots)) continue;
    Configuration configuration = space.default_configuration();
    for (std::size_t index = 0; index < spec.space.parameters.size(); ++index) {
      auto named = problem_default.values.find(spec.space.parameters[index].name);
      if (named != problem_default.values.end()) configuration[index] = named->second;
    }
    if (space.is_valid(configuration)) {
      configuration = space.canonical(std::move(configuration));
      return {configuration, fmt::format("{}the space's default for this problem ({} holds, {}) stands for the default "
                                         "configuration: {}",
                                         passed_over, problem_default.when.text(), problem_default.where.to_string(),
                                         to_string(spec.space, configuration))};
    }
    passed_over += fmt::format("the space's default for this problem ({} holds, {}) breaks {}; ",
                               problem_default.when.text(), problem_default.where.to_string(),
                               broken_text(broken_constraint(space, configuration)));
  }
  RunDefault fallback = run_default_configuration(spec, space);
  if (!passed_over.empty()) {
    fallback.fallback_note = passed_over + (fallback.fallback_note.empty() ? "the declared defaults stand for the "
                                                                             "default configuration"
                                                                           : fallback.fallback_note);
  }
  return fallback;
}

std::vector<std::pair<std::size_t, Value>> configuration_assignments(const std::string& text, const KernelSpec& spec,
                                                                  const std::string& option) {
  const std::string where = option + " " + text;
  const std::vector<Parameter>& parameters = spec.space.parameters;
  std::vector<std::string> names;
  for (const Parameter& parameter : parameters) names.push_back(parameter.name);
  std::vector<std::pair<std::size_t, Value>> assignments;
  std::vector<bool> named(parameters.size(), false);
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const std::size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == item.size())
      throw InputError(fmt::format("{}: '{}' is not NAME=VALUE (configurations are given as {}=...,{}=...)", where,
                                   item, names.empty() ? "P" : names.front(), names.size() > 1 ? names[1] : "Q"));
    const std::string name = item.substr(0, equals);
    const std::string value_text = item.substr(equals + 1);
    const auto found = std::find(names.begin(), names.end(), name);
    if (found == names.end()) {
      const std::string suggestion = expr::closest_match(name, names);
      throw InputError(fmt::format("{}: '{}' is not a parameter of the space{}; the parameters are {}", where, name,
                                   suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                                   fmt::join(names, ", ")));
    }
    const std::size_t index = static_cast<std::size_t>(found - names.begin());
    if (named[index]) throw InputError(fmt::format("{}: '{}' is given twice", where, name));
    named[index] = true;
    const Parameter& parameter = parameters[index];
    const auto value = std::find_if(parameter.values.begin(), parameter.values.end(),
                                    [&](const Value& candidate) { return expr::to_string(candidate) == value_text; });
    if (value == parameter.values.end()) {
      std::vector<std::string> values;
      for (const Value& candidate : parameter.values) values.push_back(expr::to_string(candidate));
      const std::string listed = values.size() <= 16 ? fmt::format("{}", fmt::join(values, ", "))
                                                     : fmt::format("{} values from {} to {}", values.size(),
                                                                   values.front(), values.back());
      throw InputError(fmt::format("{}: {} is not one of the values of '{}' ({})", where, value_text, name, listed));
    }
    assignments.emplace_back(index, *value);
  }
  return assignments;
}

Configuration given_configuration(const std::string& text, const KernelSpec& spec, const SpaceEnumerator& space,
                                  const std::string& option) {
  const std::string where = option + " " + text;
  Configuration configuration = run_default_configuration(spec, space).values;
  for (const auto& [index, value] : configuration_assignments(text, spec, option)) configuration[index] = value;
  if (!space.is_valid(configuration)) {
    throw InputError(fmt::format("{}: the configuration {} breaks {}", where, to_string(spec.space, configuration),
                                 broken_text(broken_constraint(space, configuration))));
  }
  return space.canonical(std::move(configuration));
}

Configuration reference_configuration(const KernelSpec& spec, const SpaceEnumerator& space) {
  const Verification& verification = spec.verification;
  const Configuration first = with_reference_values(spec, space, verification.reference);
  if (space.is_valid(first)) return first;
  for (const std::map<std::string, Value>& alternative : verification.reference_alternatives) {
    Configuration configuration = with_reference_values(spec, space, alternative);
    if (space.is_valid(configuration)) return configuration;
  }
  const Constraint* broken = broken_constraint(space, first);
  const SourceLocation constraint_where = broken ? broken->expression.where() : space_location(spec);
  const std::size_t others = verification.reference_alternatives.size();
  const std::string others_too = others == 0   ? std::string()
                                 : others == 1 ? std::string(", and the list's other mapping breaks a constraint too")
                                               : fmt::format(", and the list's {} other mappings break constraints too",
                                                             others);
  throw InputError(verification.reference_where.file.empty() ? SourceLocation{spec.file.string()}
                                                             : verification.reference_where,
                   fmt::format("verify.reference ({}, unnamed parameters at their defaults) breaks {} ({}) with {}{}; "
                               "the reference must be a valid configuration",
                               to_string(spec.space, first),
                               broken ? fmt::format("the constraint '{}'", broken->expression.text())
                                      : std::string("the space's constraints"),
                               constraint_where.to_string(), problem_values(spec), others_too));
}

void check_spec_configurations(const KernelSpec& spec, const SpaceEnumerator& space) {
  const RunDefault probe = run_default_configuration(spec, space);
  check_reference_configuration(spec, space);
  check_buffer_counts(spec, space.bindings(probe.values));
  check_launch_geometry(spec, space, probe);
}

}  // namespace kernlathe
