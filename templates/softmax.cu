// Softmax over each row of a rows x cols matrix, as a tunable template:
//   out[r][c] = exp(in[r][c] - max_r) / sum over c' of exp(in[r][c'] - max_r)
// Element type: float, or __nv_bfloat16 when the spec compiles with -DSOFTMAX_BF16 (arithmetic stays fp32).
// Every parameter is a macro, so the template parameters carry k-prefixed names.
//   ROW_THREADS     threads that share one row: 32 is a warp per row, more spans warps (combined in shared memory)
//   ROWS_PER_BLOCK  rows per thread block (block = ROW_THREADS * ROWS_PER_BLOCK threads)
//   VEC             elements per vector access
//   CACHE_ROW       true: the row is read once into registers (ROW_ITEMS vectors per thread), the minimum traffic;
//                   false: one streaming pass keeps an online max and sum, a second pass re-reads the row (usually
//                   from L2) and writes the result
//   UNROLL          streaming passes only: vectors each thread loads before using any of them, so several loads
//                   are in flight per thread; the online statistics are rescaled once per such chunk
// cols must be a multiple of VEC. A cached row need not be a multiple of ROW_THREADS * VEC: ROW_ITEMS is rounded
// up, and a thread's last item may lie past the row (cols 4000 or 14336; issue 30): it is neither loaded nor
// stored and counts as minus infinity (nothing) in the statistics. Only the last item can lie past the row, so the
// check costs one comparison per row and thread, and none where cols is a multiple.
#ifdef SOFTMAX_BF16
#include "common/element_16bit.cuh"
using Element = __nv_bfloat16;
#else
#include "common/element.cuh"
using Element = float;
#endif
#include "common/warp_reduce.cuh"

// NVRTC has no <cmath>: negative infinity from its bit pattern.
#define NEGATIVE_INFINITY __int_as_float(0xff800000)

template <int kWidth> using Pack = VectorOf<Element, kWidth>;

template <bool kMax> __device__ __forceinline__ float combine(float a, float b) { return kMax ? fmaxf(a, b) : a + b; }

// Combines one value per thread over the kRowThreads threads of a row; every thread of the row gets the result.
// Every thread of the block must call it (it synchronises when a row spans several warps).
template <int kRowThreads, bool kMax>
__device__ __forceinline__ float row_reduce(float value, float* row_scratch) {
  value = warp_all_reduce(value, combine<kMax>);
  if constexpr (kRowThreads > 32) {
    constexpr int kWarps = kRowThreads / 32;
    __syncthreads();  // the previous reduction's readers are done with the scratch
    if ((threadIdx.x & 31) == 0) row_scratch[(threadIdx.x % kRowThreads) / 32] = value;
    __syncthreads();
    value = row_scratch[0];
#pragma unroll
    for (int warp = 1; warp < kWarps; ++warp) value = combine<kMax>(value, row_scratch[warp]);
  }
  return value;
}

// Folds a chunk of values into the running (max, sum) of the online softmax statistics.
__device__ __forceinline__ void fold_chunk(float chunk_max, float chunk_sum_at_chunk_max, float& thread_max,
                                           float& thread_sum) {
  const float new_max = fmaxf(thread_max, chunk_max);
  const float old_scale = thread_max == NEGATIVE_INFINITY ? 0.0f : __expf(thread_max - new_max);
  thread_sum = thread_sum * old_scale + chunk_sum_at_chunk_max * __expf(chunk_max - new_max);
  thread_max = new_max;
}

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kCacheRow, int kRowItems, int kUnroll>
__global__ void __launch_bounds__(kRowThreads * kRowsPerBlock)
    softmax(int rows, int cols, const Element* __restrict__ input, Element* __restrict__ output) {
  using Vector = Pack<kVec>;
  __shared__ float scratch[kRowsPerBlock][kRowThreads > 32 ? kRowThreads / 32 : 1];
  const int row_in_block = threadIdx.x / kRowThreads;
  const int thread_in_row = threadIdx.x % kRowThreads;
  const long long row = (long long)blockIdx.x * kRowsPerBlock + row_in_block;
  const bool row_exists = row < rows;  // threads of a missing row still take part in the block's barriers
  const int row_vectors = cols / kVec;
  const Vector* in = reinterpret_cast<const Vector*>(input + row * cols);
  Vector* out = reinterpret_cast<Vector*>(output + row * cols);
  float* row_scratch = scratch[row_in_block];

  if constexpr (kCacheRow) {
    float values[kRowItems][kVec];
    float thread_max = NEGATIVE_INFINITY;
    auto in_row = [&](int item) { return item + 1 < kRowItems || thread_in_row + item * kRowThreads < row_vectors; };
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      Vector loaded;
      if (row_exists && in_row(item)) loaded = in[thread_in_row + item * kRowThreads];
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        // Past the row: minus infinity, which the max ignores and whose exponential adds nothing to the sum.
        values[item][lane] = !row_exists ? 0.0f : in_row(item) ? to_float(loaded.lane[lane]) : NEGATIVE_INFINITY;
        thread_max = fmaxf(thread_max, values[item][lane]);
      }
    }
    const float row_max = row_reduce<kRowThreads, true>(thread_max, row_scratch);
    float thread_sum = 0.0f;
#pragma unroll
    for (int item = 0; item < kRowItems; ++item)
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        values[item][lane] = __expf(values[item][lane] - row_max);
        thread_sum += values[item][lane];
      }
    const float inverse_sum = 1.0f / row_reduce<kRowThreads, false>(thread_sum, row_scratch);
    if (!row_exists) return;
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      if (!in_row(item)) continue;
      Vector result;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) result.lane[lane] = from_float<Element>(values[item][lane] * inverse_sum);
      out[thread_in_row + item * kRowThreads] = result;
    }
  } else {
    // Online softmax statistics: kUnroll vectors are loaded before any is used, then folded into the running
    // (max, sum) with one rescale per chunk.
    float thread_max = NEGATIVE_INFINITY;
    float thread_sum = 0.0f;
    if (row_exists) {
      int index = thread_in_row;
      for (; index + (kUnroll - 1) * kRowThreads < row_vectors; index += kUnroll * kRowThreads) {
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
      for (; index < row_vectors; index += kRowThreads) {
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
    const float row_max = row_reduce<kRowThreads, true>(thread_max, row_scratch);
    const float scaled_sum = thread_max == NEGATIVE_INFINITY ? 0.0f : thread_sum * __expf(thread_max - row_max);
    const float inverse_sum = 1.0f / row_reduce<kRowThreads, false>(scaled_sum, row_scratch);
    if (!row_exists) return;
    int index = thread_in_row;
    for (; index + (kUnroll - 1) * kRowThreads < row_vectors; index += kUnroll * kRowThreads) {
      Vector loaded[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) loaded[u] = in[index + u * kRowThreads];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        Vector result;
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane)
          result.lane[lane] = from_float<Element>(__expf(to_float(loaded[u].lane[lane]) - row_max) * inverse_sum);
        out[index + u * kRowThreads] = result;
      }
    }
    for (; index < row_vectors; index += kRowThreads) {
      const Vector loaded = in[index];
      Vector result;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) result.lane[lane] = from_float<Element>(__expf(to_float(loaded.lane[lane]) - row_max) * inverse_sum);
      out[index] = result;
    }
  }
}
