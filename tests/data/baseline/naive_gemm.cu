// A deliberately simple GEMM for the baseline test: one output per thread, row-major, C = alpha*A*B + beta*C.
// It takes a tensor map and a scalar after it, so a wrong parameter layout (the map is 128 bytes, 64-aligned) or a
// map the worker did not encode shows up as a wrong result. BUG 1 drops the last k term: verification against the
// cuBLAS reference must reject it.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

extern "C" __global__ void naive_gemm(int m, int n, int k, float alpha, float beta, const float* a, const float* b,
                                      float* c, const __grid_constant__ TensorMap a_map, float scale) {
  const int column = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || column >= n) return;
  bool encoded = false;
  for (int word = 0; word < 16; ++word) encoded |= a_map.opaque[word] != 0;
  float sum = 0;
  for (int i = 0; i < k - BUG; ++i) sum = fmaf(a[row * k + i], b[i * n + column], sum);
  const float value = alpha * sum + beta * c[row * n + column];
  c[row * n + column] = encoded ? value * scale : __int_as_float(0x7fffffff);
}
