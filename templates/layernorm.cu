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
//   PERSISTENT      CACHE_ROW only: grid-stride blocks (clusters) that loop over row groups, keeping their slice's
//                   gamma and beta for every row, and load the next group's slice into registers before reducing
//                   and storing the current one, so the SM's loads continue through the barriers and the stores
//                   (without it, a block that waits at a barrier or stores issues no loads); row groups after
//                   the first few come from a ticket counter (the row_counters argument), so faster clusters
//                   take more of them
//   AFFINE          PERSISTENT only: where gamma and beta live between rows: registers (loaded once), or L1/L2
//                   (read again for every row through the read-only cache)
//   STAGES          PERSISTENT only: 0, the next group's slice is prefetched into registers; 2 or more, slices
//                   are copied ahead into STAGES shared-memory buffers with cp.async (STAGES - 1 groups ahead)
//   COPY            STAGES >= 2: thread (every thread copies its vectors, cp.async) or bulk (one thread copies each
//                   row's slice with one TMA bulk copy completing on an mbarrier; sm_90)
//   STREAM          PERSISTENT only: matrix loads and stores carry the evict-first hint (ld/st .cs), so the
//                   input and output, each touched once, do not push gamma and beta out of the caches
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

// Matrix loads and stores with the evict-first (streaming) cache hint, for data touched exactly once.
template <typename Vector> __device__ __forceinline__ Vector load_streaming(const Vector* address) {
  Vector value;
  if constexpr (sizeof(Vector) == 16) {
    uint4 bits;
    asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w) : "l"(address));
    value = reinterpret_cast<const Vector&>(bits);
  } else if constexpr (sizeof(Vector) == 8) {
    uint2 bits;
    asm volatile("ld.global.cs.v2.u32 {%0, %1}, [%2];" : "=r"(bits.x), "=r"(bits.y) : "l"(address));
    value = reinterpret_cast<const Vector&>(bits);
  } else if constexpr (sizeof(Vector) == 4) {
    unsigned bits;
    asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(bits) : "l"(address));
    value = reinterpret_cast<const Vector&>(bits);
  } else {
    unsigned short bits;
    asm volatile("ld.global.cs.u16 %0, [%1];" : "=h"(bits) : "l"(address));
    value = reinterpret_cast<const Vector&>(bits);
  }
  return value;
}
template <typename Vector> __device__ __forceinline__ void store_streaming(Vector* address, const Vector& value) {
  if constexpr (sizeof(Vector) == 16) {
    const uint4 bits = reinterpret_cast<const uint4&>(value);
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(address), "r"(bits.x), "r"(bits.y), "r"(bits.z),
                 "r"(bits.w) : "memory");
  } else if constexpr (sizeof(Vector) == 8) {
    const uint2 bits = reinterpret_cast<const uint2&>(value);
    asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(address), "r"(bits.x), "r"(bits.y) : "memory");
  } else if constexpr (sizeof(Vector) == 4) {
    asm volatile("st.global.cs.u32 [%0], %1;" ::"l"(address), "r"(reinterpret_cast<const unsigned&>(value)) : "memory");
  } else {
    asm volatile("st.global.cs.u16 [%0], %1;" ::"l"(address), "h"(reinterpret_cast<const unsigned short&>(value))
                 : "memory");
  }
}

// Asynchronous copy of one vector from global to shared memory (cp.async, sm_80): 16-byte copies bypass L1.
__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

