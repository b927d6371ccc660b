// Thread-block cluster primitives in PTX (ISA 7.8, sm_90), templated on the cluster size so that nothing
// cluster-related is emitted for clusters of one block, and so for sm_80, where these instructions do not exist.
#pragma once

template <int kCluster> __device__ __forceinline__ void cluster_arrive() {
  if constexpr (kCluster > 1) asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
template <int kCluster> __device__ __forceinline__ void cluster_wait() {
  if constexpr (kCluster > 1) asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}
// Every thread of every block of the cluster meets here.
template <int kCluster> __device__ __forceinline__ void cluster_sync() {
  if constexpr (kCluster > 1) asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
template <int kCluster> __device__ __forceinline__ unsigned cluster_rank() {
  if constexpr (kCluster > 1) {
    unsigned rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
  } else {
    return 0;
  }
}

// The address of the same shared variable in the cluster's block `rank` (a generic address).
template <typename T> __device__ __forceinline__ T* in_cluster_block(T* local, unsigned rank) {
  unsigned long long remote;
  asm("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(local), "r"(rank));
  return reinterpret_cast<T*>(remote);
}
