#pragma once
// Buffer initialisation on the GPU. Filling a 256 MiB input on every host core and copying it over took 0.5-0.6 s
// of a run's start-up on the H200 (most of it the host-to-device copy); a kernel writes the same elements in a few
// milliseconds. Every element is a function of its index alone (element_values.h: random_element for random
// contents), so the kernel computes exactly the host's values: the same SplitMix64 draw, the same three roundings
// in double precision (written with __dadd_rn, __dsub_rn and __dmul_rn, so the compiler cannot fuse them into an
// FMA the host does not use), the same conversion to each dtype (f16 and bf16 by the integer rounding of
// tuner/common/float16.cpp, integers by floor and clamp). tests/run_fill_kernels_test.cpp runs this source on the
// host against initial_contents(); tests/gpu/fill_device_test.cpp runs it on the GPU.

#include <span>
#include <string>

#include "tuner/spec/model.h"

namespace kernlathe {

// CUDA source of one extern "C" kernel per dtype, named fill_kernel_name(dtype), with parameters
// (T* out, long long count, int kind, unsigned long long seed, double first, double second), the last four from
// fill_arguments(). Needs no header, and its names do not clash with compare_kernel_source(), so both compile as
// one program.
// fill_kernel_source(dtypes): the kernels of those dtypes only (compare_kernels.h says why).
std::string fill_kernel_source();
std::string fill_kernel_source(std::span<const Dtype> dtypes);
std::string fill_kernel_name(Dtype dtype);

// An initialisation as the kernels take it: kind 0 random (first, second = low, high), 1 constant (first = the
// value), 2 sequence (first, second = start, step).
struct FillArguments {
  int kind = 0;
  unsigned long long seed = 0;
  double first = 0, second = 0;
};
FillArguments fill_arguments(const Initialisation& init);

// Whether the kernel writes exactly what initial_contents() writes for this initialisation. Random contents
// whose range overflows a double (high - low is infinite) can draw NaN, whose bits the host's and the GPU's
// conversions to f32 do not keep alike: those stay on the host.
bool fills_on_device(const Initialisation& init);

}  // namespace kernlathe
