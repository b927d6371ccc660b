// Attention forward, O = softmax(scale * Q K^T [+ causal mask]) V, per (batch, head), fp32 accumulation.
//
// Q, K, V and O are dense row-major [batch * heads][sequence][head dimension] tensors of 16-bit elements (the
// "BHSD" layout PyTorch's scaled_dot_product_attention takes). Every (batch, head) pair is independent; the grid's
// y (or x) dimension walks them.
//
// Two paths chosen by the enumeration parameter PATH, so one spec verifies one against the other:
//   reference  CUDA-core fp32 arithmetic, one warp per query row at a time, K and V staged through shared memory,
//              exact exp and division (attention/reference.cuh): the verification reference;
//   wgmma      FlashAttention-style on Hopper tensor cores (sm_90a): TMA loads of K and V tiles by a producer warp,
//              consumer warpgroups computing S = Q K^T and O += P V with wgmma, the softmax online in registers
//              (attention/wgmma.cuh).
// The spec chooses the element type (-DATTENTION_INPUT_BF16 or -DATTENTION_INPUT_F16); the space derives
// AT_HEAD_DIM and AT_CAUSAL from the problem. The tensor maps describe Q, K and V for TMA (the reference path
// ignores them).
#include "common/async_copy.cuh"
#include "common/element_16bit.cuh"

#if defined(ATTENTION_INPUT_BF16)
using Element = __nv_bfloat16;
#elif defined(ATTENTION_INPUT_F16)
using Element = __half;
#else
#error "the spec must define ATTENTION_INPUT_BF16 or ATTENTION_INPUT_F16"
#endif

#define NEGATIVE_INFINITY __int_as_float(0xff800000)

constexpr int head_dim = AT_HEAD_DIM;
constexpr bool causal = AT_CAUSAL;

#if PATH_reference
#include "attention/reference.cuh"
#elif PATH_wgmma
#include "attention/wgmma.cuh"
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    attention(int sequence, float scale, const Element* __restrict__ q, const Element* __restrict__ k,
              const Element* __restrict__ v, Element* __restrict__ o, const __grid_constant__ TensorMap q_map,
              const __grid_constant__ TensorMap k_map, const __grid_constant__ TensorMap v_map) {
  attention_path(sequence, scale, q, k, v, o, q_map, k_map, v_map);
}
