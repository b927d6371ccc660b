// The SiLU-gated product of a gated MLP (Llama's gate/up projection), as a tunable template:
//   out[r][c] = silu(gate_up[r][c]) * gate_up[r][cols + c],   silu(x) = x / (1 + exp(-x))
// gate_up is the output of one fused gate/up projection, rows x (2 * cols): the gate's cols columns, then the up
// projection's. Element type: __nv_bfloat16 (or __half with -DSILU_MUL_F16); the arithmetic is fp32, rounded once.
// Every parameter is a macro, so the template parameters carry k-prefixed names.
//   BLOCK   threads per block
//   VEC     elements per vector access: cols must be a multiple of VEC (the space's constraint), so every vector
//           lies inside one row and is aligned
//   ITEMS   vectors per thread: loads in flight before the first store
// The grid is rows x column chunks of BLOCK * VEC * ITEMS elements: blockIdx.x is the row (up to 2^31 - 1 rows),
// blockIdx.y the chunk. A chunk's vectors past the row's end are neither loaded nor stored.
#include "common/element_16bit.cuh"
#ifdef SILU_MUL_F16
using Element = __half;
#else
using Element = __nv_bfloat16;
#endif

template <int kWidth> using Pack = VectorOf<Element, kWidth>;

__device__ __forceinline__ float silu(float value) { return value / (1.0f + __expf(-value)); }

template <int kBlock, int kVec, int kItems>
__global__ void __launch_bounds__(kBlock)
    silu_mul(int rows, int cols, const Element* __restrict__ gate_up, Element* __restrict__ output) {
  using Vector = Pack<kVec>;
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const int row_vectors = cols / kVec;
  const Vector* gate = reinterpret_cast<const Vector*>(gate_up + row * 2 * cols);
  const Vector* up = gate + row_vectors;
  Vector* out = reinterpret_cast<Vector*>(output + row * cols);
  // A thread's vectors are kBlock apart, so each warp-wide access is one contiguous segment.
  const int first = blockIdx.y * kBlock * kItems + threadIdx.x;
  Vector gates[kItems];
  Vector ups[kItems];
#pragma unroll
  for (int item = 0; item < kItems; ++item) {
    const int index = first + item * kBlock;
    if (index < row_vectors) {
      gates[item] = gate[index];
      ups[item] = up[index];
    }
  }
#pragma unroll
  for (int item = 0; item < kItems; ++item) {
    const int index = first + item * kBlock;
    if (index >= row_vectors) continue;
    Vector result;
#pragma unroll
    for (int lane = 0; lane < kVec; ++lane)
      result.lane[lane] = from_float<Element>(silu(to_float(gates[item].lane[lane])) * to_float(ups[item].lane[lane]));
    out[index] = result;
  }
}
