// Shared by every GEMM path: element types chosen by the spec's compile options, block tiling, stores of C, and
// the signature each path implements.
//
// The spec passes one of -DGEMM_INPUT_F32 (fp32 FFMA), -DGEMM_INPUT_TF32 (fp32 storage, tf32 tensor cores),
// -DGEMM_INPUT_F16 or -DGEMM_INPUT_BF16 (16-bit storage, fp32 accumulation). C has the input's storage type.
#pragma once

#include "common/async_copy.cuh"
#include "common/element_16bit.cuh"

#if defined(GEMM_INPUT_F32) || defined(GEMM_INPUT_TF32)
using Input = float;
using Output = float;
#elif defined(GEMM_INPUT_F16)
using Input = __half;
using Output = __half;
#elif defined(GEMM_INPUT_BF16)
using Input = __nv_bfloat16;
using Output = __nv_bfloat16;
#else
#error "the spec must define one of GEMM_INPUT_F32, GEMM_INPUT_TF32, GEMM_INPUT_F16, GEMM_INPUT_BF16"
#endif

// Split-K's work buffers (the wgmma path with WG_SPLIT_K > 1; the other paths ignore them): fp32 partial sums of C
// and one arrival counter per tile and consumer, zero before and after every launch (scratch buffers of the spec).
struct SplitWorkspace {
  float* partials;
  unsigned* counters;
};

// Which BM x BN tile of C a thread block computes. Consecutive blocks walk down a strip of group_rows block-rows
// before moving one block-column right, so the blocks resident at once share A rows and B columns in L2 instead of
// streaming all of B for every block-row (the GROUP_M parameter; 1 gives plain row-major order).
struct BlockTile {
  int row;     // first row of C
  int column;  // first column of C
};

__device__ __forceinline__ BlockTile block_tile(int block, int m, int n, int tile_rows, int tile_columns,
                                                int group_rows) {
  const int blocks_m = m / tile_rows;
  const int blocks_n = n / tile_columns;
  const int blocks_per_group = group_rows * blocks_n;
  const int group = block / blocks_per_group;
  const int first_block_row = group * group_rows;
  const int rows_in_group = min(blocks_m - first_block_row, group_rows);
  const int within_group = block % blocks_per_group;
  BlockTile tile;
  tile.row = (first_block_row + within_group % rows_in_group) * tile_rows;
  tile.column = (within_group / rows_in_group) * tile_columns;
  return tile;
}

// alpha * accumulator + beta * C. C is read only when beta is non-zero: with beta == 0 it may hold anything,
// NaN included, and BLAS defines the result as alpha * A * B. The SiLU-gated epilogue (gemm/epilogue.cuh) ignores
// beta: its C is not of the product's shape.
__device__ __forceinline__ float scaled(float accumulator, float alpha, float beta, const Output* old) {
#ifdef GEMM_EPILOGUE_SILU_GATED
  beta = 0.0f;
#endif
  return beta != 0.0f ? alpha * accumulator + beta * to_float(*old) : alpha * accumulator;
}

// Two adjacent outputs with one store (8 bytes for fp32, 4 for 16-bit types).
__device__ __forceinline__ void store_two(float* destination, float first, float second) {
  *reinterpret_cast<float2*>(destination) = make_float2(first, second);
}
__device__ __forceinline__ void store_two(__half* destination, float first, float second) {
  *reinterpret_cast<__half2*>(destination) = __floats2half2_rn(first, second);
}
__device__ __forceinline__ void store_two(__nv_bfloat16* destination, float first, float second) {
  *reinterpret_cast<__nv_bfloat162*>(destination) = __floats2bfloat162_rn(first, second);
}

// Four adjacent elements as fp32 with one load: 16 bytes of fp32, 8 bytes of 16-bit types. 16-bit inputs are
// converted here, when staged, so the simt path's inner loop is the same FFMA loop for every input type.
__device__ __forceinline__ float4 load_four(const float* source) {
  return __ldg(reinterpret_cast<const float4*>(source));
}
__device__ __forceinline__ float4 load_four(const __half* source) {
  uint2 raw = __ldg(reinterpret_cast<const uint2*>(source));
  float2 low = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
  float2 high = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
  return make_float4(low.x, low.y, high.x, high.y);
}
__device__ __forceinline__ float4 load_four(const __nv_bfloat16* source) {
  uint2 raw = __ldg(reinterpret_cast<const uint2*>(source));
  float2 low = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  float2 high = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  return make_float4(low.x, low.y, high.x, high.y);
}

// Four adjacent outputs with one store (16 bytes of fp32, 8 bytes of 16-bit types).
__device__ __forceinline__ void store_four(float* destination, float4 value) {
  *reinterpret_cast<float4*>(destination) = value;
}
__device__ __forceinline__ void store_four(__half* destination, float4 value) {
  __half2 low = __floats2half2_rn(value.x, value.y), high = __floats2half2_rn(value.z, value.w);
  *reinterpret_cast<uint2*>(destination) =
      make_uint2(*reinterpret_cast<unsigned*>(&low), *reinterpret_cast<unsigned*>(&high));
}
__device__ __forceinline__ void store_four(__nv_bfloat16* destination, float4 value) {
  __nv_bfloat162 low = __floats2bfloat162_rn(value.x, value.y), high = __floats2bfloat162_rn(value.z, value.w);
  *reinterpret_cast<uint2*>(destination) =
      make_uint2(*reinterpret_cast<unsigned*>(&low), *reinterpret_cast<unsigned*>(&high));
}
