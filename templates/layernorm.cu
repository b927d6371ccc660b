// Layer normalisation over each row of a rows x cols fp32 matrix, as a tunable template:
//   out[r][c] = (in[r][c] - mean_r) / sqrt(variance_r + epsilon) * gamma[c] + beta[c]
// Every parameter is a macro, so the template parameters carry k-prefixed names.
//   ROW_THREADS     threads that share one row (32: a warp per row; more: warps combined in shared memory)
//   ROWS_PER_BLOCK  rows per thread block
//   VEC             floats per vector access
//   CACHE_ROW       true: the row is read once into registers (ROW_ITEMS vectors per thread), the minimum traffic;
//                   false: statistics from streaming passes, then a last pass re-reads the row (usually from L2)
//   STATS           STATS_two_pass: the mean first, then the sum of squared deviations (robust; one more pass over
//                   the row when it is not cached); STATS_sum_of_squares: sum and sum of squares together,
//                   variance = E[x^2] - mean^2 (one pass, loses accuracy when |mean| >> deviation)
//   SHARED_ROW      the row is read once from memory into dynamic shared memory (COLS floats per row; up to 227 KiB
//                   on sm_90), then statistics and output come from there: the minimum traffic for rows too long
//                   for registers. Each thread reads back only the vectors it wrote, so no extra barrier is needed.
//   UNROLL          streaming passes only: vectors each thread loads before using any of them, so several loads
//                   are in flight per thread
// cols must be a multiple of VEC.

template <int kWidth> struct alignas(4 * kWidth) FloatPack { float lane[kWidth]; };

// Sums one value per thread over the kRowThreads threads of a row; every thread of the row gets the total.
// Every thread of the block must call it (it synchronises when a row spans several warps).
template <int kRowThreads>
__device__ __forceinline__ float row_sum(float value, float* row_scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  if constexpr (kRowThreads > 32) {
    constexpr int kWarps = kRowThreads / 32;
    __syncthreads();  // the previous reduction's readers are done with the scratch
    if ((threadIdx.x & 31) == 0) row_scratch[(threadIdx.x % kRowThreads) / 32] = value;
    __syncthreads();
    value = row_scratch[0];
#pragma unroll
    for (int warp = 1; warp < kWarps; ++warp) value += row_scratch[warp];
  }
  return value;
}

// Calls visit(index, vector) for every vector of the row that this thread owns, loading kUnroll vectors before
// visiting any of them.
template <int kRowThreads, int kUnroll, typename Vector, typename Visit>
__device__ __forceinline__ void for_each_vector(const Vector* __restrict__ in, int thread_in_row, int row_vectors,
                                                Visit visit) {
  int index = thread_in_row;
  for (; index + (kUnroll - 1) * kRowThreads < row_vectors; index += kUnroll * kRowThreads) {
    Vector loaded[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) loaded[u] = in[index + u * kRowThreads];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) visit(index + u * kRowThreads, loaded[u]);
  }
  for (; index < row_vectors; index += kRowThreads) visit(index, in[index]);
}

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kCacheRow, bool kTwoPass, int kRowItems, int kUnroll,
          bool kSharedRow>
