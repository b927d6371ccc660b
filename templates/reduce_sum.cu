// Sum of n values in one kernel launch, as a tunable template. Every block reduces a grid-stride share of the
// input to one partial sum; the last block to finish (found with a self-resetting counter) adds the partials and
// writes the single result. The output is therefore written completely by every configuration and compares across
// configurations, unlike per-block partials (their count depends on the grid) or a one-pass atomicAdd into the
// output (it needs the output zeroed, and the tuner poisons outputs before verified runs).
// Input type: float, or __nv_bfloat16 when the spec compiles with -DREDUCE_SUM_BF16; sums, partials and the
// result are fp32 either way.
// Every parameter is a macro, so the template parameters carry k-prefixed names.
//   BLOCK          threads per block
//   VEC            elements per vector load (at most 16 bytes)
//   ITEMS          independent accumulators (vector loads in flight) per thread
//   BLOCKS_PER_SM  grid size per SM (the grid is sm_count * BLOCKS_PER_SM)
//   TREE           how a block combines its threads' sums: TREE_shuffle (warp shuffles, then one value per warp
//                  in shared memory) or TREE_shared (a classic shared-memory tree)
// n must be a multiple of VEC; partials must hold at least gridDim.x floats; counter starts at 0 and is left at 0.
#ifdef REDUCE_SUM_BF16
#include "common/element_16bit.cuh"
using Element = __nv_bfloat16;
#else
#include "common/element.cuh"
using Element = float;
#endif
#include "common/warp_reduce.cuh"

template <int kWidth> using Pack = VectorOf<Element, kWidth>;

// The lanes summed pairwise, so the additions of a wide vector do not form one long dependent chain.
template <int kWidth> __device__ __forceinline__ float lane_sum(const Pack<kWidth>& vector) {
  if constexpr (kWidth == 1) {
    return to_float(vector.lane[0]);
  } else {
    const Pack<kWidth / 2>* halves = reinterpret_cast<const Pack<kWidth / 2>*>(&vector);
    return lane_sum(halves[0]) + lane_sum(halves[1]);
  }
}

__device__ __forceinline__ float warp_sum(float value) {
  return warp_all_reduce(value, [](float a, float b) { return a + b; });
}

// The sum of every thread's value, valid in thread 0.
template <int kBlock, bool kShuffleTree>
__device__ __forceinline__ float block_sum(float value, float* scratch) {
  if constexpr (kShuffleTree) {
    constexpr int kWarps = kBlock / 32;
    value = warp_sum(value);
    if (kWarps == 1) return value;
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = value;
    __syncthreads();
    value = threadIdx.x < kWarps ? scratch[threadIdx.x] : 0.0f;
    if (threadIdx.x < 32) value = warp_sum(value);
    return value;
  } else {
    scratch[threadIdx.x] = value;
    __syncthreads();
#pragma unroll
    for (int half = kBlock / 2; half > 0; half >>= 1) {
      if (threadIdx.x < half) scratch[threadIdx.x] += scratch[threadIdx.x + half];
      __syncthreads();
    }
    return scratch[0];
  }
}

template <int kBlock, int kVec, int kItems, bool kShuffleTree>
__global__ void __launch_bounds__(kBlock) reduce_sum(long long n, const Element* __restrict__ input,
                                                    float* __restrict__ partials, unsigned int* counter,
                                                    float* __restrict__ result) {
  using Vector = Pack<kVec>;
  __shared__ float scratch[kShuffleTree ? kBlock / 32 : kBlock];
  __shared__ bool last_block;
  const long long vectors = n / kVec;
  const Vector* in = reinterpret_cast<const Vector*>(input);

  float accumulators[kItems];
#pragma unroll
  for (int item = 0; item < kItems; ++item) accumulators[item] = 0.0f;
  const long long block_span = (long long)kBlock * kItems;
  for (long long base = (long long)blockIdx.x * block_span + threadIdx.x; base < vectors;
       base += (long long)gridDim.x * block_span) {
    Vector loaded[kItems];
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const long long index = base + (long long)item * kBlock;
      if (index < vectors) loaded[item] = in[index];
    }
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const long long index = base + (long long)item * kBlock;
      if (index < vectors) accumulators[item] += lane_sum(loaded[item]);
    }
  }
  float thread_total = 0.0f;
#pragma unroll
  for (int item = 0; item < kItems; ++item) thread_total += accumulators[item];

  const float block_total = block_sum<kBlock, kShuffleTree>(thread_total, scratch);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block_total;
    // Make the partial visible device-wide before announcing it; atomicInc wraps to 0 at gridDim.x - 1, so the
    // counter is back at 0 for the next launch without a memset.
    __threadfence();
    last_block = atomicInc(counter, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  float partial_total = 0.0f;
  for (unsigned int block = threadIdx.x; block < gridDim.x; block += kBlock) {
    partial_total += __ldcg(&partials[block]);  // L2, not a stale L1 line
  }
  if constexpr (!kShuffleTree) __syncthreads();  // the shared tree reuses scratch
  const float total = block_sum<kBlock, kShuffleTree>(partial_total, scratch);
  if (threadIdx.x == 0) *result = total;
}
