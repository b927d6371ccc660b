// SAXPY, y = a * x + y, as a tunable template.
// The tuner defines every parameter as a macro (BLOCK, VEC, ...) and instantiates saxpy<BLOCK, VEC, ITEMS,
// GRID_STRIDE>; template parameters therefore carry other names (kBlock, ...) so the macros cannot clash.
//   BLOCK        threads per block (also bounds registers through __launch_bounds__)
//   VEC          floats per vector load: 1, 2 or 4 (float, float2, float4)
//   ITEMS        vectors each thread handles per grid step (independent loads in flight)
//   GRID_STRIDE  false: one-shot grid covering n; true: a fixed grid striding over n
// n must be a multiple of VEC (the space's constraint N % VEC == 0 guarantees it).

template <int kWidth> struct VectorOf;
template <> struct VectorOf<1> { using type = float; };
template <> struct VectorOf<2> { using type = float2; };
template <> struct VectorOf<4> { using type = float4; };

__device__ __forceinline__ float axpy_lane(float a, float x, float y) { return fmaf(a, x, y); }
__device__ __forceinline__ float2 axpy_lane(float a, float2 x, float2 y) {
  return make_float2(fmaf(a, x.x, y.x), fmaf(a, x.y, y.y));
}
__device__ __forceinline__ float4 axpy_lane(float a, float4 x, float4 y) {
  return make_float4(fmaf(a, x.x, y.x), fmaf(a, x.y, y.y), fmaf(a, x.z, y.z), fmaf(a, x.w, y.w));
}

template <int kBlock, int kVec, int kItems, bool kGridStride>
__global__ void __launch_bounds__(kBlock) saxpy(long long n, float a, const float* __restrict__ x,
                                               float* __restrict__ y) {
  using Vector = typename VectorOf<kVec>::type;
  const long long vectors = n / kVec;
  const Vector* xv = reinterpret_cast<const Vector*>(x);
  Vector* yv = reinterpret_cast<Vector*>(y);
  // Each block owns kBlock * kItems consecutive vectors per step; thread t touches t, t + kBlock, ... so every load
  // instruction of a warp is coalesced.
  const long long step = kGridStride ? (long long)gridDim.x * kBlock * kItems : 0;
  for (long long base = (long long)blockIdx.x * kBlock * kItems + threadIdx.x; base < vectors; base += step) {
    Vector xs[kItems];
    Vector ys[kItems];
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const long long index = base + (long long)item * kBlock;
      if (index < vectors) {
        xs[item] = xv[index];
        ys[item] = yv[index];
      }
    }
#pragma unroll
    for (int item = 0; item < kItems; ++item) {
      const long long index = base + (long long)item * kBlock;
      if (index < vectors) yv[index] = axpy_lane(a, xs[item], ys[item]);
    }
    if (!kGridStride) break;
  }
}