template <typename Vector> __device__ __forceinline__ void copy_async(Vector* shared_destination, const Vector* source) {
  static_assert(sizeof(Vector) == 4 || sizeof(Vector) == 8 || sizeof(Vector) == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned destination = shared_address(shared_destination);
  if constexpr (sizeof(Vector) == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(destination), "l"(source) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(destination), "l"(source), "n"(sizeof(Vector))
                 : "memory");
}

// PERSISTENT: each block (each cluster with CLUSTER > 1) keeps one column slice and walks the row groups
// group = cluster index, + clusters, ... The next group's slice is loaded into registers before the current one's
// reductions, so it is in flight while this block waits at barriers and stores. Every block of a cluster walks
// the same groups, so the cluster barriers inside row_reduce pair up. Reductions alternate between two scratch
// copies: the barrier of reduction i+1 is passed only after every block (and warp) has read reduction i's slots,
// so reduction i+2 may overwrite them.
// With kStages >= 2 the prefetch goes to shared memory instead (cp.async, kStages slices per row of the block,
// kStages - 1 groups ahead), which costs no registers and keeps more bytes in flight. Each thread copies, and
// later reads, only its own vectors, so the copies need the thread's own cp.async.wait_group and no barrier.
// kBulkCopy (sm_90): one thread copies each row's whole slice with one bulk copy (cp.async.bulk, the TMA unit)
// that completes on the stage's mbarrier, which every thread waits on. A stage is refilled one iteration after it
// was read, and the reduction barrier of that iteration (block or cluster) orders every thread's reads before it.
// Row groups are handed out at run time: a cluster's first kLookahead + 1 groups are fixed (cluster index,
// + clusters, ...), later ones are drawn from a ticket counter in global memory (row_counters[0]), so clusters
// that run faster take more rows instead of all waiting for the slowest (on the H200, 4096 x 32768: 92.2% ->
// 94.4% of the copy ceiling with 512 threads, scripts/layernorm_probe.cu). Rank 0's first thread draws the group
// of local iteration k + kLookahead + 1 during iteration k and writes it into every block's ring before the
// iteration's reduction barrier, which publishes it; the last cluster to finish resets the counters to zero
// (row_counters[1] counts finished clusters), so each launch starts from zero.
template <int kRowThreads, int kRowsPerBlock, int kVec, bool kTwoPass, int kRowItems, int kCluster,
          bool kAffineInRegisters, bool kStream, int kStages, bool kBulkCopy>
__device__ __forceinline__ void layernorm_persistent(int rows, int cols, float epsilon, const Element* __restrict__ input,
                                                     const Element* __restrict__ gamma, const Element* __restrict__ beta,
                                                     Element* __restrict__ output, int* __restrict__ row_counters) {
  using Vector = Pack<kVec>;
  __shared__ RowScratch<FloatPair, kRowThreads, kCluster> totals_scratch[2][kRowsPerBlock];
  __shared__ RowScratch<float, kRowThreads, kCluster> deviations_scratch[2][kTwoPass ? kRowsPerBlock : 1];
  const int row_in_block = threadIdx.x / kRowThreads;
  const int thread_in_row = threadIdx.x % kRowThreads;
  const long long groups = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const long long clusters = gridDim.x / kCluster;
  const int slice_cols = cols / kCluster;
  const long long slice_begin = (long long)cluster_rank<kCluster>() * slice_cols;
  const Vector* scale = reinterpret_cast<const Vector*>(gamma + slice_begin);
  const Vector* shift = reinterpret_cast<const Vector*>(beta + slice_begin);
  const float inverse_cols = 1.0f / cols;

  cluster_arrive<kCluster>();  // this block runs: neighbours may write its reduction slots (row_reduce.cuh)
  float scale_values[kAffineInRegisters ? kRowItems : 1][kVec];
  float shift_values[kAffineInRegisters ? kRowItems : 1][kVec];
  if constexpr (kAffineInRegisters) {
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      const Vector g = scale[thread_in_row + item * kRowThreads];
      const Vector b = shift[thread_in_row + item * kRowThreads];
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        scale_values[item][lane] = to_float(g.lane[lane]);
        shift_values[item][lane] = to_float(b.lane[lane]);
      }
    }
  }
  auto row_of = [&](long long group) { return group * kRowsPerBlock + row_in_block; };
  extern __shared__ float4 dynamic_shared[];  // kStages >= 2; float4: 16-byte alignment for every vector width
  const int slice_vectors = slice_cols / kVec;
  auto stage_slice = [&](int stage) {
    return reinterpret_cast<Vector*>(dynamic_shared) + ((long long)stage * kRowsPerBlock + row_in_block) * slice_vectors;
  };
  // Starts the copy of this thread's vectors of a group's slice into a stage and closes a cp.async group (an
  // empty one past the last group, so that every iteration waits for the same count).
  // kBulkCopy: one mbarrier per stage; a stage's k-th fill completes the barrier's phase k.
  __shared__ alignas(8) unsigned long long stage_filled[kBulkCopy ? kStages : 1];
  if constexpr (kBulkCopy) {
    if (threadIdx.x == 0) {
#pragma unroll
      for (int stage = 0; stage < kStages; ++stage)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&stage_filled[stage])) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
  }
  auto copy_slice = [&](long long group, int stage) {
    if constexpr (kBulkCopy) {
      if (threadIdx.x != 0 || group >= groups) return;
      const long long first_row = group * kRowsPerBlock;
      const int rows_present = (int)min((long long)kRowsPerBlock, rows - first_row);
      const unsigned slice_bytes = slice_cols * sizeof(Element);
      const unsigned barrier = shared_address(&stage_filled[stage]);
      asm volatile("{ .reg .b64 state; mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1; }" ::"r"(barrier),
                   "r"(slice_bytes * rows_present) : "memory");
      for (int block_row = 0; block_row < rows_present; ++block_row) {
        const Element* source = input + (first_row + block_row) * cols + slice_begin;
        const Vector* destination =
            reinterpret_cast<Vector*>(dynamic_shared) + ((long long)stage * kRowsPerBlock + block_row) * slice_vectors;
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(shared_address(destination)), "l"(source), "r"(slice_bytes), "r"(barrier) : "memory");
      }
    } else if constexpr (kStages >= 2) {
      const long long row = row_of(group);
      if (group < groups && row < rows) {
        const Vector* in = reinterpret_cast<const Vector*>(input + row * cols + slice_begin);
        Vector* staged = stage_slice(stage);
#pragma unroll
        for (int item = 0; item < kRowItems; ++item)
          copy_async(staged + thread_in_row + item * kRowThreads, in + thread_in_row + item * kRowThreads);
      }
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
  };
  auto load_slice = [&](long long group, Vector (&loaded)[kRowItems]) {
    const long long row = row_of(group);
    if (group >= groups || row >= rows) return;
    const Vector* in = reinterpret_cast<const Vector*>(input + row * cols + slice_begin);
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      if constexpr (kStream) loaded[item] = load_streaming(in + thread_in_row + item * kRowThreads);
      else loaded[item] = in[thread_in_row + item * kRowThreads];
    }
  };

  // Groups of the local iterations: k <= kLookahead fixed, later ones from the ring (see above).
  constexpr int kLookahead = kStages >= 2 ? kStages - 1 : 1;  // groups loaded ahead of the one reduced
  constexpr int kRing = 8;
  static_assert(kLookahead + 2 <= kRing, "a ring entry is rewritten only after its group is stored");
  __shared__ long long group_ring[kRing];
  const long long cluster_index = blockIdx.x / kCluster;
  const long long fixed_groups = (kLookahead + 1) * clusters;
  auto group_of = [&](int k) { return k <= kLookahead ? cluster_index + k * clusters : group_ring[k % kRing]; };
  const bool draws_tickets = cluster_rank<kCluster>() == 0 && threadIdx.x == 0;

  Vector pending[kStages >= 2 ? 1 : kRowItems];
  if constexpr (kStages >= 2) {
#pragma unroll
    for (int stage = 0; stage < kStages - 1; ++stage) copy_slice(group_of(stage), stage);
  } else {
    load_slice(group_of(0), pending);
  }
  cluster_wait<kCluster>();  // every block of the cluster runs
  int parity = 0;
  int stage = 0;
  unsigned stage_phases = 0;  // kBulkCopy: bit s is the phase of stage s's mbarrier that the next wait expects
  for (int k = 0;; ++k, parity ^= 1, stage = stage + 1 == kStages ? 0 : stage + 1) {
    const long long group = group_of(k);
    if (group >= groups) break;  // the same group in every block of the cluster, and later ones are larger
    if (draws_tickets) {
      const long long drawn = min(fixed_groups + atomicAdd(&row_counters[0], 1), groups);
      long long* entry = &group_ring[(k + kLookahead + 1) % kRing];
      if constexpr (kCluster > 1) {
#pragma unroll
        for (unsigned rank = 0; rank < kCluster; ++rank) *in_cluster_block(entry, rank) = drawn;
      } else {
        *entry = drawn;
      }
    }
    // Published by the reduction barrier below; without one (a block of single-warp rows) by this one, which also
    // orders every thread's reads of the previous iteration's stage before a bulk copy refills it.
    if constexpr (kRowThreads == 32 && kCluster == 1) __syncthreads();
    const long long row = row_of(group);
    const bool row_exists = row < rows;
    float values[kRowItems][kVec];
    FloatPair thread_totals{0.0f, 0.0f};
    if constexpr (kStages >= 2) {
      // Refills the stage this thread finished reading in the previous iteration, then waits for the current one.
      copy_slice(group_of(k + kStages - 1), stage == 0 ? kStages - 1 : stage - 1);
      if constexpr (kBulkCopy) {
        const unsigned barrier = shared_address(&stage_filled[stage]);
        const unsigned phase = (stage_phases >> stage) & 1u;
        unsigned filled;
        do {
          asm volatile("{ .reg .pred done; mbarrier.try_wait.parity.shared::cta.b64 done, [%1], %2; selp.u32 %0, 1, 0, done; }"
                       : "=r"(filled) : "r"(barrier), "r"(phase) : "memory");
        } while (!filled);
        stage_phases ^= 1u << stage;
      } else {
        asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 1) : "memory");
      }
      const Vector* staged = stage_slice(stage);
