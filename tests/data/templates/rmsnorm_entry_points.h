// C entry points of the host build of templates/layernorm.cu in its RMSNorm mode with the residual add
// (-DLAYERNORM_RMS -DLAYERNORM_RESIDUAL, kernels/add_rmsnorm_bf16.yaml in fp32) that
// tests/compile_templates_on_host_test.cpp loads with dlopen: three single-warp paths, one block per row. Template
// arguments in the entry's order: ROW_THREADS, ROWS_PER_BLOCK, VEC, CACHE_ROW, two-pass statistics (ignored by
// RMSNorm), ROW_ITEMS, UNROLL, SHARED_ROW, CLUSTER, PERSISTENT, AFFINE in registers, STREAM, STAGES, bulk.

// SHARED_ROW's slice copy: one row of up to 4096 floats (blocks run one after another).
float4 dynamic_shared[1024];

extern "C" int run_add_rmsnorm(int path, int rows, int cols, float epsilon, const float* input, const float* residual,
                               const float* weight, float* sum, float* output) {
  int* no_counters = nullptr;
  switch (path) {
    case 0:  // the specs' verification reference: VEC 1, streamed passes (the later ones read the sum back)
      launch_warps(rows, layernorm<32, 1, 1, false, true, 1, 1, false, 1, false, true, false, 0, false>, rows, cols,
                   epsilon, input, residual, weight, sum, output, no_counters);
      return 0;
    case 1:  // the row in registers, VEC 2, ROW_ITEMS = ceil_div(cols, 32 * 2) = 4: with cols 250 the last item of
             // lanes 29-31 lies past the row (125 vectors), the ragged tail of issue 30
      if (cols % 2 != 0 || (cols + 63) / 64 != 4) return 1;
      launch_warps(rows, layernorm<32, 1, 2, true, true, 4, 1, false, 1, false, true, false, 0, false>, rows, cols,
                   epsilon, input, residual, weight, sum, output, no_counters);
      return 0;
    case 2:  // the row in shared memory, VEC 2, two vectors in flight
      if (cols % 2 != 0 || cols > 4096) return 1;
      launch_warps(rows, layernorm<32, 1, 2, false, true, 1, 2, true, 1, false, true, false, 0, false>, rows, cols,
                   epsilon, input, residual, weight, sum, output, no_counters);
      return 0;
  }
  return 1;
}
