// Reductions within one warp: an xor butterfly of shuffles, after which every lane holds the combination of all 32.
// Block- and cluster-wide reductions build on this (common/row_reduce.cuh, the reduction templates).
#pragma once

// Two sums carried through one reduction (a row's sum and sum of squares).
struct FloatPair {
  float first;
  float second;
};

__device__ __forceinline__ FloatPair add_pairs(FloatPair a, FloatPair b) { return {a.first + b.first, a.second + b.second}; }

__device__ __forceinline__ float shuffle_xor(float value, int offset) {
  return __shfl_xor_sync(0xffffffffu, value, offset);
}
__device__ __forceinline__ FloatPair shuffle_xor(FloatPair value, int offset) {
  return {shuffle_xor(value.first, offset), shuffle_xor(value.second, offset)};
}

// Combines one value per lane over the whole warp; every lane gets the result. The lanes of a warp combine the same
// values in the same order, so they get bitwise the same result.
template <typename T, typename Combine> __device__ __forceinline__ T warp_all_reduce(T value, Combine combine) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value = combine(value, shuffle_xor(value, offset));
  return value;
}
