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

// count elements of dtype, filled as init says, on every core. Random contents: element i is
// random_element(seed, i, low, high), so they are the same with every standard library and thread count.
std::vector<std::byte> initial_contents(Dtype dtype, std::int64_t count, const Initialisation& init);

// A double uniform in [low, high) for element `index` of a buffer with this seed: the top 53 bits of a
// counter-based draw (SplitMix64 of the mixed seed and the index), computed without the elements before it.
double random_element(std::uint64_t seed, std::uint64_t index, double low, double high);

// Output buffers are filled with this byte before a verified run: all-ones is NaN for f16, bf16, f32 and f64, so an
// element the kernel never wrote fails the comparison.
inline constexpr unsigned char poison_byte = 0xFF;

}  // namespace kernlathe
