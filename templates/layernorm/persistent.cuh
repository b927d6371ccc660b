// The PERSISTENT layernorm path: each block (each cluster with CLUSTER > 1) keeps one column slice of gamma and beta
// and walks row groups, group = cluster index, + clusters, ... The next group's slice is loaded into registers
// before the current one's reductions, so it is in flight while this block waits at barriers and stores (without
// it, a block that waits at a barrier or stores issues no loads). Every block of a cluster walks the same groups, so
// the cluster barriers inside row_reduce pair up. Reductions alternate between two scratch copies: the barrier of
// reduction i+1 is passed only after every block (and warp) has read reduction i's slots, so reduction i+2 may
// overwrite them.
// With kStages >= 2 the prefetch goes to shared memory instead (cp.async, kStages slices per row of the block,
// kStages - 1 groups ahead), which costs no registers and keeps more bytes in flight. Each thread copies, and
// later reads, only its own vectors, so the copies need the thread's own cp.async.wait_group and no barrier.
// kBulkCopy (sm_90): one thread copies each row's whole slice with one bulk copy (cp.async.bulk, the TMA unit)
// that completes on the stage's mbarrier, which every thread waits on. A stage is refilled one iteration after it
// was read, and the reduction barrier of that iteration (block or cluster) orders every thread's reads before it.
// With a residual every stage holds the input's slices and, after all stages of them, the residual's.
// Row groups are handed out at run time: a cluster's first kLookahead + 1 groups are fixed (cluster index,
// + clusters, ...), later ones are drawn from a ticket counter in global memory (row_counters[0]), so clusters
// that run faster take more rows instead of all waiting for the slowest (on the H200, 4096 x 32768: 92.2% ->
// 94.4% of the copy ceiling with 512 threads, probes/layernorm_probe.cu). Rank 0's first thread draws the group
// of local iteration k + kLookahead + 1 during iteration k and writes it into every block's ring before the
// iteration's reduction barrier, which publishes it; the last cluster to finish resets the counters to zero
// (row_counters[1] counts finished clusters), so each launch starts from zero.
// A thread's last item may lie past the slice (ROW_ITEMS rounded up, layernorm.cu): it is neither copied, loaded,
// read from a stage (past the last stage's end that would be outside the shared memory) nor stored, and counts
// as zero. kCentred false: RMSNorm (no mean subtracted, no beta).
#pragma once

#include "common/mbarrier.cuh"

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kTwoPass, int kRowItems, int kCluster,
          bool kAffineInRegisters, bool kStream, int kStages, bool kBulkCopy, bool kResidual, bool kCentred>
