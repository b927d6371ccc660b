// Row reductions shared by the row-wise templates (softmax.cu, layernorm.cu): one value per thread combined over
// every thread that works on a row. A row belongs to ROW_THREADS threads of a block (a warp, or several warps
// combined through shared memory) and, with CLUSTER > 1, is split into CLUSTER slices handled by the blocks of one
// thread-block cluster (sm_90), whose partial results meet in distributed shared memory.
//
// Why clusters (issue 4, results/memory_bound.md): a 128 KiB fp32 row held by one block leaves one block per SM,
// so the SM stops loading during the row's reductions and its store phase. Split over a cluster, each block
// caches a slice in registers and several rows are in flight per SM.
//
// A template that includes this header has a CLUSTER parameter (a macro, like every parameter) and puts
// ROW_CLUSTER_DIMS between __launch_bounds__ and the kernel's name.

#if defined(CLUSTER) && CLUSTER > 1
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 900
#error "CLUSTER > 1 needs sm_90 or newer (thread-block clusters); the space's constraint should have excluded it"
#endif
#define ROW_CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define ROW_CLUSTER_DIMS
#endif

struct FloatPair {
  float first;
  float second;
};

__device__ __forceinline__ float shuffle_xor(float value, int offset) {
  return __shfl_xor_sync(0xffffffffu, value, offset);
}
__device__ __forceinline__ FloatPair shuffle_xor(FloatPair value, int offset) {
  return {shuffle_xor(value.first, offset), shuffle_xor(value.second, offset)};
}

// Cluster primitives in PTX (ISA 7.8, sm_90). Templates on kCluster so that nothing cluster-related is emitted
// for sm_80, where these instructions do not exist.
template <int kCluster> __device__ __forceinline__ void cluster_arrive() {
  if constexpr (kCluster > 1) asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
template <int kCluster> __device__ __forceinline__ void cluster_wait() {
  if constexpr (kCluster > 1) asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
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
// The generic address of the same shared variable in the cluster's block `rank`.
template <typename T> __device__ __forceinline__ const T* in_cluster_block(const T* local, unsigned rank) {
  unsigned long long remote;
  asm("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(local), "r"(rank));
  return reinterpret_cast<const T*>(remote);
}

// Shared memory of one row_reduce call for one row: a slot per warp of the row and the slot this block shows the
// other blocks of its cluster.
template <typename T, int kRowThreads> struct RowScratch {
  T warps[kRowThreads > 32 ? kRowThreads / 32 : 1];
  T cluster_slot;
};

// Combines one value per thread over the row; every thread of the row gets the result. Every thread of the block
// must call it (it synchronises the block, and the cluster when kCluster > 1). The blocks of a cluster combine the
// slots in rank order, so each gets the bitwise same result and all slices of a row are normalised alike.
// Each call needs its own scratch: after the cluster barrier a neighbour may still be reading this block's slot,
// so reusing it would race; a kernel calls cluster_arrive after its last reduction and cluster_wait before it
// ends, so that no block leaves while another reads its slot.
template <int kRowThreads, int kCluster, typename T, typename Combine>
__device__ __forceinline__ T row_reduce(T value, Combine combine, RowScratch<T, kRowThreads>& scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value = combine(value, shuffle_xor(value, offset));
  if constexpr (kRowThreads > 32) {
    constexpr int kWarps = kRowThreads / 32;
    if ((threadIdx.x & 31) == 0) scratch.warps[(threadIdx.x % kRowThreads) / 32] = value;
    __syncthreads();
    value = scratch.warps[0];
#pragma unroll
    for (int warp = 1; warp < kWarps; ++warp) value = combine(value, scratch.warps[warp]);
  }
  if constexpr (kCluster > 1) {
    if (threadIdx.x % kRowThreads == 0) scratch.cluster_slot = value;
    cluster_arrive<kCluster>();
    cluster_wait<kCluster>();
    value = *in_cluster_block(&scratch.cluster_slot, 0);
#pragma unroll
    for (unsigned rank = 1; rank < kCluster; ++rank) value = combine(value, *in_cluster_block(&scratch.cluster_slot, rank));
  }
  return value;
}
