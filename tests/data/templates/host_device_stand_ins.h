// What the shipped templates use beyond tests/data/verify/host_emulation.h, so that a CPU test can run a template's
// single-warp paths on host threads: CUDA's qualifiers and vector types, and stand-ins for the device functions that
// those paths name (most only appear on paths the tests do not instantiate; those abort if ever called).
//
// Shared memory, two ways chosen per build:
//   default                       `__shared__` variables are per thread and __syncthreads aborts: paths whose lanes
//                                 never read each other's shared data (layernorm's; its dynamic shared memory is
//                                 declared `extern __shared__`, which cannot be static);
//   HOST_BLOCK_SHARED_MEMORY      `__shared__` variables are static, so the 32 lanes of a block see one array (blocks
//                                 run one after another, launch_warps, so no two blocks use it at once), and
//                                 __syncthreads is the warp's barrier (attention's reference path, which stages key
//                                 and value tiles that every lane reads).
// A build that needs the CUDA toolkit's 16-bit types includes cuda_fp16.h and cuda_bf16.h before these stand-ins:
// then the toolkit's vector types are used and its attribute macros replaced.
#pragma once
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>

#undef __forceinline__
#undef __shared__
#undef __grid_constant__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#ifdef HOST_BLOCK_SHARED_MEMORY
#define __shared__ static
inline void __syncthreads() { warp_barrier->arrive_and_wait(); }
#else
#define __shared__
// Barriers among several warps have no meaning for one warp whose lanes share nothing.
[[noreturn]] inline void __syncthreads() { std::abort(); }
#endif

#ifndef __VECTOR_TYPES_H__  // the toolkit's vector_types.h (included by cuda_fp16.h) defines them
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
#endif

inline float rsqrtf(float value) { return 1.0f / std::sqrt(value); }
// The device's __expf is an approximation (ex2.approx); the host's exact exponential is within its error.
inline float __expf(float value) { return std::exp(value); }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline int atomicAdd(int* address, int value) { return std::atomic_ref(*address).fetch_add(value); }
inline float __int_as_float(int value) { return std::bit_cast<float>(value); }
// Fences and shared-memory addresses have no meaning for one warp on host threads.
[[noreturn]] inline void __threadfence() { std::abort(); }
[[noreturn]] inline unsigned long long __cvta_generic_to_shared(const void*) { std::abort(); }
