#pragma once
// Checks of a kernel spec that need its space enumerated against a device's properties and the problem's values,
// so that `tune validate` rejects what a run would otherwise find late, one configuration or one allocation in:
//   - the space's default configuration breaks a constraint (allowed only where verify: {reference: baseline}: the
//     runtime then sizes buffers with the first valid configuration, and the GEMM specs share one space whose
//     defaults fit no single dtype);
//   - the verification reference configuration (its named values, the defaults for the rest) breaks a constraint;
//   - a buffer count is negative, or its size in bytes overflows 64 bits;
//   - for the default configuration (or that first valid one), a block or grid dimension is below 1 or the dynamic
//     shared memory is negative.
// Each failure is an InputError at the spec or space line that is wrong, naming the configuration and the values.

#include "tuner/space/space.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// `space` enumerates spec.space with the constants (device properties, problem symbols) the checks evaluate with.
void check_spec_configurations(const KernelSpec& spec, const SpaceEnumerator& space);

}  // namespace kernlathe
