#include "tuner/space/configuration_checks.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>

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

// The configuration the geometry checks evaluate: the default, which must be valid, except in a spec that verifies
// against its baseline: there the runtime sizes buffers with the first valid configuration instead, which lets the
// GEMM specs share one space whose defaults fit no single dtype (spaces/gemm.yaml, gemm_tf32).
struct ProbeConfiguration {
  Configuration values;
  const char* described_as;
};

ProbeConfiguration probe_configuration(const KernelSpec& spec, const SpaceEnumerator& space) {
  Configuration configuration = space.default_configuration();
  if (space.is_valid(configuration)) return {std::move(configuration), "the default configuration"};
  if (spec.verification.reference_is_baseline) return {space.at(0), "the first valid configuration"};
  const Constraint* broken = broken_constraint(space, configuration);
  throw InputError(broken ? broken->expression.where() : space_location(spec),
                   fmt::format("the space's default configuration ({}) breaks {} with {}; change the parameters' "
                               "defaults so that they meet every constraint (runs start from, and compare with, the "
                               "default; only a spec with verify: {{reference: baseline}} may leave it invalid)",
                               to_string(spec.space, configuration),
                               broken ? fmt::format("the constraint '{}'", broken->expression.text())
                                      : std::string("the space's constraints"),
                               problem_values(spec)));
}

void check_reference_configuration(const KernelSpec& spec, const SpaceEnumerator& space) {
  const Verification& verification = spec.verification;
  if (!verification.enabled || verification.reference_is_baseline || verification.reference.empty()) return;
  Configuration configuration = space.default_configuration();
  for (std::size_t index = 0; index < spec.space.parameters.size(); ++index) {
    auto named = verification.reference.find(spec.space.parameters[index].name);
    if (named != verification.reference.end()) configuration[index] = named->second;
  }
  if (space.is_valid(configuration)) return;
  const Constraint* broken = broken_constraint(space, configuration);
  const SourceLocation constraint_where = broken ? broken->expression.where() : space_location(spec);
  throw InputError(verification.reference_where.file.empty() ? SourceLocation{spec.file.string()}
                                                             : verification.reference_where,
                   fmt::format("verify.reference ({}, unnamed parameters at their defaults) breaks {} ({}) with {}; "
                               "the reference must be a valid configuration",
                               to_string(spec.space, configuration),
                               broken ? fmt::format("the constraint '{}'", broken->expression.text())
                                      : std::string("the space's constraints"),
                               constraint_where.to_string(), problem_values(spec)));
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

void check_launch_geometry(const KernelSpec& spec, const SpaceEnumerator& space, const ProbeConfiguration& probe) {
  const Bindings bindings = space.bindings(probe.values);
  const std::string values =
      fmt::format("{} {} and {}", probe.described_as, to_string(spec.space, probe.values), problem_values(spec));
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

void check_spec_configurations(const KernelSpec& spec, const SpaceEnumerator& space) {
  const ProbeConfiguration probe = probe_configuration(spec, space);
  check_reference_configuration(spec, space);
  check_buffer_counts(spec, space.bindings(probe.values));
  check_launch_geometry(spec, space, probe);
}

}  // namespace kernlathe
