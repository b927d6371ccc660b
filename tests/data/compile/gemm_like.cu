// Benchmark template of the compile module: a shared-memory tiled GEMM with register blocking, so each
// configuration unrolls into different code of realistic size. C = A * B, row-major, M x K times K x N.
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int THREAD_M, int THREAD_N, bool DOUBLE_BUFFER>
__global__ void gemm_like(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                          int n, int k) {
  constexpr int threads_n = BLOCK_N / THREAD_N;
  constexpr int threads = (BLOCK_M / THREAD_M) * threads_n;
  constexpr int stages = DOUBLE_BUFFER ? 2 : 1;
  __shared__ float tile_a[stages][BLOCK_K][BLOCK_M + 1];
  __shared__ float tile_b[stages][BLOCK_K][BLOCK_N + 1];

  const int thread_row = threadIdx.x / threads_n;
  const int thread_column = threadIdx.x % threads_n;
  const int block_row = blockIdx.y * BLOCK_M;
  const int block_column = blockIdx.x * BLOCK_N;

  float accumulator[THREAD_M][THREAD_N] = {};
  float fragment_a[THREAD_M];
  float fragment_b[THREAD_N];

  auto load_tiles = [&](int stage, int k_base) {
#pragma unroll
    for (int index = threadIdx.x; index < BLOCK_M * BLOCK_K; index += threads) {
      int row = index / BLOCK_K, column = index % BLOCK_K;
      int global_row = block_row + row, global_column = k_base + column;
      tile_a[stage][column][row] = (global_row < m && global_column < k) ? a[global_row * k + global_column] : 0.0f;
    }
#pragma unroll
    for (int index = threadIdx.x; index < BLOCK_K * BLOCK_N; index += threads) {
      int row = index / BLOCK_N, column = index % BLOCK_N;
      int global_row = k_base + row, global_column = block_column + column;
      tile_b[stage][row][column] = (global_row < k && global_column < n) ? b[global_row * n + global_column] : 0.0f;
    }
  };

  load_tiles(0, 0);
  __syncthreads();
  int stage = 0;
  for (int k_base = 0; k_base < k; k_base += BLOCK_K) {
    if (DOUBLE_BUFFER && k_base + BLOCK_K < k) load_tiles(stage ^ 1, k_base + BLOCK_K);
#pragma unroll
    for (int kk = 0; kk < BLOCK_K; ++kk) {
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) fragment_a[i] = tile_a[stage][kk][thread_row * THREAD_M + i];
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) fragment_b[j] = tile_b[stage][kk][thread_column * THREAD_N + j];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) {
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) accumulator[i][j] = fmaf(fragment_a[i], fragment_b[j], accumulator[i][j]);
      }
    }
    __syncthreads();
    if (DOUBLE_BUFFER) {
      stage ^= 1;
    } else if (k_base + BLOCK_K < k) {
      load_tiles(0, k_base + BLOCK_K);
      __syncthreads();
    }
  }

#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) {
      int row = block_row + thread_row * THREAD_M + i, column = block_column + thread_column * THREAD_N + j;
      if (row < m && column < n) c[row * n + column] = ALPHA * accumulator[i][j];
    }
  }
}
