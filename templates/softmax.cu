// Softmax over each row of a rows x cols matrix, as a tunable template:
//   out[r][c] = exp(in[r][c] - max_r) / sum over c' of exp(in[r][c'] - max_r)
// Element type: float, or __nv_bfloat16 when the spec compiles with -DSOFTMAX_BF16 (arithmetic stays fp32).
// Every parameter is a macro, so the template parameters carry k-prefixed names.
//   ROW_THREADS     threads of a block that share one row: 32 is a warp per row, more spans warps (combined in
//                   shared memory)
//   ROWS_PER_BLOCK  rows per thread block (block = ROW_THREADS * ROWS_PER_BLOCK threads)
//   VEC             elements per vector access
//   CLUSTER         blocks of a thread-block cluster that split each row into slices of cols / CLUSTER (sm_90;
//                   1: a row stays in one block); statistics meet in distributed shared memory (row_reduce.cuh)
//   CACHE_ROW       true: the slice is read once into registers (ROW_ITEMS vectors per thread; needs the slice to
//                   be a multiple of ROW_THREADS * VEC), the minimum traffic; false: one streaming pass keeps an
//                   online max and sum, a second pass re-reads the slice (usually from L2) and writes the result
//   UNROLL          streaming passes only: vectors each thread loads before using any of them, so several loads
//                   are in flight per thread; the online statistics are rescaled once per such chunk
// cols must be a multiple of CLUSTER * VEC.
#ifdef SOFTMAX_BF16
#include <cuda_bf16.h>
using Element = __nv_bfloat16;
__device__ __forceinline__ float to_float(Element value) { return __bfloat162float(value); }
__device__ __forceinline__ Element from_float(float value) { return __float2bfloat16(value); }
#else
using Element = float;
__device__ __forceinline__ float to_float(Element value) { return value; }
__device__ __forceinline__ Element from_float(float value) { return value; }
#endif

// NVRTC has no <cmath>: negative infinity from its bit pattern.
#define NEGATIVE_INFINITY __int_as_float(0xff800000)

template <int kWidth> struct alignas(sizeof(Element) * kWidth) Pack { Element lane[kWidth]; };

#include "row_reduce.cuh"

__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ float maximum(float a, float b) { return fmaxf(a, b); }

// Merges two online softmax statistics (max, sum of exp(x - max)) into those of the union of their elements.
// Commutative, so every lane of a warp shuffle ends with the same value.
__device__ __forceinline__ FloatPair merge_statistics(FloatPair a, FloatPair b) {
  const float new_max = fmaxf(a.first, b.first);
  if (new_max == NEGATIVE_INFINITY) return {new_max, 0.0f};  // both empty: avoid -inf - -inf
  return {new_max, a.second * __expf(a.first - new_max) + b.second * __expf(b.first - new_max)};
}

// Folds a chunk of values into the running (max, sum) of the online softmax statistics.
__device__ __forceinline__ void fold_chunk(float chunk_max, float chunk_sum_at_chunk_max, float& thread_max,
                                           float& thread_sum) {
  const float new_max = fmaxf(thread_max, chunk_max);
  const float old_scale = thread_max == NEGATIVE_INFINITY ? 0.0f : __expf(thread_max - new_max);
  thread_sum = thread_sum * old_scale + chunk_sum_at_chunk_max * __expf(chunk_max - new_max);
  thread_max = new_max;
}

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kCacheRow, int kRowItems, int kUnroll, int kCluster>
__global__ void __launch_bounds__(kRowThreads * kRowsPerBlock) ROW_CLUSTER_DIMS
    softmax(int rows, int cols, const Element* __restrict__ input, Element* __restrict__ output) {
  using Vector = Pack<kVec>;
  const int row_in_block = threadIdx.x / kRowThreads;
  const int thread_in_row = threadIdx.x % kRowThreads;
  const long long row = (long long)(blockIdx.x / kCluster) * kRowsPerBlock + row_in_block;
  // Threads of a missing row still take part in the block's and the cluster's barriers, so nobody returns early.
  const bool row_exists = row < rows;
  const int slice_cols = cols / kCluster;
  const int slice_vectors = slice_cols / kVec;
  const long long slice_begin = row * cols + (long long)cluster_rank<kCluster>() * slice_cols;
  const Vector* in = reinterpret_cast<const Vector*>(input + slice_begin);
  Vector* out = reinterpret_cast<Vector*>(output + slice_begin);

  if constexpr (kCacheRow) {
    __shared__ RowScratch<float, kRowThreads> max_scratch[kRowsPerBlock];
    __shared__ RowScratch<float, kRowThreads> sum_scratch[kRowsPerBlock];
    float values[kRowItems][kVec];
    float thread_max = NEGATIVE_INFINITY;
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      Vector loaded;
      if (row_exists) loaded = in[thread_in_row + item * kRowThreads];
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        values[item][lane] = row_exists ? to_float(loaded.lane[lane]) : 0.0f;
        thread_max = fmaxf(thread_max, values[item][lane]);
      }
    }
    const float row_max = row_reduce<kRowThreads, kCluster>(thread_max, maximum, max_scratch[row_in_block]);
    float thread_sum = 0.0f;
