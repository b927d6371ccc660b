#include "tuner/run/worker_kernels.h"

#include <algorithm>

#include "tuner/run/compare_kernels.h"
#include "tuner/run/fill_kernels.h"

namespace kernlathe {

std::string worker_kernel_source(std::span<const Dtype> dtypes) {
  return compare_kernel_source(dtypes) + "\n" + fill_kernel_source(dtypes);
}

BuiltinCubin worker_kernels_cubin(std::span<const Dtype> dtypes, int arch_major, int arch_minor,
                                  const std::filesystem::path& cache_dir) {
  return compile_builtin_source_cached(worker_kernel_source(dtypes), "tuner_worker_kernels.cu", arch_major, arch_minor,
                                       "the worker's compare and fill kernels", cache_dir);
}

std::vector<Dtype> distinct_dtypes(std::vector<Dtype> dtypes) {
  std::sort(dtypes.begin(), dtypes.end());
  dtypes.erase(std::unique(dtypes.begin(), dtypes.end()), dtypes.end());
  return dtypes;
}

std::string dtype_list(std::span<const Dtype> dtypes) {
  std::string text;
  for (Dtype dtype : dtypes) text += (text.empty() ? "" : ",") + dtype_name(dtype);
  return text;
}

}  // namespace kernlathe
