#include "tuner/run/element_values.h"

#include "tuner/common/float16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace kernlathe {

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