#pragma unroll
      for (int item = 0; item < kRowItems; ++item) {
        const Vector loaded = staged[thread_in_row + item * kRowThreads];
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) values[item][lane] = row_exists ? to_float(loaded.lane[lane]) : 0.0f;
      }
    } else {
#pragma unroll
      for (int item = 0; item < kRowItems; ++item)
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) values[item][lane] = row_exists ? to_float(pending[item].lane[lane]) : 0.0f;
    }
#pragma unroll
    for (int item = 0; item < kRowItems; ++item)
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        thread_totals.first += values[item][lane];
        if (!kTwoPass) thread_totals.second = fmaf(values[item][lane], values[item][lane], thread_totals.second);
      }
    // in flight through the reductions and the stores below
    if constexpr (kStages < 2) load_slice(group_of(k + 1), pending);
    const FloatPair totals =
        row_reduce<kRowThreads, kCluster>(thread_totals, add_pairs, totals_scratch[parity][row_in_block]);
    const float mean = totals.first * inverse_cols;
    float variance;
    if constexpr (kTwoPass) {
      float thread_deviations = 0.0f;
#pragma unroll
      for (int item = 0; item < kRowItems; ++item)
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) {
          const float deviation = row_exists ? values[item][lane] - mean : 0.0f;
          thread_deviations = fmaf(deviation, deviation, thread_deviations);
        }
      variance = row_reduce<kRowThreads, kCluster>(thread_deviations, add, deviations_scratch[parity][row_in_block]) *
                 inverse_cols;
    } else {
      variance = fmaxf(totals.second * inverse_cols - mean * mean, 0.0f);
    }
    const float inverse_deviation = rsqrtf(variance + epsilon);
    if (row_exists) {
      Vector* out = reinterpret_cast<Vector*>(output + row * cols + slice_begin);
#pragma unroll
      for (int item = 0; item < kRowItems; ++item) {
        const int index = thread_in_row + item * kRowThreads;
        float g[kVec], b[kVec];
        if constexpr (kAffineInRegisters) {
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane) {
            g[lane] = scale_values[item][lane];
            b[lane] = shift_values[item][lane];
          }
        } else {
          const Vector g_loaded = scale[index];
          const Vector b_loaded = shift[index];
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane) {
            g[lane] = to_float(g_loaded.lane[lane]);
            b[lane] = to_float(b_loaded.lane[lane]);
          }
        }
        Vector result;
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane)
          result.lane[lane] = from_float(fmaf((values[item][lane] - mean) * inverse_deviation, g[lane], b[lane]));
        if constexpr (kStream) store_streaming(out + index, result);
        else out[index] = result;
      }
    }
  }
  if constexpr (kStages >= 2 && !kBulkCopy) asm volatile("cp.async.wait_all;" ::: "memory");
  if (draws_tickets) {  // every other cluster has drawn its last ticket once it counts itself finished
    __threadfence();
    if (atomicAdd(&row_counters[1], 1) == clusters - 1) {
      row_counters[0] = 0;
      row_counters[1] = 0;
      __threadfence();
    }
  }
}

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kCacheRow, bool kTwoPass, int kRowItems, int kUnroll,
          bool kSharedRow, int kCluster>
