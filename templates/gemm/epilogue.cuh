// What every GEMM path does to an element of C after alpha * A * B + beta * C, chosen by the spec's compile options
// (issue 19: the epilogues a transformer block fuses into its GEMMs):
//   (none)                          C = alpha * A * B + beta * C
//   -DGEMM_EPILOGUE_BIAS_GELU       C = gelu(alpha * A * B + beta * C + bias[column])
//   -DGEMM_EPILOGUE_BIAS_RESIDUAL   C = alpha * A * B + beta * C + bias[column] + residual[row][column]
//   -DGEMM_EPILOGUE_SILU_GATED      C[row][j] = silu(P[row][2 j]) * P[row][2 j + 1], P = alpha * A * B
// bias (N elements) and residual (M x N, row-major) have C's type; the kernel takes them after b (gemm.cu). GELU is
// the exact one, x / 2 * (1 + erf(x / sqrt 2)), PyTorch's default, on the fp32 value: the result is rounded to C's
// type once.
// The SiLU-gated epilogue is a gated MLP's gate and up projections and their product in one GEMM (issue 34): B's
// n columns interleave the two weights (column 2 j the gate's j-th, column 2 j + 1 the up projection's), so each
// thread's pair of adjacent accumulators (column even) holds both factors of one output, and C is m x n / 2, half
// the bytes a separate product kernel would read back. n must be even; beta is ignored (C has another shape than P,
// so there is no C to scale), and a pair is never split by a tile edge because tiles are whole pairs wide.
// The extra inputs are read with __ldg: read-only loads (ld.global.nc) that the compiler may move ahead of the
// stores to C, so a path's residual loads are in flight together instead of one after each store.
#pragma once

#include "common/activation.cuh"

#if defined(GEMM_EPILOGUE_BIAS_GELU) + defined(GEMM_EPILOGUE_BIAS_RESIDUAL) + defined(GEMM_EPILOGUE_SILU_GATED) > 1
#error "a GEMM spec chooses one epilogue"
#endif
#if defined(GEMM_EPILOGUE_SILU_GATED) && defined(GEMM_INPUT_TF32)
#error "the SiLU-gated epilogue takes 16-bit inputs (the tf32 path stores C transposed, one element at a time)"
#endif
#ifdef GEMM_EPILOGUE_SILU_GATED
constexpr bool gated_epilogue = true;
#else
constexpr bool gated_epilogue = false;
#endif
#if defined(GEMM_EPILOGUE_BIAS_GELU) || defined(GEMM_EPILOGUE_BIAS_RESIDUAL)
#define GEMM_EPILOGUE_HAS_BIAS 1
#else
#define GEMM_EPILOGUE_HAS_BIAS 0
#endif
#ifdef GEMM_EPILOGUE_BIAS_RESIDUAL
#define GEMM_EPILOGUE_HAS_RESIDUAL 1
#else
#define GEMM_EPILOGUE_HAS_RESIDUAL 0
#endif

// The epilogue's inputs, and the kernel parameters that carry them (between b and c).
struct Epilogue {
#if GEMM_EPILOGUE_HAS_BIAS
  const Output* bias;
#endif
#if GEMM_EPILOGUE_HAS_RESIDUAL
  const Output* residual;
#endif
};
#if GEMM_EPILOGUE_HAS_RESIDUAL
#define GEMM_EPILOGUE_PARAMETERS const Output* __restrict__ bias, const Output* __restrict__ residual,
#define GEMM_EPILOGUE_INPUTS {bias, residual}
#elif GEMM_EPILOGUE_HAS_BIAS
#define GEMM_EPILOGUE_PARAMETERS const Output* __restrict__ bias,
#define GEMM_EPILOGUE_INPUTS {bias}
#else
#define GEMM_EPILOGUE_PARAMETERS
#define GEMM_EPILOGUE_INPUTS {}
#endif

// Two adjacent elements of C's type as fp32, with one read-only load (8 bytes of fp32, 4 of 16-bit types).
__device__ __forceinline__ float2 load_two_read_only(const float* source) {
  return __ldg(reinterpret_cast<const float2*>(source));
}
__device__ __forceinline__ float2 load_two_read_only(const __half* source) {
  return __half22float2(__ldg(reinterpret_cast<const __half2*>(source)));
}
__device__ __forceinline__ float2 load_two_read_only(const __nv_bfloat16* source) {
  return __bfloat1622float2(__ldg(reinterpret_cast<const __nv_bfloat162*>(source)));
}

// One element: value is alpha * A * B + beta * C of element (row, column) of C, whose rows are n elements long.
__device__ __forceinline__ float apply_epilogue([[maybe_unused]] const Epilogue& epilogue, float value,
                                                [[maybe_unused]] int row, [[maybe_unused]] int column,
                                                [[maybe_unused]] int n) {
#if GEMM_EPILOGUE_HAS_BIAS
  value += to_float(__ldg(epilogue.bias + column));
#endif
#if GEMM_EPILOGUE_HAS_RESIDUAL
  value += to_float(__ldg(epilogue.residual + static_cast<long long>(row) * n + column));
#endif
#ifdef GEMM_EPILOGUE_BIAS_GELU
  value = gelu(value);
#endif
  return value;
}

// What the epilogue adds to two adjacent elements (column even) before any activation: the bias, plus the residual
// with GEMM_EPILOGUE_BIAS_RESIDUAL, each read with one access. For paths that load them ahead of the stores.
__device__ __forceinline__ float2 epilogue_addends_two([[maybe_unused]] const Epilogue& epilogue,
                                                       [[maybe_unused]] int row, [[maybe_unused]] int column,
                                                       [[maybe_unused]] int n) {
  float2 addends = make_float2(0.0f, 0.0f);
#if GEMM_EPILOGUE_HAS_BIAS
  addends = load_two_read_only(epilogue.bias + column);
#endif
#if GEMM_EPILOGUE_HAS_RESIDUAL
  const float2 residual = load_two_read_only(epilogue.residual + static_cast<long long>(row) * n + column);
  addends.x += residual.x;
  addends.y += residual.y;
#endif
  return addends;
}

// Stores two adjacent elements (column even) of the product, the epilogue applied: into C at (row, column), or with
// the SiLU-gated epilogue their gated product into column / 2 of C's n / 2 columns.
__device__ __forceinline__ void store_output_two(Output* c, int row, int column, int n, float first, float second) {
  if constexpr (gated_epilogue) {
    c[static_cast<long long>(row) * (n / 2) + column / 2] = from_float<Output>(silu(first) * second);
  } else {
    store_two(c + static_cast<long long>(row) * n + column, first, second);
  }
}

// Two adjacent elements (column even), their bias and residual read with one access each.
__device__ __forceinline__ void apply_epilogue_two([[maybe_unused]] const Epilogue& epilogue,
                                                   [[maybe_unused]] float& first, [[maybe_unused]] float& second,
                                                   [[maybe_unused]] int row, [[maybe_unused]] int column,
                                                   [[maybe_unused]] int n) {
#if GEMM_EPILOGUE_HAS_BIAS
  const float2 bias = load_two_read_only(epilogue.bias + column);
  first += bias.x;
  second += bias.y;
#endif
#if GEMM_EPILOGUE_HAS_RESIDUAL
  const float2 residual = load_two_read_only(epilogue.residual + static_cast<long long>(row) * n + column);
  first += residual.x;
  second += residual.y;
#endif
#ifdef GEMM_EPILOGUE_BIAS_GELU
  first = gelu(first);
  second = gelu(second);
#endif
}
