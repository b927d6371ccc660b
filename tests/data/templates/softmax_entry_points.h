// C entry points of the host build of templates/softmax.cu (fp32) that tests/compile_templates_on_host_test.cpp
// loads with dlopen: three single-warp paths, one block per row. Template arguments: ROW_THREADS, ROWS_PER_BLOCK,
// VEC, CACHE_ROW, ROW_ITEMS, UNROLL.
extern "C" int run_softmax(int path, int rows, int cols, const float* input, float* output) {
  switch (path) {
    case 0:  // the specs' verification reference: VEC 1, online statistics, then a second pass
      launch_warps(rows, softmax<32, 1, 1, false, 1, 1>, rows, cols, input, output);
      return 0;
    case 1:  // the row in registers, VEC 2, ROW_ITEMS = ceil_div(cols, 32 * 2) = 4: with cols 250 the last item of
             // lanes 29-31 lies past the row (125 vectors), the ragged tail of issue 30
      if (cols % 2 != 0 || (cols + 63) / 64 != 4) return 1;
      launch_warps(rows, softmax<32, 1, 2, true, 4, 1>, rows, cols, input, output);
      return 0;
    case 2:  // streamed, VEC 2, four vectors in flight: 125 vectors leave a chunk loop and a tail loop
      if (cols % 2 != 0) return 1;
      launch_warps(rows, softmax<32, 1, 2, false, 1, 4>, rows, cols, input, output);
      return 0;
  }
  return 1;
}