__device__ __forceinline__ void layernorm_one_group(int rows, int cols, float epsilon, const Element* __restrict__ input,
                                                    const Element* __restrict__ gamma, const Element* __restrict__ beta,
                                                    Element* __restrict__ output) {
  using Vector = Pack<kVec>;
  __shared__ RowScratch<FloatPair, kRowThreads, kCluster> totals_scratch[kRowsPerBlock];
  __shared__ RowScratch<float, kRowThreads, kCluster> deviations_scratch[kTwoPass ? kRowsPerBlock : 1];
  const int row_in_block = threadIdx.x / kRowThreads;
  const int thread_in_row = threadIdx.x % kRowThreads;
  const long long row = (long long)(blockIdx.x / kCluster) * kRowsPerBlock + row_in_block;
  // Threads of a missing row still take part in the block's and the cluster's barriers, so nobody returns early.
  const bool row_exists = row < rows;
  cluster_arrive<kCluster>();  // this block runs: neighbours may write its reduction slots (row_reduce.cuh)
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
  cluster_wait<kCluster>();  // every block of the cluster runs
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
}

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kCacheRow, bool kTwoPass, int kRowItems, int kUnroll,
          bool kSharedRow, int kCluster, bool kPersistent, bool kAffineInRegisters, bool kStream, int kStages,
          bool kBulkCopy>
__global__ void __launch_bounds__(kRowThreads * kRowsPerBlock) ROW_CLUSTER_DIMS
    layernorm(int rows, int cols, float epsilon, const Element* __restrict__ input,
              const Element* __restrict__ gamma, const Element* __restrict__ beta, Element* __restrict__ output,
              int* __restrict__ row_counters) {
  if constexpr (kPersistent) {
    layernorm_persistent<kRowThreads, kRowsPerBlock, kVec, kTwoPass, kRowItems, kCluster, kAffineInRegisters, kStream,
                         kStages, kBulkCopy>(
        rows, cols, epsilon, input, gamma, beta, output, row_counters);
  } else {
    layernorm_one_group<kRowThreads, kRowsPerBlock, kVec, kCacheRow, kTwoPass, kRowItems, kUnroll, kSharedRow, kCluster>(
        rows, cols, epsilon, input, gamma, beta, output);
  }
}
