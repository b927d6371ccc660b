#pragma once
// The evaluation worker's own kernels: verification's compare kernels (compare_kernels.h) and the buffer fill
// (fill_kernels.h), compiled as one NVRTC program for the device's arch and kept in the cubin cache, so a warm
// run loads them without compiling. The worker compiles (or reads) them on a thread while the CUDA context is
// created (evaluation_worker.cpp).

#include <filesystem>
#include <string>

#include "tuner/nvrtc/nvrtc_compiler.h"

namespace kernlathe {

// Both sources, one after the other.
std::string worker_kernel_source();

// The cubin of worker_kernel_source() for sm_<major><minor>, from cache_dir when it holds it. Throws TunerError
// with NVRTC's log when the source does not compile.
BuiltinCubin worker_kernels_cubin(int arch_major, int arch_minor, const std::filesystem::path& cache_dir);

}  // namespace kernlathe
