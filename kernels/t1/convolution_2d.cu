// A 2D convolution of a (width + filter_width - 1) x (height + filter_height - 1) image with a
// filter_width x filter_height filter, one output per thread and tile: the community's convolution benchmark in its
// plainest form, written to be tuned from a T1 file (convolution_2d.T1.json). Every tuning parameter arrives as a
// macro (block_size_x, block_size_y, tile_size_x, tile_size_y, filter_width, filter_height), as the tools that
// publish T1 files define them; the image size comes as the scalar arguments width and height.

__global__ void convolution_2d(float* output, const float* input, const float* filter, int width, int height) {
  const int input_width = width + filter_width - 1;
  const int first_x = blockIdx.x * block_size_x * tile_size_x + threadIdx.x;
  const int first_y = blockIdx.y * block_size_y * tile_size_y + threadIdx.y;
#pragma unroll
  for (int tile_y = 0; tile_y < tile_size_y; ++tile_y) {
#pragma unroll
    for (int tile_x = 0; tile_x < tile_size_x; ++tile_x) {
      const int x = first_x + tile_x * block_size_x;
      const int y = first_y + tile_y * block_size_y;
      if (x >= width || y >= height) continue;
      float sum = 0.0f;
#pragma unroll
      for (int row = 0; row < filter_height; ++row) {
#pragma unroll
        for (int column = 0; column < filter_width; ++column) {
          // An explicit fused multiply-add: every configuration rounds alike, so each one's output equals the default
          // configuration's (the verification reference of a T1 benchmark) whatever the compiler contracts.
          sum = __fmaf_rn(input[(y + row) * input_width + x + column], filter[row * filter_width + column], sum);
        }
      }
      output[y * width + x] = sum;
    }
  }
}
