#pragma once
// Turns one configuration of a kernel spec into the exact text NVRTC compiles: a prelude of #defines for every
// parameter and derived value, the template text, the instantiated entry point name and the compile options.
// Everything that can change the binary ends up in the CompileRequest, because the cubin cache key is a hash of
// the request (cubin_cache.h).

#include <string>
#include <utility>
#include <vector>

#include "tuner/space/space.h"
#include "tuner/spec/model.h"

namespace kernlathe {

struct CompileRequest {
  std::string source_name;      // "saxpy.cu": shown in compile errors and used in the #line directive
  std::string source;           // the full instantiated source: prelude + template text
  std::string name_expression;  // "saxpy<256, 4, 2, true>"; the entry point name alone when not a template
  std::vector<std::string> options;  // NVRTC options, including --gpu-architecture=sm_90 (or sm_90a)
  std::string arch;                  // "sm_90" / "sm_90a"
  // Files the template includes with #include "...": include name as written -> contents. Handed to NVRTC as
  // in-memory headers and hashed into the cache key, so editing a header invalidates cached cubins.
  std::vector<std::pair<std::string, std::string>> headers;
};

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

// The pieces of instantiate, exposed for tests and for tools that print what would be compiled.

// "#define NAME value" lines for named values. Integers get an LL suffix only when they do not fit an int,
// booleans become 1/0, floats keep 17 significant digits. An enumeration value v of parameter P
// (enumeration_index >= 0) gives "#define P_v 1" and "#define P <index of v>".
std::string define_line(const std::string& name, const Value& value, int enumeration_index = -1);

// How a value is written as a template argument: true/false, decimal, strings as they are.
std::string template_argument_text(const Value& value);

// Reads a file once per process; later calls return the remembered contents. Throws InputError when the file
// cannot be read.
const std::string& read_source_file(const std::filesystem::path& path);

// Files reached through #include "..." from source (recursively), looked up next to the including file and
// then in search_directory. Names that match no file (cuda_fp16.h written with quotes) are left to NVRTC.
std::vector<std::pair<std::string, std::string>> collect_included_files(const std::string& source,
                                                                        const std::filesystem::path& source_directory,
                                                                        const std::filesystem::path& search_directory);

// The CUDA toolkit's include directory ($CUDA_HOME/include, else /usr/local/cuda/include), or "" when absent.
std::string cuda_include_directory();

}  // namespace kernlathe
