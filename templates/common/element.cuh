// Element types shared by the templates: conversions to and from the fp32 arithmetic every template does, and
// vectors of elements moved with one access.
//
// fp32 only here: the 16-bit types live in element_16bit.cuh, which a template includes only when its spec asks for
// them, so fp32 configurations do not pay NVRTC for parsing cuda_fp16.h and cuda_bf16.h.
#pragma once

__device__ __forceinline__ float to_float(float value) { return value; }

template <typename T> __device__ __forceinline__ T from_float(float value);
template <> __device__ __forceinline__ float from_float<float>(float value) { return value; }

// kWidth adjacent elements, aligned so that one vector is one load or store (at most 16 bytes where it is used).
template <typename T, int kWidth> struct alignas(sizeof(T) * kWidth) VectorOf {
  T lane[kWidth];
};
