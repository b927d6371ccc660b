// Prefetches into L2 (sm_90): one thread asks the TMA unit to bring a contiguous run of global memory into L2, so
// later loads of it hit there instead of waiting on DRAM. Nothing lands in shared memory and nothing waits for it.
// The sm_90 form is only emitted where a template calls it, so a template that includes this header still compiles
// for sm_80.
#pragma once

// `bytes` (a multiple of 16, the address 16-byte aligned) of global memory into L2. A hint: it completes on nothing
// and may be dropped.
__device__ __forceinline__ void prefetch_to_l2(const void* source, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(source), "r"(bytes) : "memory");
}
