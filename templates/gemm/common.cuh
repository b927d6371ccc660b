// Shared by every GEMM path: element types chosen by the spec's compile options, the tensor-map parameter type, and
// the signature each path implements.
//
// The spec passes one of -DGEMM_INPUT_F32 (fp32 FFMA), -DGEMM_INPUT_TF32 (fp32 storage, tf32 tensor cores),
// -DGEMM_INPUT_F16 or -DGEMM_INPUT_BF16 (16-bit storage, fp32 accumulation). C has the input's storage type.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

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

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, encoded on the host (cuTensorMapEncodeTiled) by the
// evaluation worker for each `type: tensor_map` argument and passed by value as a __grid_constant__ parameter.
// NVRTC cannot include cuda.h, so the layout is restated here.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ float to_float(float value) { return value; }
__device__ __forceinline__ float to_float(__half value) { return __half2float(value); }
__device__ __forceinline__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }

template <typename T> __device__ __forceinline__ T from_float(float value);
template <> __device__ __forceinline__ float from_float<float>(float value) { return value; }
template <> __device__ __forceinline__ __half from_float<__half>(float value) { return __float2half_rn(value); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}

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
// NaN included, and BLAS defines the result as alpha * A * B.
__device__ __forceinline__ float scaled(float accumulator, float alpha, float beta, const Output* old) {
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

// cp.async (sm_80+): global -> shared copies that bypass registers, tracked in commit groups, so a block keeps
// several K tiles in flight without holding them in registers.
__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}
// 16 bytes, cached in L2 only (.cg): tiles are reused across blocks through L2, not within an SM through L1.
__device__ __forceinline__ void copy_async_16(void* destination, const void* source) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(destination)), "l"(source));
}
// 4 bytes: one element, so a copy can scatter (the simt path transposes A on the way into shared memory). Cached
// in L1 (.ca is the only mode for sizes below 16), so the rest of each 32-byte sector is served from there.
__device__ __forceinline__ void copy_async_4(void* destination, const void* source) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(shared_address(destination)), "l"(source));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `pending` of this thread's commit groups are still in flight.
template <int pending> __device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}
