// C entry points of the host build of templates/layernorm.cu (compiled with -DLAYERNORM_RESIDUAL) that
// tests/compile_templates_on_host_test.cpp loads with dlopen: the residual add + layernorm on three single-warp
// paths, one block per row. Template arguments in the entry's order: ROW_THREADS, ROWS_PER_BLOCK, VEC, CACHE_ROW,
// two-pass statistics, ROW_ITEMS, UNROLL, SHARED_ROW, CLUSTER, PERSISTENT, AFFINE in registers, STREAM, STAGES, bulk.

// SHARED_ROW's slice copy: one row of up to 4096 floats (blocks run one after another).
float4 dynamic_shared[1024];

extern "C" int run_add_layernorm(int path, int rows, int cols, float epsilon, const float* input,
                                 const float* residual, const float* gamma, const float* beta, float* sum,
                                 float* output) {
  int* no_counters = nullptr;
  switch (path) {
    case 0:  // the specs' verification reference: VEC 1, streamed passes (the later ones read the sum back), two-pass
      launch_warps(rows, layernorm<32, 1, 1, false, true, 1, 1, false, 1, false, true, false, 0, false>, rows, cols,
                   epsilon, input, residual, gamma, beta, sum, output, no_counters);
      return 0;
    case 1:  // the row in registers, VEC 4, sum of squares; ROW_ITEMS = cols / (32 * 4) = 2
      if (cols != 256) return 1;
      launch_warps(rows, layernorm<32, 1, 4, true, false, 2, 1, false, 1, false, true, false, 0, false>, rows, cols,
                   epsilon, input, residual, gamma, beta, sum, output, no_counters);
      return 0;
    case 2:  // the row in shared memory, VEC 2, two vectors in flight, two-pass
      if (cols > 4096) return 1;
      launch_warps(rows, layernorm<32, 1, 2, false, true, 1, 2, true, 1, false, true, false, 0, false>, rows, cols,
                   epsilon, input, residual, gamma, beta, sum, output, no_counters);
      return 0;
  }
  return 1;
}

extern "C" float run_gelu(float value) { return gelu(value); }
extern "C" float run_silu(float value) { return silu(value); }
