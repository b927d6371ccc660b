// Vector add, c = a + b, as a tunable template: two streams in, one out, no reuse, so its speed is the memory's.
// Every parameter is a macro (BLOCK, VEC, ...), so the template parameters carry k-prefixed names.
//   BLOCK        threads per block
//   VEC          floats per vector access: 1, 2 or 4 (float, float2, float4)
//   ITEMS        vectors per thread per step: independent loads in flight before the first store
//   GRID_STRIDE  false: a one-shot grid covering n; true: sm_count * BLOCKS_PER_SM blocks striding over n
// n must be a multiple of VEC (the space's constraint).

template <int kWidth> struct FloatVector;
template <> struct FloatVector<1> { using type = float; };
template <> struct FloatVector<2> { using type = float2; };
template <> struct FloatVector<4> { using type = float4; };

__device__ __forceinline__ float add_lanes(float a, float b) { return a + b; }
__device__ __forceinline__ float2 add_lanes(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float4 add_lanes(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

template <int kBlock, int kVec, int kItems, bool kGridStride>
__global__ void __launch_bounds__(kBlock) vector_add(long long n, const float* __restrict__ a,
                                                    const float* __restrict__ b, float* __restrict__ c) {
  using Vector = typename FloatVector<kVec>::type;
  const long long vectors = n / kVec;
  const Vector* av = reinterpret_cast<const Vector*>(a);
  const Vector* bv = reinterpret_cast<const Vector*>(b);
  Vector* cv = reinterpret_cast<Vector*>(c);
  const long long block_span = (long long)kBlock * kItems;
  // A thread's vectors are kBlock apart, so each warp-wide access is one contiguous segment.
  for (long long base = (long long)blockIdx.x * block_span + threadIdx.x; base < vectors;
       base += (long long)gridDim.x * block_span) {
    Vector left[kItems];
    Vector right[kItems];
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const long long index = base + (long long)item * kBlock;
      if (index < vectors) {
        left[item] = av[index];
        right[item] = bv[index];
      }
    }
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const long long index = base + (long long)item * kBlock;
      if (index < vectors) cv[index] = add_lanes(left[item], right[item]);
    }
    if (!kGridStride) break;
  }
}