#pragma unroll
    for (int item = 0; item < kRowItems; ++item)
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        values[item][lane] = __expf(values[item][lane] - row_max);
        thread_sum += values[item][lane];
      }
    const float inverse_sum = 1.0f / row_reduce<kRowThreads, kCluster>(thread_sum, add, sum_scratch[row_in_block]);
    cluster_arrive<kCluster>();  // this block is done reading its neighbours' slots
    if (row_exists) {
#pragma unroll
      for (int item = 0; item < kRowItems; ++item) {
        Vector result;
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) result.lane[lane] = from_float(values[item][lane] * inverse_sum);
        out[thread_in_row + item * kRowThreads] = result;
      }
    }
  } else {
    // Online softmax statistics: kUnroll vectors are loaded before any is used, then folded into the running
    // (max, sum) with one rescale per chunk; one merged reduction then gives the row's (max, sum).
    __shared__ RowScratch<FloatPair, kRowThreads> statistics_scratch[kRowsPerBlock];
    float thread_max = NEGATIVE_INFINITY;
    float thread_sum = 0.0f;
    if (row_exists) {
      int index = thread_in_row;
      for (; index + (kUnroll - 1) * kRowThreads < slice_vectors; index += kUnroll * kRowThreads) {
        Vector loaded[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) loaded[u] = in[index + u * kRowThreads];
        float chunk_max = NEGATIVE_INFINITY;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane) chunk_max = fmaxf(chunk_max, to_float(loaded[u].lane[lane]));
        float chunk_sum = 0.0f;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane) chunk_sum += __expf(to_float(loaded[u].lane[lane]) - chunk_max);
        fold_chunk(chunk_max, chunk_sum, thread_max, thread_sum);
      }
      for (; index < slice_vectors; index += kRowThreads) {
        const Vector loaded = in[index];
        float chunk_max = NEGATIVE_INFINITY;
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) chunk_max = fmaxf(chunk_max, to_float(loaded.lane[lane]));
        float chunk_sum = 0.0f;
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) chunk_sum += __expf(to_float(loaded.lane[lane]) - chunk_max);
        fold_chunk(chunk_max, chunk_sum, thread_max, thread_sum);
      }
    }
    const FloatPair statistics = row_reduce<kRowThreads, kCluster>(FloatPair{thread_max, thread_sum}, merge_statistics,
                                                                   statistics_scratch[row_in_block]);
    const float row_max = statistics.first;
    const float inverse_sum = 1.0f / statistics.second;
    cluster_arrive<kCluster>();  // this block is done reading its neighbours' slots
    if (row_exists) {
      int index = thread_in_row;
      for (; index + (kUnroll - 1) * kRowThreads < slice_vectors; index += kUnroll * kRowThreads) {
        Vector loaded[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) loaded[u] = in[index + u * kRowThreads];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          Vector result;
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane)
            result.lane[lane] = from_float(__expf(to_float(loaded[u].lane[lane]) - row_max) * inverse_sum);
          out[index + u * kRowThreads] = result;
        }
      }
      for (; index < slice_vectors; index += kRowThreads) {
        const Vector loaded = in[index];
        Vector result;
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane)
          result.lane[lane] = from_float(__expf(to_float(loaded.lane[lane]) - row_max) * inverse_sum);
        out[index] = result;
      }
    }
  }
  cluster_wait<kCluster>();  // nobody still reads this block's slots when it leaves
}
