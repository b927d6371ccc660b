#include "tuner/run/fill_kernels.h"

#include <cmath>

#include <fmt/format.h>

namespace kernlathe {
namespace {

// The host's functions, element_values.cpp and float16.cpp, step for step. f16 and bf16 are written as their
// 16-bit patterns, so the source needs no CUDA header.
constexpr const char* source = R"(
__device__ unsigned long long fill_mix(unsigned long long x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// kind 0: uniform in [first, second) from the seed; 1: the constant first; 2: first + index * second.
__device__ double fill_value(int kind, unsigned long long seed, long long index, double first, double second) {
  if (kind == 1) return first;
  if (kind == 2) return __dadd_rn(first, __dmul_rn((double)(unsigned long long)index, second));
  const unsigned long long draw = fill_mix(fill_mix(seed) + ((unsigned long long)index + 1) * 0x9e3779b97f4a7c15ULL);
  const double unit = (double)(draw >> 11) * 0x1p-53;
  return __dadd_rn(first, __dmul_rn(__dsub_rn(second, first), unit));
}

__device__ unsigned short fill_half_bits(float value) {
  const unsigned bits = __float_as_uint(value);
  const unsigned sign = (bits >> 16) & 0x8000u;
  const unsigned magnitude = bits & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u)
    return (unsigned short)(sign | 0x7C00u | (magnitude > 0x7F800000u ? 0x200u | ((magnitude >> 13) & 0x3FFu) : 0u));
  if (magnitude >= 0x477FF000u) return (unsigned short)(sign | 0x7C00u);
  if (magnitude < 0x38800000u) {
    const int exponent = (int)(magnitude >> 23);
    if (exponent < 102) return (unsigned short)sign;
    const unsigned mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - exponent;
    unsigned result = mantissa >> shift;
    const unsigned remainder = mantissa & ((1u << shift) - 1u);
    const unsigned halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return (unsigned short)(sign | result);
  }
  unsigned result = (magnitude - 0x38000000u) >> 13;
  const unsigned remainder = magnitude & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return (unsigned short)(sign | result);
}

__device__ unsigned short fill_bfloat16_bits(float value) {
  const unsigned bits = __float_as_uint(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (unsigned short)((bits >> 16) | 0x40u);
  return (unsigned short)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// Floor, clamped to [lowest, highest]; NaN gives 0.
template <typename Integer>
__device__ Integer fill_integer(double value, Integer lowest, Integer highest) {
  if (value != value) return 0;
  const double floored = floor(value);
  if (floored <= (double)lowest) return lowest;
  if (floored >= (double)highest) return highest;
  return (Integer)floored;
}

__device__ float fill_store_f32(double value) { return (float)value; }
__device__ double fill_store_f64(double value) { return value; }
__device__ unsigned short fill_store_f16(double value) { return fill_half_bits((float)value); }
__device__ unsigned short fill_store_bf16(double value) { return fill_bfloat16_bits((float)value); }
__device__ signed char fill_store_i8(double value) { return fill_integer<signed char>(value, -128, 127); }
__device__ unsigned char fill_store_u8(double value) { return fill_integer<unsigned char>(value, 0, 255); }
__device__ int fill_store_i32(double value) { return fill_integer<int>(value, -2147483647 - 1, 2147483647); }
__device__ unsigned fill_store_u32(double value) { return fill_integer<unsigned>(value, 0u, 4294967295u); }
__device__ long long fill_store_i64(double value) {
  return fill_integer<long long>(value, -9223372036854775807LL - 1, 9223372036854775807LL);
}

#define KERNLATHE_FILL_KERNEL(name, type)                                                                    \
  extern "C" __global__ void fill_##name(type* out, long long count, int kind, unsigned long long seed,     \
                                          double first, double second) {                                  \
    const long long stride = (long long)gridDim.x * blockDim.x;                                           \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += stride)           \
      out[i] = fill_store_##name(fill_value(kind, seed, i, first, second));                                \
  }
)";

// The type each dtype's kernel stores (f16 and bf16 as their bit patterns).
const char* stored_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::f16:
    case Dtype::bf16: return "unsigned short";
    case Dtype::f32: return "float";
    case Dtype::f64: return "double";
    case Dtype::i8: return "signed char";
    case Dtype::u8: return "unsigned char";
    case Dtype::i32: return "int";
    case Dtype::u32: return "unsigned";
    case Dtype::i64: return "long long";
  }
  return "";
}

}  // namespace

std::string fill_kernel_source(std::span<const Dtype> dtypes) {
  std::string text = source;
  for (Dtype dtype : dtypes) text += fmt::format("KERNLATHE_FILL_KERNEL({}, {})\n", dtype_name(dtype), stored_type(dtype));
  return text;
}

std::string fill_kernel_source() { return fill_kernel_source(all_dtypes); }

std::string fill_kernel_name(Dtype dtype) { return "fill_" + dtype_name(dtype); }

FillArguments fill_arguments(const Initialisation& init) {
  switch (init.kind) {
    case Initialisation::Kind::random: return {0, init.seed, init.low, init.high};
    case Initialisation::Kind::constant: return {1, init.seed, init.value, init.value};
    case Initialisation::Kind::sequence: return {2, init.seed, init.start, init.step};
  }
  return {};
}

bool fills_on_device(const Initialisation& init) {
  return init.kind != Initialisation::Kind::random || std::isfinite(init.high - init.low);
}

}  // namespace kernlathe
