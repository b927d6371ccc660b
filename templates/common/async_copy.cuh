// Asynchronous copies from global into shared memory, bypassing registers:
//   cp.async (sm_80+)       per thread, 4, 8 or 16 bytes, tracked in the thread's commit groups;
//   cp.async.bulk (sm_90)   one thread moves a contiguous run of bytes with the TMA unit, completing on an mbarrier;
//   cp.async.bulk.tensor    one thread moves a 2-D box described by a tensor map (sm_90), optionally multicast to
//                           every block of a thread-block cluster.
// The sm_90 forms are only emitted where a template calls them, so a template that includes this header still
// compiles for sm_80.
#pragma once

__device__ __forceinline__ unsigned shared_address(const void* pointer) {
  return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

// One cp.async of kBytes. 16 bytes are cached in L2 only (.cg): what a block stages is reused across blocks through
// L2, not within an SM through L1. Smaller copies can only use .ca (cached in L1), so the rest of each 32-byte sector
// is served from there (the simt GEMM scatters 4-byte elements this way to transpose A on the way in).
// The "memory" clobber keeps the compiler from moving the thread's own shared-memory accesses across the copy.
template <int kBytes> __device__ __forceinline__ void copy_async(void* shared_destination, const void* source) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(shared_destination)), "l"(source)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(shared_address(shared_destination)), "l"(source),
                 "n"(kBytes)
                 : "memory");
  }
}

// Closes the thread's current group of cp.async copies.
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most `pending` of this thread's commit groups are still in flight.
template <int pending> __device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(pending) : "memory");
}

__device__ __forceinline__ void wait_all_copies() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// A contiguous run of `bytes` (a multiple of 16, both addresses 16-byte aligned) into this block's shared memory,
// completing on the mbarrier at shared address `barrier` (its transaction count must expect the bytes).
__device__ __forceinline__ void bulk_copy(unsigned shared_destination, const void* source, unsigned bytes,
                                          unsigned barrier) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   shared_destination),
               "l"(source), "r"(bytes), "r"(barrier)
               : "memory");
}

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, encoded on the host (cuTensorMapEncodeTiled) by the
// evaluation worker for each `type: tensor_map` argument and passed by value as a __grid_constant__ parameter.
// NVRTC cannot include cuda.h, so the layout is restated here.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// The box of a 2-D tensor map at (inner, outer) into shared memory, completing on the mbarrier `barrier`.
__device__ __forceinline__ void copy_tile(unsigned shared_destination, const TensorMap& map, unsigned barrier,
                                          int inner, int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          shared_destination),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(inner), "r"(outer), "r"(barrier)
      : "memory");
}

// The same box into the same shared-memory offset of every block of a cluster of kCluster blocks, each completing on
// its own barrier at the given offset.
template <int kCluster>
__device__ __forceinline__ void copy_tile_to_cluster(unsigned shared_destination, const TensorMap& map,
                                                     unsigned barrier, int inner, int outer) {
  const unsigned short every_block = (1u << kCluster) - 1;
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(shared_destination),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(inner), "r"(outer), "r"(barrier), "h"(every_block)
      : "memory");
}
