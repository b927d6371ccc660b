// A kernel with planted faults, one per value of FAULT, to prove that the tuner classifies each and goes on:
//   0 none (correct copy), 1 out-of-bounds write far away (illegal address), 2 endless loop (timeout),
//   3 block too large for the device (resources_exceeded; the geometry asks for 2048 threads),
//   4 does not compile (compile_error), 5 skips one element (wrong_result).
#if FAULT == 4
#error "planted compile failure (FAULT == 4)"
#endif

template <int kBlock>
__global__ void faults(long long n, const float* __restrict__ input, float* __restrict__ output) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if FAULT == 1
  if (i == 0) output[n + (1LL << 36)] = 1.0f;  // 256 GiB past the end: not mapped
#endif
#if FAULT == 2
  if (i == 0) {
    // clock64() is a volatile read the compiler cannot hoist: the loop really never ends (a plain `while (1)`
    // without side effects may be removed under C++ forward-progress rules).
    const long long start = clock64();
    while (clock64() >= start) {}
  }
#endif
#if FAULT == 5
  if (i == n / 2) return;
#endif
  output[i] = 2.0f * input[i] + (float)(kBlock % 1);
}
