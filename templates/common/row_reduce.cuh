// Row reductions for the row-wise templates (layernorm): one value per thread combined over every thread that works
// on a row. A row belongs to kRowThreads threads of a block (a warp, or several warps combined through shared memory)
// and, with kCluster > 1, is split into kCluster slices handled by the blocks of one thread-block cluster (sm_90),
// whose partial results meet in distributed shared memory.
//
// Why clusters (issue 4, results/memory_bound.md): a 128 KiB fp32 row held by one block leaves one block per SM,
// so the SM stops loading during the row's reductions and its store phase. Split over a cluster, each block
// caches a slice in registers and several rows are in flight per SM.
#pragma once

#include "common/cluster.cuh"
#include "common/warp_reduce.cuh"

// Shared memory of one row_reduce call for one row: a slot per warp of the row in every block of the cluster
// (slot rank * warps + warp), so that each block holds every partial result after the barrier.
template <typename T, int kRowThreads, int kCluster> struct RowScratch {
  static constexpr int kWarps = kRowThreads > 32 ? kRowThreads / 32 : 1;
  static constexpr int kSlots = kWarps * kCluster;
  T slots[kSlots];
};

// Combines one value per thread over the row; every thread of the row gets the result. Every thread of the block
// must call it when the row spans several warps or blocks (it synchronises the block, or the cluster).
// One barrier per call: each warp's lane 0 writes the warp's result into its slot in every block of the cluster
// (distributed shared memory stores), then one block barrier (kCluster == 1) or cluster barrier, which orders
// the block as well; then every warp combines all the slots, a lane per slot and shuffles. Every warp of every
// block combines the same slots in the same order, so all get the bitwise same result and all slices of a row
// are normalised alike. (Measured on the H200, probes/layernorm_probe.cu: against a block barrier, one thread
// summing the warps' slots, a cluster barrier and reads of every block's total, this lifts layernorm at
// 4096 x 32768 from 88% to 92% of the copy ceiling.)
// Consecutive calls need different scratch: a warp that has passed the barrier of call i may already write its
// slots for call i+1 (here and in the neighbours) while a slower warp still reads those of call i; the barrier of
// call i+1 orders the reads of call i before the writes of call i+2, so two alternating copies suffice. Nothing
// touches another block's shared memory after a call's barrier, so a block may leave right after its last call.
// A block's shared memory may be written by its neighbours only once that block runs, so with kCluster > 1 a
// kernel calls cluster_arrive at its start and cluster_wait before its first row_reduce (a launch with CLUSTER=8
// failed without it).
template <int kRowThreads, int kCluster, typename T, typename Combine>
__device__ __forceinline__ T row_reduce(T value, Combine combine, RowScratch<T, kRowThreads, kCluster>& scratch) {
  using Scratch = RowScratch<T, kRowThreads, kCluster>;
  value = warp_all_reduce(value, combine);
  if constexpr (Scratch::kSlots > 1) {
    const unsigned lane = threadIdx.x & 31;
    if (lane == 0) {
      const unsigned slot = cluster_rank<kCluster>() * Scratch::kWarps + (threadIdx.x % kRowThreads) / 32;
      if constexpr (kCluster > 1) {
#pragma unroll
        for (unsigned rank = 0; rank < kCluster; ++rank) *in_cluster_block(&scratch.slots[slot], rank) = value;
      } else {
        scratch.slots[slot] = value;
      }
    }
    if constexpr (kCluster > 1) {
      cluster_arrive<kCluster>();
      cluster_wait<kCluster>();
    } else {
      __syncthreads();
    }
    // Lane l takes slots l, l + 32, ... (with fewer than 32 slots, lanes repeat them in groups of kSlots, and the
    // shuffles stay inside a group).
    constexpr int kLanes = Scratch::kSlots < 32 ? Scratch::kSlots : 32;
    const unsigned first = lane % kLanes;
    value = scratch.slots[first];
#pragma unroll
    for (int round = 1; round < Scratch::kSlots / 32; ++round) value = combine(value, scratch.slots[first + 32 * round]);
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset >>= 1) value = combine(value, shuffle_xor(value, offset));
  }
  return value;
}
