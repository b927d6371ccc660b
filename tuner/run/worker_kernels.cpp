#include "tuner/run/worker_kernels.h"

#include "tuner/run/compare_kernels.h"
#include "tuner/run/fill_kernels.h"

namespace kernlathe {

std::string worker_kernel_source() { return compare_kernel_source() + "\n" + fill_kernel_source(); }

BuiltinCubin worker_kernels_cubin(int arch_major, int arch_minor, const std::filesystem::path& cache_dir) {
  return compile_builtin_source_cached(worker_kernel_source(), "tuner_worker_kernels.cu", arch_major, arch_minor,
                                       "the worker's compare and fill kernels", cache_dir);
}

}  // namespace kernlathe
