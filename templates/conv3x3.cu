// 3x3 convolution of a single-channel fp32 image, zero padding at the borders:
//   out[y][x] = sum over dy, dx in {-1, 0, 1} of filter[dy + 1][dx + 1] * in[y + dy][x + dx]
// Parameters (macros defined by the tuner; the template parameters carry k-prefixed names so they cannot clash):
//   BLOCK_X, BLOCK_Y  thread block shape
//   TILE_X, TILE_Y    outputs per thread in x and y; a thread's outputs are BLOCK_X (BLOCK_Y) apart so that
//                     each warp's loads and stores stay coalesced
//   USE_SHMEM         stage the block's input tile plus its one-pixel halo in shared memory, or read global
//                     memory directly (through the read-only cache)

template <int kBlockX, int kBlockY, int kTileX, int kTileY, bool kUseShared>
__global__ void __launch_bounds__(kBlockX * kBlockY)
    conv3x3(int width, int height, const float* __restrict__ input, const float* __restrict__ filter,
            float* __restrict__ output) {
  float weight[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) weight[i] = __ldg(&filter[i]);

  const int block_origin_x = blockIdx.x * kBlockX * kTileX;
  const int block_origin_y = blockIdx.y * kBlockY * kTileY;

  if constexpr (kUseShared) {
    constexpr int kTileWidth = kBlockX * kTileX + 2;
    constexpr int kTileHeight = kBlockY * kTileY + 2;
    __shared__ float tile[kTileHeight][kTileWidth];
    const int thread = threadIdx.y * kBlockX + threadIdx.x;
    for (int i = thread; i < kTileWidth * kTileHeight; i += kBlockX * kBlockY) {
      const int tile_y = i / kTileWidth;
      const int tile_x = i - tile_y * kTileWidth;
      const int x = block_origin_x + tile_x - 1;
      const int y = block_origin_y + tile_y - 1;
      tile[tile_y][tile_x] = (x >= 0 && x < width && y >= 0 && y < height) ? input[(long long)y * width + x] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int ty = 0; ty < kTileY; ++ty) {
#pragma unroll
      for (int tx = 0; tx < kTileX; ++tx) {
        const int local_x = threadIdx.x + tx * kBlockX;
        const int local_y = threadIdx.y + ty * kBlockY;
        const int x = block_origin_x + local_x;
        const int y = block_origin_y + local_y;
        if (x >= width || y >= height) continue;
        float sum = 0.0f;
#pragma unroll
        for (int dy = 0; dy < 3; ++dy)
#pragma unroll
          for (int dx = 0; dx < 3; ++dx) sum = fmaf(weight[dy * 3 + dx], tile[local_y + dy][local_x + dx], sum);
        output[(long long)y * width + x] = sum;
      }
    }
  } else {
#pragma unroll
    for (int ty = 0; ty < kTileY; ++ty) {
#pragma unroll
      for (int tx = 0; tx < kTileX; ++tx) {
        const int x = block_origin_x + threadIdx.x + tx * kBlockX;
        const int y = block_origin_y + threadIdx.y + ty * kBlockY;
        if (x >= width || y >= height) continue;
        float sum = 0.0f;
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy) {
          const int yy = y + dy;
          if (yy < 0 || yy >= height) continue;
#pragma unroll
          for (int dx = -1; dx <= 1; ++dx) {
            const int xx = x + dx;
            if (xx < 0 || xx >= width) continue;
            sum = fmaf(weight[(dy + 1) * 3 + (dx + 1)], __ldg(&input[(long long)yy * width + xx]), sum);
          }
        }
        output[(long long)y * width + x] = sum;
      }
    }
  }
}
