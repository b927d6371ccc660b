// What the shipped templates use beyond tests/data/verify/host_emulation.h, so that a CPU test can run a template's
// single-warp paths on host threads: CUDA's qualifiers and vector types, and stand-ins for the device functions that
// those paths name (most only appear on paths the tests do not instantiate; those abort if ever called).
#pragma once
#include <atomic>
#include <cmath>
#include <cstdlib>

#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__  // blocks of one warp: the per-thread copies are never shared (row_reduce's slots need >1 warp)

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

inline float rsqrtf(float value) { return 1.0f / std::sqrt(value); }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline int atomicAdd(int* address, int value) { return std::atomic_ref(*address).fetch_add(value); }
// Barriers among several warps, fences and shared-memory addresses have no meaning for one warp on host threads.
[[noreturn]] inline void __syncthreads() { std::abort(); }
[[noreturn]] inline void __threadfence() { std::abort(); }
[[noreturn]] inline unsigned long long __cvta_generic_to_shared(const void*) { std::abort(); }
