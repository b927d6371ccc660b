// The layernorm path without PERSISTENT: each block (each cluster with CLUSTER > 1) normalises one group of
// ROWS_PER_BLOCK rows and exits. The slice of a row is kept in registers (CACHE_ROW), in shared memory
// (SHARED_ROW), or read again for each pass. kCentred false: RMSNorm (no mean subtracted, no beta; layernorm.cu).
#pragma once

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kCacheRow, bool kTwoPass, int kRowItems, int kUnroll,
          bool kSharedRow, int kCluster, bool kResidual, bool kCentred>
__device__ __forceinline__ void layernorm_row_groups(int rows, int cols, float epsilon,
                                                     const Element* __restrict__ input,
                                                     const Element* __restrict__ residual,
                                                     const Element* __restrict__ gamma,
                                                     const Element* __restrict__ beta, Element* __restrict__ sum,
                                                     Element* __restrict__ output) {
  using Vector = Pack<kVec>;
  __shared__ RowScratch<FloatPair, kRowThreads, kCluster> totals_scratch[kRowsPerBlock];
  __shared__ RowScratch<float, kRowThreads, kCluster> deviations_scratch[kTwoPass ? kRowsPerBlock : 1];
  const int row_in_block = threadIdx.x / kRowThreads;
  const int thread_in_row = threadIdx.x % kRowThreads;
  const long long row = (long long)(blockIdx.x / kCluster) * kRowsPerBlock + row_in_block;
  // Threads of a missing row still take part in the block's and the cluster's barriers, so nobody returns early.
  const bool row_exists = row < rows;
  cluster_arrive<kCluster>();  // this block runs: neighbours may write its reduction slots (common/row_reduce.cuh)
  const int slice_cols = cols / kCluster;
  const int slice_vectors = slice_cols / kVec;
  const long long slice_begin = (long long)cluster_rank<kCluster>() * slice_cols;
  const Vector* in = reinterpret_cast<const Vector*>(input + row * cols + slice_begin);
  const Vector* scale = reinterpret_cast<const Vector*>(gamma + slice_begin);
  const Vector* shift = kCentred ? reinterpret_cast<const Vector*>(beta + slice_begin) : nullptr;
  Vector* out = reinterpret_cast<Vector*>(output + row * cols + slice_begin);
  // With a residual: its slice, and where the sum goes (the streaming passes after the first read it back).
  const Vector* added = nullptr;
  Vector* summed = nullptr;
  if constexpr (kResidual) {
    added = reinterpret_cast<const Vector*>(residual + row * cols + slice_begin);
    summed = reinterpret_cast<Vector*>(sum + row * cols + slice_begin);
  }
  const float inverse_cols = 1.0f / cols;

  float cached[kRowItems][kVec];  // CACHE_ROW only
  extern __shared__ float4 dynamic_shared[];  // SHARED_ROW only; float4: 16-byte alignment for every vector width
  Vector* slice_copy = reinterpret_cast<Vector*>(dynamic_shared) + (long long)row_in_block * slice_vectors;
  // Where the passes after the first read the slice: the shared copy, or memory again (the sum, with a residual).
  const Vector* source = kSharedRow ? slice_copy : (kResidual ? summed : in);

  FloatPair thread_totals{0.0f, 0.0f};  // sum, and sum of squares for STATS_sum_of_squares
  auto accumulate = [&](float value) {
    thread_totals.first += value;
    if (!kTwoPass) thread_totals.second = fmaf(value, value, thread_totals.second);
  };
  if constexpr (kCacheRow) {
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      const int index = thread_in_row + item * kRowThreads;
      const bool present = row_exists && in_slice<kRowItems>(item, index, slice_vectors);
      Vector loaded;
      if (present) {
        loaded = in[index];
        if constexpr (kResidual) {
          loaded = add_vectors(loaded, added[index]);
          summed[index] = loaded;
        }
      }
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        cached[item][lane] = present ? to_float(loaded.lane[lane]) : 0.0f;
        accumulate(cached[item][lane]);
      }
    }
  } else if (row_exists) {
    for_each_vector<kRowThreads, kUnroll, kResidual>(in, added, thread_in_row, slice_vectors,
                                                     [&](int index, const Vector& loaded) {
      if constexpr (kResidual) summed[index] = loaded;
      if constexpr (kSharedRow) slice_copy[index] = loaded;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) accumulate(to_float(loaded.lane[lane]));
    });
  }
  cluster_wait<kCluster>();  // every block of the cluster runs
  const FloatPair totals = row_reduce<kRowThreads, kCluster>(thread_totals, add_pairs, totals_scratch[row_in_block]);
  const float mean = kCentred ? totals.first * inverse_cols : 0.0f;
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
  const float inverse_deviation = rsqrtf(variance + epsilon);
  if (row_exists) {
    for_each_owned<kRowThreads, kUnroll, kCacheRow>(cached, source, thread_in_row, slice_vectors,
                                                    [&](int index, const float (&lanes)[kVec]) {
      const Vector g = scale[index];
      Vector b;
      if constexpr (kCentred) b = shift[index];
      Vector result;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane)
        result.lane[lane] = from_float<Element>(fmaf((lanes[lane] - mean) * inverse_deviation, to_float(g.lane[lane]),
                                                     kCentred ? to_float(b.lane[lane]) : 0.0f));
      out[index] = result;
    });
  }
}
