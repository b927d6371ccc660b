#include "tuner/spec/name_resolution.h"

#include <fmt/format.h>

#include <algorithm>

namespace kernlathe::spec_loading {

// Binds a copy (the model keeps expressions unbound: each stage binds against its own scope) so that
// unknown names fail now, at load time.
void check_resolves(const Expression& expression, const expr::Scope& scope) {
  if (expression.empty()) return;
  Expression copy = expression;
  try {
    copy.bind(scope);
  } catch (const InputError& error) {
    const SourceLocation& where = expression.where();
    if (!error.where().file.empty() || where.file.empty() || std::string_view(error.what()).starts_with(where.file)) {
      throw;
    }
    throw InputError(where, error.what());
  }
}

namespace {

// What `name` is in the space, where it depends on the configuration: "parameter" or "derived value"; empty for a
// problem symbol, a device property or an unknown name.
std::string_view configuration_dependent_kind(const std::string& name, const Space& space) {
  if (std::any_of(space.parameters.begin(), space.parameters.end(),
                  [&](const Parameter& parameter) { return parameter.name == name; }))
    return "parameter";
  if (std::any_of(space.derived.begin(), space.derived.end(),
                  [&](const DerivedValue& derived) { return derived.name == name; }))
    return "derived value";
  return {};
}

}  // namespace

// Buffer sizes and scalar arguments are fixed once per problem: memory is allocated and filled before any
// configuration runs, so they may not depend on what is being tuned.
void check_fixed_per_problem(const Expression& expression, const expr::Scope& problem_scope, const Space& space,
                             std::string_view what) {
  for (const std::string& name : expression.names()) {
    const std::string_view kind = configuration_dependent_kind(name, space);
    if (!kind.empty()) {
      throw InputError(expression.where(),
                       fmt::format("{} uses {} '{}', but it may only use problem symbols and device properties: "
                                   "arguments are allocated and filled once per problem, not per configuration",
                                   what, kind == "parameter" ? "tuning parameter" : kind, name));
    }
  }
  check_resolves(expression, problem_scope);
}

namespace {

// A problem default's condition picks a configuration, so it cannot read one: problem symbols and device
// properties only.
void check_problem_default_condition(const ProblemDefault& problem_default, const expr::Scope& problem_scope,
                                     const Space& space) {
  const Expression& when = problem_default.when;
  for (const std::string& name : when.names()) {
    const std::string_view kind = configuration_dependent_kind(name, space);
    if (!kind.empty()) {
      throw InputError(when.where(), fmt::format("the when of a problem default reads {} '{}'; it may read problem "
                                                 "symbols and device properties only (it chooses the configuration)",
                                                 kind, name));
    }
  }
  check_resolves(when, problem_scope);
}

}  // namespace

void check_names(const KernelSpec& spec) {
  const Space& space = spec.space;
  expr::Scope scope;
  for (const std::string& name : device_property_names()) scope.add(name);
  for (const auto& [symbol, value] : spec.problem) scope.add(symbol);
  const expr::Scope problem_scope = scope;

  auto is_problem_symbol = [&](std::string_view name) {
    return std::any_of(spec.problem.begin(), spec.problem.end(), [&](const auto& entry) { return entry.first == name; });
  };
  for (const Parameter& parameter : space.parameters) {
    if (is_problem_symbol(parameter.name)) {
      throw InputError(parameter.where, fmt::format("parameter '{}' has the name of a problem symbol of {}; rename one",
                                                    parameter.name, spec.file.string()));
    }
    scope.add(parameter.name);
  }
  for (const DerivedValue& derived : space.derived) {
    if (is_problem_symbol(derived.name)) {
      throw InputError(derived.expression.where(),
                       fmt::format("derived value '{}' has the name of a problem symbol of {}; rename one",
                                   derived.name, spec.file.string()));
    }
    // A derived value reads only what is declared before it, so evaluation in declared order is well-defined.
    for (const std::string& name : derived.expression.names()) {
      bool declared_later = scope.slot_of(name) < 0 &&
                            std::any_of(space.derived.begin(), space.derived.end(),
                                        [&](const DerivedValue& other) { return other.name == name; });
      if (declared_later) {
        throw InputError(derived.expression.where(),
                         fmt::format("derived value '{}' uses '{}', which is declared after it; a derived value may "
                                     "only use those declared before it: move '{}' up",
                                     derived.name, name, name));
      }
    }
    check_resolves(derived.expression, scope);
    scope.add(derived.name);
  }
  for (const Constraint& constraint : space.constraints) check_resolves(constraint.expression, scope);
  for (const ProblemDefault& problem_default : space.problem_defaults)
    check_problem_default_condition(problem_default, problem_scope, space);
  for (const Expression& argument : spec.template_arguments) check_resolves(argument, scope);
  for (const Expression& dimension : spec.launch.grid) check_resolves(dimension, scope);
  for (const Expression& dimension : spec.launch.block) check_resolves(dimension, scope);
  check_resolves(spec.launch.dynamic_shared_bytes, scope);
  check_resolves(spec.metrics.flops, scope);
  check_resolves(spec.metrics.bytes, scope);
  for (const Argument& argument : spec.arguments) {
    if (argument.is_buffer) {
      check_fixed_per_problem(argument.count, problem_scope, space, fmt::format("the count of buffer '{}'", argument.name));
    } else if (argument.tensor_map) {
      // The tensor's shape is the buffer's, fixed per problem; the box and swizzle follow the tiles being tuned.
      for (const Expression& dimension : argument.tensor_map->dims) {
        check_fixed_per_problem(dimension, problem_scope, space, fmt::format("a dimension of tensor map '{}'", argument.name));
      }
      for (const Expression& stride : argument.tensor_map->strides) {
        check_fixed_per_problem(stride, problem_scope, space, fmt::format("a stride of tensor map '{}'", argument.name));
      }
      for (const Expression& box : argument.tensor_map->box) check_resolves(box, scope);
      check_resolves(argument.tensor_map->swizzle, scope);
    } else {
      check_fixed_per_problem(argument.value, problem_scope, space, fmt::format("the value of scalar '{}'", argument.name));
    }
  }
  if (spec.baseline.present()) {
    check_fixed_per_problem(spec.baseline.m, problem_scope, space, "baseline.m");
    check_fixed_per_problem(spec.baseline.n, problem_scope, space, "baseline.n");
    check_fixed_per_problem(spec.baseline.k, problem_scope, space, "baseline.k");
  }
}

}  // namespace kernlathe::spec_loading
