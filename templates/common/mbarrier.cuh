// Shared-memory mbarriers (sm_90 forms): the completion mechanism of TMA copies and the handshake between producer
// and consumer warps. A barrier is named by its shared-memory address (common/async_copy.cuh's shared_address).
#pragma once

__device__ __forceinline__ void barrier_init(unsigned barrier, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(barrier), "r"(arrivals) : "memory");
}

// Makes initialised barriers visible to the copy engine (and to the cluster) before any copy completes on them.
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrives and announces how many bytes the copies completing on this barrier will deliver in the current phase.
__device__ __forceinline__ void barrier_arrive_expect_bytes(unsigned barrier, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier), "r"(bytes) : "memory");
}

__device__ __forceinline__ void barrier_arrive(unsigned barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(barrier) : "memory");
}

// Arrives on the barrier at the same shared-memory offset in block `rank` of this cluster (this block included).
// Default (.cta) release semantics: the caller's reads being released must be complete before the arrival (on the
// H200 a .release.cluster arrival, which also orders the warp's earlier global stores at cluster scope, made the
// 2-block-cluster GEMM 2.2x slower).
__device__ __forceinline__ void barrier_arrive_in_block(unsigned barrier, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(barrier), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

// Waits until the phase with the given parity has completed. Waiting on the parity before a barrier's first phase
// returns at once, which is how a producer finds every stage empty at the start.
__device__ __forceinline__ void barrier_wait(unsigned barrier, unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n}\n"
        : "=r"(done)
        : "r"(barrier), "r"(parity)
        : "memory");
  }
}
