#include "tuner/run/element_values.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace kernlathe {

std::uint16_t float_to_half_bits(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  std::uint32_t sign = (bits >> 16) & 0x8000u;
  std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {  // infinity, or NaN kept quiet with its top payload bits
    return static_cast<std::uint16_t>(sign | 0x7C00u | (magnitude > 0x7F800000u ? 0x200u | ((magnitude >> 13) & 0x3FFu) : 0u));
  }
  if (magnitude >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to infinity
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal half, in units of 2^-24
    int exponent = static_cast<int>(magnitude >> 23);
    if (exponent < 102) return static_cast<std::uint16_t>(sign);  // under half a unit
    std::uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    int shift = 126 - exponent;
    std::uint32_t result = mantissa >> shift;
    std::uint32_t remainder = mantissa & ((1u << shift) - 1u);
    std::uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return static_cast<std::uint16_t>(sign | result);
  }
  std::uint32_t result = (magnitude - 0x38000000u) >> 13;  // rebias the exponent from 127 to 15
  std::uint32_t remainder = magnitude & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;  // a carry moves into the exponent
  return static_cast<std::uint16_t>(sign | result);
}

float half_bits_to_float(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

std::uint16_t float_to_bfloat16_bits(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bfloat16_bits_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

namespace {

template <typename Integer>
Integer to_integer(double value) {
  if (std::isnan(value)) return 0;
  double floored = std::floor(value);
  double lowest = static_cast<double>(std::numeric_limits<Integer>::lowest());
  double highest = static_cast<double>(std::numeric_limits<Integer>::max());
  if (floored <= lowest) return std::numeric_limits<Integer>::lowest();
  if (floored >= highest) return std::numeric_limits<Integer>::max();
  return static_cast<Integer>(floored);
}

template <typename T>
void store(T value, void* destination) {
  std::memcpy(destination, &value, sizeof value);
}

template <typename T>
T load(const void* source) {
  T value;
  std::memcpy(&value, source, sizeof value);
  return value;
}

}  // namespace

void store_element(Dtype dtype, double value, void* destination) {
  switch (dtype) {
    case Dtype::f16: return store(float_to_half_bits(static_cast<float>(value)), destination);
    case Dtype::bf16: return store(float_to_bfloat16_bits(static_cast<float>(value)), destination);
    case Dtype::f32: return store(static_cast<float>(value), destination);
    case Dtype::f64: return store(value, destination);
    case Dtype::i8: return store(to_integer<std::int8_t>(value), destination);
    case Dtype::u8: return store(to_integer<std::uint8_t>(value), destination);
    case Dtype::i32: return store(to_integer<std::int32_t>(value), destination);
    case Dtype::u32: return store(to_integer<std::uint32_t>(value), destination);
    case Dtype::i64: return store(to_integer<std::int64_t>(value), destination);
  }
}

double load_element(Dtype dtype, const void* source) {
  switch (dtype) {
    case Dtype::f16: return half_bits_to_float(load<std::uint16_t>(source));
    case Dtype::bf16: return bfloat16_bits_to_float(load<std::uint16_t>(source));
    case Dtype::f32: return load<float>(source);
    case Dtype::f64: return load<double>(source);
    case Dtype::i8: return load<std::int8_t>(source);
    case Dtype::u8: return load<std::uint8_t>(source);
    case Dtype::i32: return load<std::int32_t>(source);
    case Dtype::u32: return load<std::uint32_t>(source);
    case Dtype::i64: return static_cast<double>(load<std::int64_t>(source));
  }
  return 0;
}

std::vector<std::byte> initial_contents(Dtype dtype, std::int64_t count, const Initialisation& init) {
  std::size_t size = dtype_size(dtype);
  std::vector<std::byte> contents(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)) * size);
  std::mt19937_64 generator(init.seed);
  double width = init.high - init.low;
  for (std::int64_t index = 0; index < count; ++index) {
    double value = 0;
    switch (init.kind) {
      case Initialisation::Kind::random:
        value = init.low + width * std::ldexp(static_cast<double>(generator() >> 11), -53);
        break;
      case Initialisation::Kind::constant: value = init.value; break;
      case Initialisation::Kind::sequence: value = init.start + static_cast<double>(index) * init.step; break;
    }
    store_element(dtype, value, contents.data() + static_cast<std::size_t>(index) * size);
  }
  return contents;
}

}  // namespace kernlathe
