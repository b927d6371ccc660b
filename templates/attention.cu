// Attention forward, O = softmax(scale * Q K^T [+ causal mask]) V, per (batch, head), fp32 accumulation.
//
// Q and O hold `sequence` query rows of AT_HEADS heads, K and V `keys` rows (keys >= sequence: a prefill against a
// cache of keys - sequence earlier tokens) of AT_HEADS / AT_KV_GROUP key/value heads: query head h reads key/value
// head h / AT_KV_GROUP (grouped-query attention; 1 is multi-head, AT_HEADS multi-query). Rows of head_dim 16-bit
// elements, in one of two layouts (AT_LAYOUT, the problem's LAYOUT):
//   0  [batch][heads][rows][head_dim] ("BHSD", what PyTorch's scaled_dot_product_attention takes)
//   1  [batch][rows][heads][head_dim] ("BSHD", what a QKV projection writes: no transpose needed)
// In layout 1, Q's rows lie AT_Q_ROW_STRIDE elements apart and K's and V's AT_KV_ROW_STRIDE (the problem's Q_ROW_STRIDE
// and KV_ROW_STRIDE, or packed heads where those are 0): q, k and v may be views into one fused QKV projection output,
// rows of (heads + 2 kv heads) x head_dim elements (issue 33). O is always packed.
// Causal masking aligns the last query with the last key: query i sees keys 0 .. i + keys - sequence. Any sequence
// length >= 1: the wgmma path's TMA loads zero-fill past the end, scores of keys past the end are masked, and query
// rows past the end are never stored.
//
// Two paths chosen by the enumeration parameter PATH, so one spec verifies one against the other:
//   reference  CUDA-core fp32 arithmetic, one warp per query row at a time, K and V staged through shared memory,
//              exact exp and division (attention/reference.cuh): the verification reference;
//   wgmma      FlashAttention-style on Hopper tensor cores (sm_90a): TMA loads of K and V tiles by a producer warp,
//              consumer warpgroups computing S = Q K^T and O += P V with wgmma, the softmax online in registers
//              (attention/wgmma.cuh).
// The spec chooses the element type (-DATTENTION_INPUT_BF16 or -DATTENTION_INPUT_F16); the space derives
// AT_HEAD_DIM, AT_CAUSAL, AT_HEADS, AT_KV_GROUP, AT_LAYOUT, AT_Q_ROW_STRIDE and AT_KV_ROW_STRIDE from the problem. The tensor maps describe Q, K and V
// for TMA as 4-D tensors (the reference path ignores them).
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
constexpr int heads = AT_HEADS;                 // query heads
constexpr int kv_group = AT_KV_GROUP;           // query heads per key/value head
constexpr bool rows_outside_heads = AT_LAYOUT == 1;  // BSHD
// BSHD: elements from one token's row to the next, at least the heads' (the space checks); BHSD tensors are packed.
constexpr long long q_row_stride = AT_Q_ROW_STRIDE;
constexpr long long kv_row_stride = AT_KV_ROW_STRIDE;
constexpr long long o_row_stride = static_cast<long long>(heads) * head_dim;

static_assert(heads % kv_group == 0, "key/value heads divide the query heads");
static_assert(!rows_outside_heads || (q_row_stride >= o_row_stride && kv_row_stride >= o_row_stride / kv_group),
              "a token's row holds at least its heads");

// The element offset of row `row` of head `head` of batch `batch`, in a tensor of `head_count` heads of `rows` rows;
// BSHD rows lie row_stride elements apart.
__device__ __forceinline__ long long row_offset(int batch, int head, int row, int head_count, int rows,
                                                long long row_stride) {
  if constexpr (rows_outside_heads) {
    return (static_cast<long long>(batch) * rows + row) * row_stride + static_cast<long long>(head) * head_dim;
  } else {
    return ((static_cast<long long>(batch) * head_count + head) * rows + row) * head_dim;
  }
}

#if PATH_reference
#include "attention/reference.cuh"
#elif PATH_wgmma
#include "attention/wgmma.cuh"
#endif

// -DATTENTION_LOG_SUM_EXP (the *_lse specs): the kernel also writes, for every query row, the natural logarithm of its
// softmax denominator, log(sum over the keys it sees of exp(scale q k)), into lse[batch][head][row] (fp32, whatever
// the layout): what a backward pass or a split-KV decode combines partial results with.
#if defined(ATTENTION_LOG_SUM_EXP)
#define ATTENTION_LSE_PARAMETER float* __restrict__ lse,
#define ATTENTION_LSE_ARGUMENT lse
#else
#define ATTENTION_LSE_PARAMETER
#define ATTENTION_LSE_ARGUMENT nullptr
#endif

// The wgmma path may run in thread-block clusters (AT_KV_SHARE > 1: the query heads of a cluster share K / V tiles).
#ifndef ATTENTION_CLUSTER_DIMS
#define ATTENTION_CLUSTER_DIMS
#endif

extern "C" __global__ void ATTENTION_CLUSTER_DIMS __launch_bounds__(THREADS, 1)
    attention(int sequence, int keys, float scale, const Element* __restrict__ q, const Element* __restrict__ k,
              const Element* __restrict__ v, Element* __restrict__ o, ATTENTION_LSE_PARAMETER
              const __grid_constant__ TensorMap q_map, const __grid_constant__ TensorMap k_map,
              const __grid_constant__ TensorMap v_map) {
  attention_path(sequence, keys, scale, q, k, v, o, ATTENTION_LSE_ARGUMENT, q_map, k_map, v_map);
}
