#pragma once
// Turns one configuration of a kernel spec into the exact text NVRTC compiles: a prelude of #defines for every
// parameter and derived value, the template text, the instantiated entry point name and the compile options
// (tuner/nvrtc/compile_request.h builds the request). Everything that can change the binary ends up in the
// CompileRequest, because the cubin cache key is a hash of the request (tuner/nvrtc/cubin_cache.h).

#include <string>
#include <utility>
#include <vector>

#include "tuner/nvrtc/compile_request.h"
#include "tuner/space/space.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// Builds the request for one configuration. Every parameter and derived value becomes a macro, so a template
// must not reuse those names for anything else: `template <int BLOCK>` next to a parameter BLOCK expands to
// `template <int 256>`. Name template parameters differently (`template <int block_size>`).
// arch is a real architecture ("sm_90"); when the spec needs arch-specific features (wgmma, setmaxnreg) and
// the arch has such a variant, the "a" suffix is added.
// Throws InputError when the template cannot be read or a template argument cannot be evaluated.
CompileRequest instantiate(const KernelSpec& spec, const SpaceEnumerator& space, const Configuration& configuration,
                           const std::string& arch);

// "sm_90", or "sm_90a" when arch_specific and the device has arch-specific features (sm_90 and newer).
std::string arch_for(const DeviceProperties& device, bool arch_specific);

}  // namespace kernlathe
