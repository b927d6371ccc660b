// Layer normalisation over each row of a rows x cols matrix, as a tunable template:
//   out[r][c] = (in[r][c] - mean_r) / sqrt(variance_r + epsilon) * gamma[c] + beta[c]
// Element type (input, gamma, beta, output): float, or __nv_bfloat16 when the spec compiles with -DLAYERNORM_BF16
// (statistics and arithmetic stay fp32).
// Every parameter is a macro, so the template parameters carry k-prefixed names.
//   ROW_THREADS     threads of a block that share one row (32: a warp per row; more: warps combined in shared memory)
//   ROWS_PER_BLOCK  rows per thread block
//   VEC             elements per vector access
//   CLUSTER         blocks of a thread-block cluster that split each row into slices of cols / CLUSTER (sm_90;
//                   1: a row stays in one block); statistics meet in distributed shared memory (row_reduce.cuh)
//   CACHE_ROW       true: the slice is read once into registers (ROW_ITEMS vectors per thread), the minimum traffic;
//                   false: statistics from streaming passes, then a last pass re-reads the slice (usually from L2)
//   SHARED_ROW      the slice is read once from memory into dynamic shared memory, then statistics and output come
//                   from there: the minimum traffic for slices too long for registers. Each thread reads back only
//                   the vectors it wrote, so no extra barrier is needed.
//   STATS           STATS_two_pass: the mean first, then the sum of squared deviations (robust; one more pass over
//                   the slice); STATS_sum_of_squares: sum and sum of squares in one reduction,
//                   variance = E[x^2] - mean^2 (loses accuracy when |mean| >> deviation)
//   UNROLL          passes over memory or shared memory: vectors each thread loads before using any of them, so
//                   several loads are in flight per thread
// cols must be a multiple of CLUSTER * VEC.
#ifdef LAYERNORM_BF16
#include <cuda_bf16.h>
using Element = __nv_bfloat16;
__device__ __forceinline__ float to_float(Element value) { return __bfloat162float(value); }
__device__ __forceinline__ Element from_float(float value) { return __float2bfloat16(value); }
#else
using Element = float;
__device__ __forceinline__ float to_float(Element value) { return value; }
__device__ __forceinline__ Element from_float(float value) { return value; }
#endif

#include "row_reduce.cuh"

template <int kWidth> struct alignas(sizeof(Element) * kWidth) Pack { Element lane[kWidth]; };

// Calls visit(index, vector) for every vector of the slice that this thread owns, loading kUnroll vectors before
// visiting any of them.
template <int kRowThreads, int kUnroll, typename Vector, typename Visit>
__device__ __forceinline__ void for_each_vector(const Vector* __restrict__ source, int thread_in_row, int slice_vectors,
                                                Visit visit) {
  int index = thread_in_row;
  for (; index + (kUnroll - 1) * kRowThreads < slice_vectors; index += kUnroll * kRowThreads) {
    Vector loaded[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) loaded[u] = source[index + u * kRowThreads];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) visit(index + u * kRowThreads, loaded[u]);
  }
  for (; index < slice_vectors; index += kRowThreads) visit(index, source[index]);
}

// Calls visit(index, lanes as floats) for every vector of the slice that this thread owns, from wherever the
// slice is kept: registers (CACHE_ROW), or source (the shared copy, or memory again).
template <int kRowThreads, int kUnroll, bool kCacheRow, int kRowItems, int kVec, typename Vector, typename Visit>
__device__ __forceinline__ void for_each_owned(const float (&cached)[kRowItems][kVec], const Vector* source,
                                               int thread_in_row, int slice_vectors, Visit visit) {
  if constexpr (kCacheRow) {
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) visit(thread_in_row + item * kRowThreads, cached[item]);
  } else {
    for_each_vector<kRowThreads, kUnroll>(source, thread_in_row, slice_vectors, [&](int index, const Vector& loaded) {
      float lanes[kVec];
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) lanes[lane] = to_float(loaded.lane[lane]);
      visit(index, lanes);
    });
  }
}

__device__ __forceinline__ FloatPair add_pairs(FloatPair a, FloatPair b) { return {a.first + b.first, a.second + b.second}; }
__device__ __forceinline__ float add(float a, float b) { return a + b; }

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kCacheRow, bool kTwoPass, int kRowItems, int kUnroll,
          bool kSharedRow, int kCluster>
