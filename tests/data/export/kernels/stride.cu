// Doubles n floats with a grid-stride loop. Its grid, sm_count * PER_SM blocks, is bound at launch: the loop strides
// by gridDim, so one cubin serves every board of an arch whatever its SM count (issue 36).
__global__ void stride(float* x, long long n) {
  const long long step = gridDim.x * static_cast<long long>(blockDim.x);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += step) x[i] *= 2.0f;
}
