// Activation functions of fused epilogues, on fp32 values.
#pragma once

// The exact GELU, x / 2 * (1 + erf(x / sqrt 2)): PyTorch's default (approximate='none'), computed as PyTorch's CUDA
// kernel computes it in fp32. erff is accurate to 2 ulp; tests/compile_templates_on_host_test.cpp holds the formula
// against a double-precision reference.
__device__ __forceinline__ float gelu(float value) { return 0.5f * value * (1.0f + erff(value * 0.70710678118654752f)); }

// SiLU, x / (1 + exp(-x)), on the fp32 value, as templates/silu_mul.cu computes it (the gated GEMM epilogue and the
// separate product kernel give the same bits for the same fp32 inputs).
__device__ __forceinline__ float silu(float value) { return value / (1.0f + __expf(-value)); }
