#pragma once
// Host-side element values of every Dtype: initial contents of buffers, the poison pattern, and conversions used to
// report mismatches (f16 and bf16 through tuner/common/float16.h, so no CUDA header is needed).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tuner/common/float16.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// Writes value converted to dtype at destination (dtype_size(dtype) bytes). Integers take the floor of value,
// clamped to the type's range, so uniform [low, high) over integers gives each integer in range equal weight.
void store_element(Dtype dtype, double value, void* destination);
double load_element(Dtype dtype, const void* source);

// count elements of dtype, filled as init says. Random contents draw doubles uniform in [low, high) from
// std::mt19937_64(seed), taking the top 53 bits of each draw, so the contents are the same with every standard
// library (std::uniform_real_distribution is not specified bit for bit).
std::vector<std::byte> initial_contents(Dtype dtype, std::int64_t count, const Initialisation& init);

// Output buffers are filled with this byte before a verified run: all-ones is NaN for f16, bf16, f32 and f64, so an
// element the kernel never wrote fails the comparison.
inline constexpr unsigned char poison_byte = 0xFF;

}  // namespace kernlathe