__device__ __forceinline__ void layernorm_persistent(int rows, int cols, float epsilon, const Element* __restrict__ input,
                                                     const Element* __restrict__ residual,
                                                     const Element* __restrict__ gamma, const Element* __restrict__ beta,
                                                     Element* __restrict__ sum, Element* __restrict__ output,
                                                     int* __restrict__ row_counters) {
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
  const Vector* shift = kCentred ? reinterpret_cast<const Vector*>(beta + slice_begin) : nullptr;
  const float inverse_cols = 1.0f / cols;
  const int slice_vectors = slice_cols / kVec;
  // Whether this thread's item lies inside the slice (rows.cuh: only the last item can lie past it).
  auto present = [&](int item) { return in_slice<kRowItems>(item, thread_in_row + item * kRowThreads, slice_vectors); };

  cluster_arrive<kCluster>();  // this block runs: neighbours may write its reduction slots (common/row_reduce.cuh)
  float scale_values[kAffineInRegisters ? kRowItems : 1][kVec];
  float shift_values[kAffineInRegisters ? kRowItems : 1][kVec];
  if constexpr (kAffineInRegisters) {
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      Vector g, b;
      if (present(item)) {
        g = scale[thread_in_row + item * kRowThreads];
        if constexpr (kCentred) b = shift[thread_in_row + item * kRowThreads];
      }
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        scale_values[item][lane] = present(item) ? to_float(g.lane[lane]) : 0.0f;
        shift_values[item][lane] = kCentred && present(item) ? to_float(b.lane[lane]) : 0.0f;
      }
    }
  }
  auto row_of = [&](long long group) { return group * kRowsPerBlock + row_in_block; };
  extern __shared__ float4 dynamic_shared[];  // kStages >= 2; float4: 16-byte alignment for every vector width
  // The stage of a row of this block: its input slice, or (matrix 1) its residual slice.
  auto staged_slice = [&](int stage, int block_row, int matrix) {
    return reinterpret_cast<Vector*>(dynamic_shared) +
           (((long long)matrix * kStages + stage) * kRowsPerBlock + block_row) * slice_vectors;
  };
  // Starts the copy of this thread's vectors of a group's slice into a stage and closes a cp.async group (an
  // empty one past the last group, so that every iteration waits for the same count).
  // kBulkCopy: one mbarrier per stage; a stage's k-th fill completes the barrier's phase k.
  __shared__ alignas(8) unsigned long long stage_filled[kBulkCopy ? kStages : 1];
  if constexpr (kBulkCopy) {
    if (threadIdx.x == 0) {
#pragma unroll
      for (int stage = 0; stage < kStages; ++stage) barrier_init(shared_address(&stage_filled[stage]), 1);
      barrier_init_fence();
    }
    __syncthreads();
  }
  constexpr int kMatrices = kResidual ? 2 : 1;  // matrices read per row
  auto copy_slice = [&](long long group, int stage) {
    if constexpr (kBulkCopy) {
      if (threadIdx.x != 0 || group >= groups) return;
      const long long first_row = group * kRowsPerBlock;
      const int rows_present = (int)min((long long)kRowsPerBlock, rows - first_row);
      const unsigned slice_bytes = slice_cols * sizeof(Element);
      const unsigned barrier = shared_address(&stage_filled[stage]);
      barrier_arrive_expect_bytes(barrier, slice_bytes * rows_present * kMatrices);
      for (int block_row = 0; block_row < rows_present; ++block_row) {
        const long long offset = (first_row + block_row) * cols + slice_begin;
        bulk_copy(shared_address(staged_slice(stage, block_row, 0)), input + offset, slice_bytes, barrier);
        if constexpr (kResidual)
          bulk_copy(shared_address(staged_slice(stage, block_row, 1)), residual + offset, slice_bytes, barrier);
      }
    } else if constexpr (kStages >= 2) {
      const long long row = row_of(group);
      if (group < groups && row < rows) {
        const long long offset = row * cols + slice_begin;
        const Vector* in = reinterpret_cast<const Vector*>(input + offset);
        Vector* staged = staged_slice(stage, row_in_block, 0);
#pragma unroll
        for (int item = 0; item < kRowItems; ++item)
          if (present(item))
            copy_async<sizeof(Vector)>(staged + thread_in_row + item * kRowThreads, in + thread_in_row + item * kRowThreads);
        if constexpr (kResidual) {
          const Vector* added = reinterpret_cast<const Vector*>(residual + offset);
          Vector* staged_added = staged_slice(stage, row_in_block, 1);
#pragma unroll
          for (int item = 0; item < kRowItems; ++item)
            if (present(item))
              copy_async<sizeof(Vector)>(staged_added + thread_in_row + item * kRowThreads,
                                         added + thread_in_row + item * kRowThreads);
        }
      }
      commit_copies();
    }
  };
  auto load_slice = [&](long long group, Vector (&loaded)[kRowItems], Vector (&loaded_residual)[kResidual ? kRowItems : 1]) {
    const long long row = row_of(group);
    if (group >= groups || row >= rows) return;
    const Vector* in = reinterpret_cast<const Vector*>(input + row * cols + slice_begin);
#pragma unroll
    for (int item = 0; item < kRowItems; ++item) {
      if (!present(item)) continue;
      if constexpr (kStream) loaded[item] = load_streaming(in + thread_in_row + item * kRowThreads);
      else loaded[item] = in[thread_in_row + item * kRowThreads];
    }
    if constexpr (kResidual) {
      const Vector* added = reinterpret_cast<const Vector*>(residual + row * cols + slice_begin);
#pragma unroll
      for (int item = 0; item < kRowItems; ++item) {
        if (!present(item)) continue;
        if constexpr (kStream) loaded_residual[item] = load_streaming(added + thread_in_row + item * kRowThreads);
        else loaded_residual[item] = added[thread_in_row + item * kRowThreads];
      }
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
  Vector pending_residual[kStages < 2 && kResidual ? kRowItems : 1];
  if constexpr (kStages >= 2) {
#pragma unroll
    for (int stage = 0; stage < kStages - 1; ++stage) copy_slice(group_of(stage), stage);
  } else {
    load_slice(group_of(0), pending, pending_residual);
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
    Vector summed[kResidual ? kRowItems : 1];  // input + residual, as stored
    if constexpr (kStages >= 2) {
      // Refills the stage this thread finished reading in the previous iteration, then waits for the current one.
      copy_slice(group_of(k + kStages - 1), stage == 0 ? kStages - 1 : stage - 1);
      if constexpr (kBulkCopy) {
        barrier_wait(shared_address(&stage_filled[stage]), (stage_phases >> stage) & 1u);
        stage_phases ^= 1u << stage;
      } else {
        wait_copies<kStages - 1>();
      }
      const Vector* staged = staged_slice(stage, row_in_block, 0);
#pragma unroll
      for (int item = 0; item < kRowItems; ++item) {
        Vector loaded;
        if (present(item)) {
          loaded = staged[thread_in_row + item * kRowThreads];
          if constexpr (kResidual) {
            loaded = add_vectors(loaded, staged_slice(stage, row_in_block, 1)[thread_in_row + item * kRowThreads]);
            summed[item] = loaded;
          }
        }
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane)
          values[item][lane] = row_exists && present(item) ? to_float(loaded.lane[lane]) : 0.0f;
      }
    } else {
#pragma unroll
      for (int item = 0; item < kRowItems; ++item) {
        Vector loaded = pending[item];
        if constexpr (kResidual) {
          loaded = add_vectors(loaded, pending_residual[item]);
          summed[item] = loaded;
        }
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane)
          values[item][lane] = row_exists && present(item) ? to_float(loaded.lane[lane]) : 0.0f;
      }
    }
    if constexpr (kResidual) {
      // Stored before the reductions, so the stores overlap them.
      if (row_exists) {
        Vector* sum_row = reinterpret_cast<Vector*>(sum + row * cols + slice_begin);
#pragma unroll
        for (int item = 0; item < kRowItems; ++item) {
          if (!present(item)) continue;
          if constexpr (kStream) store_streaming(sum_row + thread_in_row + item * kRowThreads, summed[item]);
          else sum_row[thread_in_row + item * kRowThreads] = summed[item];
        }
      }
    }
    FloatPair thread_totals{0.0f, 0.0f};
#pragma unroll
    for (int item = 0; item < kRowItems; ++item)
#pragma unroll
      for (int lane = 0; lane < kVec; ++lane) {
        thread_totals.first += values[item][lane];
        if (!kTwoPass) thread_totals.second = fmaf(values[item][lane], values[item][lane], thread_totals.second);
      }
    // in flight through the reductions and the stores below
    if constexpr (kStages < 2) load_slice(group_of(k + 1), pending, pending_residual);
    const FloatPair totals =
        row_reduce<kRowThreads, kCluster>(thread_totals, add_pairs, totals_scratch[parity][row_in_block]);
    const float mean = kCentred ? totals.first * inverse_cols : 0.0f;
    float variance;
    if constexpr (kTwoPass) {
      float thread_deviations = 0.0f;
#pragma unroll
      for (int item = 0; item < kRowItems; ++item)
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane) {
          const float deviation = row_exists && present(item) ? values[item][lane] - mean : 0.0f;
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
        if (!present(item)) continue;
        float g[kVec], b[kVec];
        if constexpr (kAffineInRegisters) {
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane) {
            g[lane] = scale_values[item][lane];
            b[lane] = shift_values[item][lane];
          }
        } else {
          const Vector g_loaded = scale[index];
          Vector b_loaded;
          if constexpr (kCentred) b_loaded = shift[index];
#pragma unroll
          for (int lane = 0; lane < kVec; ++lane) {
            g[lane] = to_float(g_loaded.lane[lane]);
            b[lane] = kCentred ? to_float(b_loaded.lane[lane]) : 0.0f;
          }
        }
        Vector result;
#pragma unroll
        for (int lane = 0; lane < kVec; ++lane)
          result.lane[lane] = from_float<Element>(fmaf((values[item][lane] - mean) * inverse_deviation, g[lane], b[lane]));
        if constexpr (kStream) store_streaming(out + index, result);
        else out[index] = result;
      }
    }
  }
  if constexpr (kStages >= 2 && !kBulkCopy) wait_all_copies();
  if (draws_tickets) {  // every other cluster has drawn its last ticket once it counts itself finished
    __threadfence();
    if (atomicAdd(&row_counters[1], 1) == clusters - 1) {
      row_counters[0] = 0;
      row_counters[1] = 0;
      __threadfence();
    }
  }
}
