#pragma once
// The evaluation worker's own kernels: verification's compare kernels (compare_kernels.h) and the buffer fill
// (fill_kernels.h), compiled as one NVRTC program for the device's arch and kept in the cubin cache, so a warm
// run loads them without compiling. The worker compiles (or reads) them on a thread while the CUDA context is
// created (evaluation_worker.cpp).
//
// Only the dtypes a spec's buffers use are compiled: with an empty cubin cache the nine dtypes' kernels took the
// worker 1.03-1.38 s on the H200 host while a tuning run's compile pool kept every core busy, longer than the
// context (0.33-0.37 s) that the compile runs beside.

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// Both sources, one after the other, with the kernels of `dtypes`.
std::string worker_kernel_source(std::span<const Dtype> dtypes);

// The cubin of worker_kernel_source(dtypes) for sm_<major><minor>, from cache_dir when it holds it (one entry per
// set of dtypes). Throws TunerError with NVRTC's log when the source does not compile.
BuiltinCubin worker_kernels_cubin(std::span<const Dtype> dtypes, int arch_major, int arch_minor,
                                  const std::filesystem::path& cache_dir);

// The dtypes in `dtypes`, each once, in the order of the Dtype enumeration: the same set gives the same source.
std::vector<Dtype> distinct_dtypes(std::vector<Dtype> dtypes);

// "f32,bf16": for the start-up profile.
std::string dtype_list(std::span<const Dtype> dtypes);

}  // namespace kernlathe
