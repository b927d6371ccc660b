#pragma once
// NVRTC, in this process: one CompileRequest -> one cubin in the cache directory.
//
// Compiles straight to SASS for the real arch (nvrtcGetCUBIN). PTX would be JIT-compiled by the driver at load
// time, which hides the compile cost inside the first launch and, on a driver older than the toolkit, fails.

#include <filesystem>
#include <string>
#include <vector>

#include "tuner/nvrtc/compile_request.h"

namespace kernlathe {

struct CompileResult {
  bool ok = false;
  std::string log;            // NVRTC's full program log (warnings too when ok)
  std::string lowered_name;   // mangled name of the instantiated entry point, for cuModuleGetFunction
  std::filesystem::path cubin_path;
  std::string key;            // cache key (cubin_cache.h)
  double compile_ms = 0;      // 0 when the cubin came from the cache
  bool cached = false;
  std::string error;          // first error line(s) of the log, or why NVRTC could not run
};

// Looks the request up in cache_dir first (unless use_cache is false), otherwise compiles and stores the cubin
// there. Never throws: a configuration that fails to compile is a result (ok=false, full log kept).
CompileResult compile_cubin(const CompileRequest& request, const std::filesystem::path& cache_dir,
                            bool use_cache = true);

// "13.0": NVRTC's major.minor, part of every cache key.
std::string nvrtc_version();

// A source the tuner carries inside itself (the verification compare kernels, the ceiling kernels) compiled to a
// cubin for sm_<major><minor>, uncached. Throws TunerError naming `what`, with NVRTC's log, when it fails.
std::vector<char> compile_builtin_source(const std::string& source, const std::string& file_name, int arch_major,
                                         int arch_minor, const std::string& what);

// compile_builtin_source through the cubin cache in cache_dir, under the key of (source, file name, the options
// compile_builtin_source uses, NVRTC version, arch): a warm run reads the cubin and runs no NVRTC compile. A cache
// that cannot be read or written is skipped (the source is compiled), never an error. Throws as
// compile_builtin_source does.
struct BuiltinCubin {
  std::vector<char> cubin;
  bool cached = false;  // read from the cache
};
BuiltinCubin compile_builtin_source_cached(const std::string& source, const std::string& file_name, int arch_major,
                                           int arch_minor, const std::string& what,
                                           const std::filesystem::path& cache_dir);

// The lines of an NVRTC log that report errors (at most max_lines), joined by newlines; the log's first
// non-empty line when none says "error".
std::string first_error_lines(const std::string& log, int max_lines = 3);

// The lines of a successful compile's log where ptxas reports a "Potential Performance Loss" (C7509-C7515: wgmma
// instructions serialised, setmaxnreg ignored), each once, without the "ptxas info    : " prefix. Such a kernel is
// correct and can run several times slower: a split-K GEMM whose empty splits zeroed their accumulators took 0.0415
// ms against 0.0246 unsplit on the H200 (results/linear_workload/README.md), which only this line explained.
std::vector<std::string> performance_warnings(const std::string& log);

}  // namespace kernlathe
