#include "tuner/run/compare_kernels.h"

#include <fmt/format.h>

namespace kernlathe {
namespace {

// f16 and bf16 arrive as raw 16-bit patterns wrapped in distinct types, so overloads pick the conversion and the
// source needs no CUDA headers (NVRTC compiles it without include paths).
constexpr const char* source = R"(
typedef unsigned long long u64;
struct half_bits { unsigned short bits; };
struct bfloat16_bits { unsigned short bits; };

__device__ double value_at(const half_bits* data, long long i) {
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(data[i].bits));
  return value;
}
__device__ double value_at(const bfloat16_bits* data, long long i) {
  return __uint_as_float(((unsigned)data[i].bits) << 16);
}
template <typename T> __device__ double value_at(const T* data, long long i) { return (double)data[i]; }

template <typename T>
__device__ void compare(const T* out, const T* reference, long long count, double absolute, double relative,
                        u64* results) {
  u64 failing = 0, first = ~0ull;
  double worst = 0;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += stride) {
    double got = value_at(out, i), expected = value_at(reference, i);
    double difference = fabs(got - expected);
    // Written so that NaN fails: every comparison with NaN is false.
    if (!(difference <= absolute + relative * fabs(expected))) {
      ++failing;
      if ((u64)i < first) first = (u64)i;
    }
    if (difference == difference) {
      double scale = fabs(expected);
      worst = fmax(worst, scale > 0 ? difference / scale : difference);
    }
  }
  // One atomic per warp instead of per thread: when everything fails, millions of atomics on one word would
  // cost more than the comparison.
  u64 worst_bits = (u64)__double_as_longlong(worst);
  for (int offset = 16; offset > 0; offset /= 2) {
    failing += __shfl_xor_sync(0xffffffffu, failing, offset);
    u64 other_first = __shfl_xor_sync(0xffffffffu, first, offset);
    first = other_first < first ? other_first : first;
    u64 other_worst = __shfl_xor_sync(0xffffffffu, worst_bits, offset);
    worst_bits = other_worst > worst_bits ? other_worst : worst_bits;  // non-negative doubles order as their bits
  }
  if ((threadIdx.x & 31) == 0) {
    if (failing) {
      atomicAdd(&results[0], failing);
      atomicMin(&results[1], first);
    }
    if (worst_bits) atomicMax(&results[2], worst_bits);
  }
}

#define KERNLATHE_COMPARE_KERNEL(name, type)                                                                 \
  extern "C" __global__ void compare_##name(const type* out, const type* reference, long long count,    \
                                             double absolute, double relative, u64* results) {           \
    compare(out, reference, count, absolute, relative, results);                                         \
  }
)";

// The element type each dtype's kernel reads.
const char* element_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::f16: return "half_bits";
    case Dtype::bf16: return "bfloat16_bits";
    case Dtype::f32: return "float";
    case Dtype::f64: return "double";
    case Dtype::i8: return "signed char";
    case Dtype::u8: return "unsigned char";
    case Dtype::i32: return "int";
    case Dtype::u32: return "unsigned int";
    case Dtype::i64: return "long long";
  }
  return "";
}

}  // namespace

std::string compare_kernel_source(std::span<const Dtype> dtypes) {
  std::string text = source;
  for (Dtype dtype : dtypes) text += fmt::format("KERNLATHE_COMPARE_KERNEL({}, {})\n", dtype_name(dtype), element_type(dtype));
  return text;
}

std::string compare_kernel_source() { return compare_kernel_source(all_dtypes); }

std::string compare_kernel_name(Dtype dtype) { return "compare_" + dtype_name(dtype); }

}  // namespace kernlathe
