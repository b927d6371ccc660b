// Runs the tuner's CUDA kernels on host threads, so a CPU test can execute the very source that verification
// compiles for the GPU (compare_kernel_source(), fill_kernel_source()) instead of a copy of its logic. Covers what
// those kernels use: thread and block indices, warp shuffles (one warp per block, its lanes as std::threads
// meeting at a barrier), 64-bit atomics, bit casts and double arithmetic rounded once per operation. Inline PTX
// is compiled out, so the f16 comparison (its only asm) is not usable.
#pragma once
#include <math.h>

#include <atomic>
#include <barrier>
#include <bit>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

// The CUDA toolkit's headers (cuda_fp16.h, cuda_bf16.h), where a build includes them first for the 16-bit types,
// define these as attributes the host compiler does not know.
#undef __global__
#undef __device__
#define __global__
#define __device__
#define asm(...) ((void)0)

struct HostDim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local HostDim3 threadIdx, blockIdx;
inline HostDim3 blockDim, gridDim;

inline std::barrier<>* warp_barrier = nullptr;
inline std::uint64_t shuffle_slots[32];

template <typename T>
T __shfl_xor_sync(unsigned, T value, int offset) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t));
  const unsigned lane = threadIdx.x & 31;
  std::memcpy(&shuffle_slots[lane], &value, sizeof(T));
  warp_barrier->arrive_and_wait();  // every lane has published its value
  T other;
  std::memcpy(&other, &shuffle_slots[lane ^ static_cast<unsigned>(offset)], sizeof(T));
  warp_barrier->arrive_and_wait();  // every lane has read before the next shuffle overwrites
  return other;
}

inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  return std::atomic_ref(*address).fetch_add(value);
}
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
  std::atomic_ref word(*address);
  unsigned long long seen = word.load();
  while (value < seen && !word.compare_exchange_weak(seen, value)) {}
  return seen;
}
inline unsigned long long atomicMax(unsigned long long* address, unsigned long long value) {
  std::atomic_ref word(*address);
  unsigned long long seen = word.load();
  while (value > seen && !word.compare_exchange_weak(seen, value)) {}
  return seen;
}
inline long long __double_as_longlong(double value) { return std::bit_cast<long long>(value); }
inline float __uint_as_float(unsigned value) { return std::bit_cast<float>(value); }
inline unsigned __float_as_uint(float value) { return std::bit_cast<unsigned>(value); }
// One rounding each, as on the GPU: the host library is built with -ffp-contract=off (host_library_support.h).
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }

// A kernel that uses warp shuffles: blocks of exactly one warp, run one block after another (x fastest).
template <typename Kernel, typename... Arguments>
void launch_warps(HostDim3 grid, Kernel kernel, Arguments... arguments) {
  gridDim = grid;
  blockDim = {32, 1, 1};
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        std::barrier<> barrier(32);
        warp_barrier = &barrier;
        std::vector<std::thread> lanes;
        for (unsigned lane = 0; lane < 32; ++lane) {
          lanes.emplace_back([&, lane] {
            threadIdx = {lane, 0, 0};
            blockIdx = {x, y, z};
            kernel(arguments...);
          });
        }
        for (std::thread& lane : lanes) lane.join();
      }
}
template <typename Kernel, typename... Arguments>
void launch_warps(unsigned grid, Kernel kernel, Arguments... arguments) {
  launch_warps(HostDim3{grid, 1, 1}, kernel, arguments...);
}

// A kernel whose threads never meet (no barrier, no shuffle): every thread in turn on the calling thread.
template <typename Kernel, typename... Arguments>
void launch_sequential(unsigned grid, unsigned block, Kernel kernel, Arguments... arguments) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < block; ++t) {
      blockIdx = {b, 0, 0};
      threadIdx = {t, 0, 0};
      kernel(arguments...);
    }
}
