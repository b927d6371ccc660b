#pragma once
// Verification on the GPU. Copying 256 MiB of output to the host per configuration would cap the evaluation rate,
// so the worker compares each output with the reference copy it keeps on the device and copies back three numbers:
// how many elements differ, the first index that does, and the largest relative error.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tuner/spec/model.h"

namespace kernlathe {

// CUDA source of one extern "C" kernel per dtype, named compare_kernel_name(dtype), with parameters
// (const T* out, const T* reference, long long count, double absolute, double relative, unsigned long long* results).
// An element fails when |out - reference| > absolute + relative * |reference| or when either is NaN.
// results[0] += failing elements; results[1] = min(results[1], first failing index); results[2] = max(results[2],
// bits of the largest relative error seen), so results must start as {0, ~0, 0}.
// compare_kernel_source(dtypes) holds the kernels of those dtypes only: each dtype costs the worker's NVRTC compile
// about as much as the shared code (all nine 0.53 s, f32 alone 0.08 s on one build-machine core).
std::string compare_kernel_source();
std::string compare_kernel_source(std::span<const Dtype> dtypes);
std::string compare_kernel_name(Dtype dtype);

}  // namespace kernlathe
