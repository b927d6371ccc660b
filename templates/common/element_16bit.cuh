// The 16-bit element types (fp16, bf16) beside fp32: their conversions, rounding to nearest even.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "common/element.cuh"

__device__ __forceinline__ float to_float(__half value) { return __half2float(value); }
__device__ __forceinline__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }

template <> __device__ __forceinline__ __half from_float<__half>(float value) { return __float2half_rn(value); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}
