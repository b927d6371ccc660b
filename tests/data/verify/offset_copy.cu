// out[i] = 3 * in[i] - 1, with the off-by-one bugs that verify.yaml's BUG parameter plants.
// Written in the subset that host_emulation.h also runs on the CPU.
template <int kBug>
__global__ void offset_copy(long long n, const float* __restrict__ input, float* __restrict__ output) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long bound = kBug == 1 ? n - 1 : n;                       // BUG 1: `i < n - 1`
  if (i >= bound) return;
  const long long source = kBug == 2 && i + 1 < n ? i + 1 : i;        // BUG 2: reads in[i + 1]
  output[i] = 3.0f * input[source] - 1.0f;
}
