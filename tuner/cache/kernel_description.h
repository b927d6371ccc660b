#pragma once
// Turns a kernel spec into the description the runtime library launches from (kernlathe/database.h), and names
// what an entry was measured against (kernel_hash): the spec, its space, and the template with every file it
// includes. Written by `tune` beside every stored entry.

#include <string>

#include "kernlathe/database.h"
#include "tuner/space/space.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// The spec file, the space file and template_hash of the template and its includes: another value means another
// kernel, and entries measured against the old one are stale. Throws InputError when a file cannot be read.
std::string kernel_hash(const KernelSpec& spec);

// Every expression is written in canonical form (Expression::to_string). The default configuration is the space's
// defaults when they are valid under the enumerator's constants, else the verification reference, else the first
// valid configuration; default_origin says which.
KernelDescription describe_kernel(const KernelSpec& spec, const SpaceEnumerator& space);

// The typed values of a configuration, by parameter name.
ConfigurationValues configuration_values(const Space& space, const Configuration& configuration);

// The configuration of typed values in the space's parameter order, or nullopt when a parameter is missing or a
// value is not one of the parameter's values.
std::optional<Configuration> configuration_from_values(const Space& space, const ConfigurationValues& values);

}  // namespace kernlathe
