#pragma once
// Checks of a kernel spec that need its space enumerated against a device's properties and the problem's values,
// so that `tune validate` rejects what a run would otherwise find late, one configuration or one allocation in:
//   - the verification reference configuration (its named values, the run's default for the rest) breaks a
//     constraint;
//   - a buffer count is negative, or its size in bytes overflows 64 bits;
//   - for the run's default configuration, a block or grid dimension is below 1 or the dynamic shared memory is
//     negative.
// Each failure is an InputError at the spec or space line that is wrong, naming the configuration and the values.
// And the configurations a run starts from or is given: the run's default, and `--config K=V,...`.

#include <string>
#include <utility>
#include <vector>

#include "tuner/space/space.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// `space` enumerates spec.space with the constants (device properties, problem symbols) the checks evaluate with.
void check_spec_configurations(const KernelSpec& spec, const SpaceEnumerator& space);

// The configuration a run starts from and compares with: the declared defaults when they meet every constraint;
// otherwise the first valid configuration, and fallback_note says so and why (a Kernel Tuner kernel ported as
// written: Kernel Tuner has no default, and its first values may break a constraint).
struct RunDefault {
  Configuration values;
  std::string fallback_note;  // empty when the declared defaults are valid
};
RunDefault run_default_configuration(const KernelSpec& spec, const SpaceEnumerator& space);

// The run's default at the enumerator's problem and device: the first of the space's problem defaults whose
// condition holds there and that is valid there (its values over the declared defaults), with a note that says so;
// otherwise run_default_configuration, its note led by why a problem default whose condition held was passed over
// (the constraint it breaks). `tune run` starts from it and compares with it; --config and the verification reference
// keep run_default_configuration.
RunDefault run_default_for_problem(const KernelSpec& spec, const SpaceEnumerator& space);

// The verification reference configuration: the first of verify.reference's mappings (named values over the run's
// default) that is valid here. InputError at the spec's reference, naming the first mapping's broken constraint and
// the problem, when none is. Only for a spec whose reference is configurations (not `baseline`, not none).
Configuration reference_configuration(const KernelSpec& spec, const SpaceEnumerator& space);

// The NAME=VALUE assignments of a `--config K=V,K=V` text as (parameter index, value), checked against the space's
// parameters and values only: what can be refused before the problem's device is known. InputError naming `option`:
// not K=V, a name that is no parameter, a name given twice, a value not among the parameter's values.
std::vector<std::pair<std::size_t, Value>> configuration_assignments(const std::string& text, const KernelSpec& spec,
                                                                  const std::string& option = "--config");

// One `--config K=V,K=V` of `tune run`: the parameters it names take its values, the others the run's default.
// InputError naming `option` and what is wrong: not K=V, a name that is no parameter, a name given twice, a value
// not among the parameter's values, or a configuration that breaks a constraint (which one).
Configuration given_configuration(const std::string& text, const KernelSpec& spec, const SpaceEnumerator& space,
                                  const std::string& option = "--config");

}  // namespace kernlathe
