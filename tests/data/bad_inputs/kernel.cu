// The template of the bad-input corpus (tests/cli_bad_inputs_test.cpp): each spec here is wrong in one way, never
// this file. `tune compile-check good.yaml` compiles it.
__global__ void scale(float* x, long long n) {
  long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