__global__ void __launch_bounds__(kRowThreads * kRowsPerBlock)
    layernorm(int rows, int cols, float epsilon, const float* __restrict__ input, const float* __restrict__ gamma,
              const float* __restrict__ beta, float* __restrict__ output) {
  using Vector = FloatPack<kVec>;
  __shared__ float scratch[kRowsPerBlock][kRowThreads > 32 ? kRowThreads / 32 : 1];
  const int row_in_block = threadIdx.x / kRowThreads;
  const int thread_in_row = threadIdx.x % kRowThreads;
  const long long row = (long long)blockIdx.x * kRowsPerBlock + row_in_block;
  const bool row_exists = row < rows;  // threads of a missing row still take part in the block's barriers
  const int row_vectors = cols / kVec;
  const Vector* in = reinterpret_cast<const Vector*>(input + row * cols);
  const Vector* scale = reinterpret_cast<const Vector*>(gamma);
  const Vector* shift = reinterpret_cast<const Vector*>(beta);
  Vector* out = reinterpret_cast<Vector*>(output + row * cols);
  float* row_scratch = scratch[row_in_block];
  const float inverse_cols = 1.0f / cols;

  float mean = 0.0f;
  float inverse_deviation = 0.0f;
  if constexpr (kCacheRow) {
    float values[kRowItems][kVec];
    float thread_sum = 0.0f;
    float thread_squares = 0.0f;
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      Vector loaded;
      if (row_exists) loaded = in[thread_in_row + item * kRowThreads];
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        values[item][lane] = row_exists ? loaded.lane[lane] : 0.0f;
        thread_sum += values[item][lane];
        if (!kTwoPass) thread_squares = fmaf(values[item][lane], values[item][lane], thread_squares);
      }
    }
    mean = row_sum<kRowThreads>(thread_sum, row_scratch) * inverse_cols;
    float variance;
    if constexpr (kTwoPass) {
      float thread_deviations = 0.0f;
#pragma unroll
      for (int item = 0; item < kRowItems; ++item)
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) {
          const float deviation = values[item][lane] - mean;
          thread_deviations = fmaf(deviation, deviation, thread_deviations);
        }
      variance = row_sum<kRowThreads>(thread_deviations, row_scratch) * inverse_cols;
    } else {
      variance = fmaxf(row_sum<kRowThreads>(thread_squares, row_scratch) * inverse_cols - mean * mean, 0.0f);
    }
    inverse_deviation = rsqrtf(variance + epsilon);
    if (!row_exists) return;
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      const int index = thread_in_row + item * kRowThreads;
      const Vector g = scale[index];
      const Vector b = shift[index];
      Vector result;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane)
        result.lane[lane] = fmaf((values[item][lane] - mean) * inverse_deviation, g.lane[lane], b.lane[lane]);
      out[index] = result;
    }
  } else if constexpr (kSharedRow) {
    extern __shared__ float4 dynamic_shared[];  // float4: 16-byte alignment for every vector width
    Vector* row_copy = reinterpret_cast<Vector*>(reinterpret_cast<float*>(dynamic_shared) + (long long)row_in_block * cols);
    float thread_sum = 0.0f;
    float thread_squares = 0.0f;
    if (row_exists) {
      for_each_vector<kRowThreads, kUnroll>(in, thread_in_row, row_vectors, [&](int index, const Vector& loaded) {
        row_copy[index] = loaded;
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) {
          thread_sum += loaded.lane[lane];
          if (!kTwoPass) thread_squares = fmaf(loaded.lane[lane], loaded.lane[lane], thread_squares);
        }
      });
    }
    mean = row_sum<kRowThreads>(thread_sum, row_scratch) * inverse_cols;
    float variance;
    if constexpr (kTwoPass) {
      float thread_deviations = 0.0f;
      if (row_exists) {
        for (int index = thread_in_row; index < row_vectors; index += kRowThreads) {
          const Vector loaded = row_copy[index];
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane) {
            const float deviation = loaded.lane[lane] - mean;
            thread_deviations = fmaf(deviation, deviation, thread_deviations);
          }
        }
      }
      variance = row_sum<kRowThreads>(thread_deviations, row_scratch) * inverse_cols;
    } else {
      variance = fmaxf(row_sum<kRowThreads>(thread_squares, row_scratch) * inverse_cols - mean * mean, 0.0f);
    }
    inverse_deviation = rsqrtf(variance + epsilon);
    if (!row_exists) return;
    for (int index = thread_in_row; index < row_vectors; index += kRowThreads) {
      const Vector loaded = row_copy[index];
      const Vector g = scale[index];
      const Vector b = shift[index];
      Vector result;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane)
        result.lane[lane] = fmaf((loaded.lane[lane] - mean) * inverse_deviation, g.lane[lane], b.lane[lane]);
      out[index] = result;
    }
  } else {
    float thread_sum = 0.0f;
    float thread_squares = 0.0f;
    if (row_exists) {
      for_each_vector<kRowThreads, kUnroll>(in, thread_in_row, row_vectors, [&](int, const Vector& loaded) {
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) {
          thread_sum += loaded.lane[lane];
          if (!kTwoPass) thread_squares = fmaf(loaded.lane[lane], loaded.lane[lane], thread_squares);
        }
      });
    }
    mean = row_sum<kRowThreads>(thread_sum, row_scratch) * inverse_cols;
    float variance;
    if constexpr (kTwoPass) {
      float thread_deviations = 0.0f;
      if (row_exists) {
        for_each_vector<kRowThreads, kUnroll>(in, thread_in_row, row_vectors, [&](int, const Vector& loaded) {
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane) {
            const float deviation = loaded.lane[lane] - mean;
            thread_deviations = fmaf(deviation, deviation, thread_deviations);
          }
        });
      }
      variance = row_sum<kRowThreads>(thread_deviations, row_scratch) * inverse_cols;
    } else {
      variance = fmaxf(row_sum<kRowThreads>(thread_squares, row_scratch) * inverse_cols - mean * mean, 0.0f);
    }
    inverse_deviation = rsqrtf(variance + epsilon);
    if (!row_exists) return;
    for_each_vector<kRowThreads, kUnroll>(in, thread_in_row, row_vectors, [&](int index, const Vector& loaded) {
      const Vector g = scale[index];
      const Vector b = shift[index];
      Vector result;
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane)
        result.lane[lane] = fmaf((loaded.lane[lane] - mean) * inverse_deviation, g.lane[lane], b.lane[lane]);
      out[index] = result;
    });
  }
}
