// 3x3 convolution of a single-channel fp32 image, zero padding at the borders:
//   out[y][x] = sum over dy, dx in {-1, 0, 1} of filter[dy + 1][dx + 1] * in[y + dy][x + dx]
// Parameters (macros defined by the tuner; the template parameters carry k-prefixed names so they cannot clash):
//   BLOCK_X, BLOCK_Y  thread block shape
//   TILE_X, TILE_Y    outputs per thread in x and y; a thread's outputs are BLOCK_X (BLOCK_Y) apart so that
//                     each warp's loads and stores stay coalesced
//   ALGORITHM         0: each output reads its nine inputs from global memory (through the read-only cache)
//                     1: stage the block's input tile plus its one-pixel halo in shared memory
//                     2: sliding window: a thread owns TILE_X adjacent columns (one vector load per row) and walks
//                        down TILE_Y rows keeping three input rows in registers, so each input row is read from
//                        memory once per thread instead of three times; only the two halo rows per strip repeat

// One input row of the sliding window: the thread's TILE_X columns plus one neighbour on each side, zero outside
// the image. x0 is a multiple of kTileX and the width a multiple of kTileX (a constraint of the space), so the
// centre is a single aligned vector load for kTileX 2 and 4.
template <int kTileX>
__device__ __forceinline__ void load_window_row(const float* __restrict__ input, int width, int height, int x0, int y,
                                                float (&row)[kTileX + 2]) {
  if (y < 0 || y >= height) {
#pragma unroll
    for (int i = 0; i < kTileX + 2; ++i) row[i] = 0.0f;
    return;
  }
  const float* line = input + (long long)y * width;
  row[0] = x0 > 0 ? __ldg(line + x0 - 1) : 0.0f;
  if constexpr (kTileX == 4) {
    const float4 centre = __ldg(reinterpret_cast<const float4*>(line + x0));
    row[1] = centre.x;
    row[2] = centre.y;
    row[3] = centre.z;
    row[4] = centre.w;
  } else if constexpr (kTileX == 2) {
    const float2 centre = __ldg(reinterpret_cast<const float2*>(line + x0));
    row[1] = centre.x;
    row[2] = centre.y;
  } else {
#pragma unroll
    for (int i = 0; i < kTileX; ++i) row[1 + i] = __ldg(line + x0 + i);
  }
  row[kTileX + 1] = x0 + kTileX < width ? __ldg(line + x0 + kTileX) : 0.0f;
}

template <int kBlockX, int kBlockY, int kTileX, int kTileY, int kAlgorithm>
__global__ void __launch_bounds__(kBlockX * kBlockY)
    conv3x3(int width, int height, const float* __restrict__ input, const float* __restrict__ filter,
            float* __restrict__ output) {
  // Streamed batches (kernels/conv3x3_stream_*.yaml): blockIdx.z selects the image of the batch. With one image
  // (gridDim.z == 1) the offset is zero and the rest of the kernel is unchanged.
  const long long image_offset = (long long)blockIdx.z * width * height;
  input += image_offset;
  output += image_offset;
  float weight[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) weight[i] = __ldg(&filter[i]);

  const int block_origin_x = blockIdx.x * kBlockX * kTileX;
  const int block_origin_y = blockIdx.y * kBlockY * kTileY;

  if constexpr (kAlgorithm == 2) {
    const int x0 = block_origin_x + threadIdx.x * kTileX;
    const int y_begin = block_origin_y + threadIdx.y * kTileY;
    if (x0 >= width) return;
    float window[3][kTileX + 2];
    load_window_row<kTileX>(input, width, height, x0, y_begin - 1, window[0]);
    load_window_row<kTileX>(input, width, height, x0, y_begin, window[1]);
    // Fully unrolled, so (r + k) % 3 are constants and the window stays in registers.
#pragma unroll
    for (int r = 0; r < kTileY; ++r) {
      const int y = y_begin + r;
      if (y >= height) break;
      load_window_row<kTileX>(input, width, height, x0, y + 1, window[(r + 2) % 3]);
      const float(&above)[kTileX + 2] = window[r % 3];
      const float(&centre)[kTileX + 2] = window[(r + 1) % 3];
      const float(&below)[kTileX + 2] = window[(r + 2) % 3];
      float result[kTileX];
#pragma unroll
      for (int i = 0; i < kTileX; ++i) {
        float sum = 0.0f;
#pragma unroll
        for (int dx = 0; dx < 3; ++dx) {
          sum = fmaf(weight[dx], above[i + dx], sum);
          sum = fmaf(weight[3 + dx], centre[i + dx], sum);
          sum = fmaf(weight[6 + dx], below[i + dx], sum);
        }
        result[i] = sum;
      }
      float* out_line = output + (long long)y * width + x0;
      if constexpr (kTileX == 4) {
        *reinterpret_cast<float4*>(out_line) = make_float4(result[0], result[1], result[2], result[3]);
      } else if constexpr (kTileX == 2) {
        *reinterpret_cast<float2*>(out_line) = make_float2(result[0], result[1]);
      } else {
#pragma unroll
        for (int i = 0; i < kTileX; ++i) out_line[i] = result[i];
      }
    }
  } else if constexpr (kAlgorithm == 1) {
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
