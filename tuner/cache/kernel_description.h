#pragma once
// Turns a kernel spec into the description the runtime library launches from (kernlathe/database.h), with what an
// entry was measured against (spec_hash without an arch, tuner/spec/spec_hash.h). Written by `tune` beside every
// stored entry.

#include <string>

#include "kernlathe/database.h"
#include "tuner/space/space.h"
#include "tuner/spec/model.h"
#include "tuner/spec/spec_hash.h"

namespace kernlathe {

// Every expression is written in canonical form (Expression::to_string). The default configuration is the space's
// defaults when they are valid under the enumerator's constants, else the verification reference, else the first
// valid configuration; default_origin says which. Each problem default is its condition with the full configuration
// it stands for: its values over the space's declared defaults.
KernelDescription describe_kernel(const KernelSpec& spec, const SpaceEnumerator& space);

// The typed values of a configuration, by parameter name.
ConfigurationValues configuration_values(const Space& space, const Configuration& configuration);

// The configuration of typed values in the space's parameter order, or nullopt when a parameter is missing or a
// value is not one of the parameter's values.
std::optional<Configuration> configuration_from_values(const Space& space, const ConfigurationValues& values);

}  // namespace kernlathe
