// C entry points of the host build that tests/run_verification_test.cpp loads with dlopen: the data template's
// kernel for each BUG value, and the verification's f32 comparison (from compare_kernel_source()).
extern "C" void run_offset_copy(int bug, unsigned grid, unsigned block, long long n, const float* input,
                                float* output) {
  switch (bug) {
    case 0: return launch_sequential(grid, block, offset_copy<0>, n, input, output);
    case 1: return launch_sequential(grid, block, offset_copy<1>, n, input, output);
    case 2: return launch_sequential(grid, block, offset_copy<2>, n, input, output);
  }
}

extern "C" void run_compare_f32(unsigned grid, const float* out, const float* reference, long long count,
                                double absolute, double relative, unsigned long long* results) {
  launch_warps(grid, compare_f32, out, reference, count, absolute, relative, results);
}
