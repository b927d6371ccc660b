#pragma once
// The exact text and options NVRTC compiles for one configuration, built from resolved values: the tuner builds it
// from a spec and a space (tuner/compile/instantiate.h), the runtime library from a database entry
// (tuner/runtime). Both go through make_compile_request, so the same configuration gives the same request, the
// same cubin cache key and the same binary whether `tune` or an application compiled it.
//
// Every file the template reaches through #include "..." or #include <...> that exists beside the template is
// handed to NVRTC in memory and hashed into the cache key; nothing of the project is found through a search path,
// so editing any included header invalidates cached cubins and database entries (template_hash). Only toolkit
// headers (cuda_fp16.h, cuda/barrier) come through -I <CUDA include directory>.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tuner/expr/expression.h"

namespace kernlathe {

using HeaderFiles = std::vector<std::pair<std::string, std::string>>;  // include name as written -> contents

struct CompileRequest {
  std::string source_name;      // "saxpy.cu": shown in compile errors and used in the #line directive
  std::string source;           // the full instantiated source: prelude + template text
  std::string name_expression;  // "saxpy<256, 4, 2, true>"; the entry point name alone when not a template
  std::vector<std::string> options;  // NVRTC options, including --gpu-architecture=sm_90 (or sm_90a)
  std::string arch;                  // "sm_90" / "sm_90a"
  HeaderFiles headers;               // in-memory headers, hashed into the cache key
};

// One named compile-time value of a configuration: a parameter or a derived value.
struct CompileTimeValue {
  std::string name;
  expr::Value value;
  int enumeration_index = -1;  // >= 0 for a value of an enumeration parameter: its index in the declared values
};

struct TemplateSource {
  std::string source_name;    // file name of the template, for messages and #line
  std::string text;           // the template's text
  HeaderFiles headers;        // every project file it includes, recursively
};

// Builds the request: a prelude of #defines (define_line) for values, "#line 1" and the template text;
// options are extra_options, --std=c++17 unless extra_options name a standard, --gpu-architecture=<arch with the
// "a" suffix when arch_specific allows it> and -I <CUDA include directory> when it exists.
CompileRequest make_compile_request(const TemplateSource& source, const std::vector<CompileTimeValue>& values,
                                    std::string name_expression, const std::vector<std::string>& extra_options,
                                    const std::string& arch, bool arch_specific);

// "#define NAME value" lines for named values. Integers get an LL suffix only when they do not fit an int,
// booleans become 1/0, floats keep 17 significant digits. An enumeration value v of parameter P
// (enumeration_index >= 0) gives "#define P_v 1" and "#define P <index of v>".
std::string define_line(const std::string& name, const expr::Value& value, int enumeration_index = -1);

// How a value is written as a template argument: true/false, decimal, strings as they are.
std::string template_argument_text(const expr::Value& value);

// "sm_90a" for ("sm_90", true); arch unchanged when arch_specific is false or the arch has no such variant
// (arch-specific variants exist from Hopper, sm_90, on).
std::string with_arch_specific_suffix(const std::string& arch, bool arch_specific);

// Reads a file once per process; later calls return the remembered contents. Throws InputError when the file
// cannot be read.
const std::string& read_source_file(const std::filesystem::path& path);

// The template at path with every project file it includes (read through read_source_file).
TemplateSource read_template_source(const std::filesystem::path& path);

// Files reached through #include "..." or #include <...> from source (recursively), looked up next to the
// including file and then in search_directory. Names that match no file (cuda_fp16.h) are left to NVRTC.
HeaderFiles collect_included_files(const std::string& source, const std::filesystem::path& source_directory,
                                   const std::filesystem::path& search_directory);

// A 16-hex-digit content hash of a template and every file it includes (names and contents): what a database
// entry was measured with. Editing any included header changes it.
std::string template_hash(const TemplateSource& source);

// The CUDA toolkit's include directory ($CUDA_HOME/include, else /usr/local/cuda/include), or "" when absent.
std::string cuda_include_directory();

}  // namespace kernlathe