__global__ void __launch_bounds__(kRowThreads * kRowsPerBlock) ROW_CLUSTER_DIMS
    layernorm(int rows, int cols, float epsilon, const Element* __restrict__ input,
              const Element* __restrict__ gamma, const Element* __restrict__ beta, Element* __restrict__ output) {
  using Vector = Pack<kVec>;
  __shared__ RowScratch<FloatPair, kRowThreads> totals_scratch[kRowsPerBlock];
  __shared__ RowScratch<float, kRowThreads> deviations_scratch[kTwoPass ? kRowsPerBlock : 1];
  const int row_in_block = threadIdx.x / kRowThreads;
  const int thread_in_row = threadIdx.x % kRowThreads;
  const long long row = (long long)(blockIdx.x / kCluster) * kRowsPerBlock + row_in_block;
  // Threads of a missing row still take part in the block's and the cluster's barriers, so nobody returns early.
  const bool row_exists = row < rows;
  const int slice_cols = cols / kCluster;
  const int slice_vectors = slice_cols / kVec;
  const long long slice_begin = (long long)cluster_rank<kCluster>() * slice_cols;
  const Vector* in = reinterpret_cast<const Vector*>(input + row * cols + slice_begin);
  const Vector* scale = reinterpret_cast<const Vector*>(gamma + slice_begin);
  const Vector* shift = reinterpret_cast<const Vector*>(beta + slice_begin);
  Vector* out = reinterpret_cast<Vector*>(output + row * cols + slice_begin);
  const float inverse_cols = 1.0f / cols;

  float cached[kRowItems][kVec];  // CACHE_ROW only
  extern __shared__ float4 dynamic_shared[];  // SHARED_ROW only; float4: 16-byte alignment for every vector width
  Vector* slice_copy = reinterpret_cast<Vector*>(dynamic_shared) + (long long)row_in_block * slice_vectors;
  // Where the passes after the first read the slice: the shared copy, or memory again.
  const Vector* source = kSharedRow ? slice_copy : in;

  FloatPair thread_totals{0.0f, 0.0f};  // sum, and sum of squares for STATS_sum_of_squares
  auto accumulate = [&](float value) {
    thread_totals.first += value;
    if (!kTwoPass) thread_totals.second = fmaf(value, value, thread_totals.second);
  };
  if constexpr (kCacheRow) {
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      Vector loaded;
      if (row_exists) loaded = in[thread_in_row + item * kRowThreads];
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        cached[item][lane] = row_exists ? to_float(loaded.lane[lane]) : 0.0f;
        accumulate(cached[item][lane]);
      }
    }
  } else if (row_exists) {
    for_each_vector<kRowThreads, kUnroll>(in, thread_in_row, slice_vectors, [&](int index, const Vector& loaded) {
      if constexpr (kSharedRow) slice_copy[index] = loaded;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) accumulate(to_float(loaded.lane[lane]));
    });
  }
  const FloatPair totals = row_reduce<kRowThreads, kCluster>(thread_totals, add_pairs, totals_scratch[row_in_block]);
  const float mean = totals.first * inverse_cols;
  float variance;
  if constexpr (kTwoPass) {
    float thread_deviations = 0.0f;
    if (row_exists) {
      for_each_owned<kRowThreads, kUnroll, kCacheRow>(cached, source, thread_in_row, slice_vectors,
                                                      [&](int, const float (&lanes)[kVec]) {
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) {
          const float deviation = lanes[lane] - mean;
          thread_deviations = fmaf(deviation, deviation, thread_deviations);
        }
      });
    }
    variance = row_reduce<kRowThreads, kCluster>(thread_deviations, add, deviations_scratch[row_in_block]) * inverse_cols;
  } else {
    variance = fmaxf(totals.second * inverse_cols - mean * mean, 0.0f);
  }
  cluster_arrive<kCluster>();  // this block is done reading its neighbours' slots
  const float inverse_deviation = rsqrtf(variance + epsilon);
  if (row_exists) {
    for_each_owned<kRowThreads, kUnroll, kCacheRow>(cached, source, thread_in_row, slice_vectors,
                                                    [&](int index, const float (&lanes)[kVec]) {
      const Vector g = scale[index];
      const Vector b = shift[index];
      Vector result;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane)
        result.lane[lane] = from_float(fmaf((lanes[lane] - mean) * inverse_deviation, to_float(g.lane[lane]), to_float(b.lane[lane])));
      out[index] = result;
    });
  }
  cluster_wait<kCluster>();  // nobody still reads this block's slots when it leaves
}
