// Transpose of a rows x cols fp32 matrix into cols x rows, as a tunable template. A block stages a TILE x TILE
// tile in shared memory so that both the global reads (along input rows) and the writes (along output rows) are
// coalesced; the column-wise shared-memory reads are what padding or swizzling keeps free of bank conflicts.
// Every parameter is a macro, so the template parameters carry k-prefixed names.
//   TILE        tile edge (the block is TILE x BLOCK_ROWS threads)
//   BLOCK_ROWS  thread rows per block; each thread moves TILE / BLOCK_ROWS elements
//   LAYOUT      LAYOUT_plain: tile[TILE][TILE] (a column read hits one bank); LAYOUT_padded: one extra float per
//               tile row; LAYOUT_swizzled: column c of tile row r is stored at c ^ (r mod min(TILE, 32))

template <int kTile, int kBlockRows, int kLayout>
__global__ void __launch_bounds__(kTile * kBlockRows)
    transpose(int rows, int cols, const float* __restrict__ input, float* __restrict__ output) {
  constexpr bool kPadded = kLayout == 1;
  constexpr bool kSwizzled = kLayout == 2;
  constexpr int kSwizzleMask = (kTile < 32 ? kTile : 32) - 1;
  __shared__ float tile[kTile][kTile + (kPadded ? 1 : 0)];
  auto slot = [](int tile_row, int tile_column) {
    return kSwizzled ? tile_column ^ (tile_row & kSwizzleMask) : tile_column;
  };

  const int input_column = blockIdx.x * kTile + threadIdx.x;
#pragma unroll
  for (int offset = 0; offset < kTile; offset += kBlockRows) {
    const int tile_row = threadIdx.y + offset;
    const int input_row = blockIdx.y * kTile + tile_row;
    if (input_row < rows && input_column < cols)
      tile[tile_row][slot(tile_row, threadIdx.x)] = input[(long long)input_row * cols + input_column];
  }
  __syncthreads();
  // Output row = input column, output column = input row.
  const int output_column = blockIdx.y * kTile + threadIdx.x;
#pragma unroll
  for (int offset = 0; offset < kTile; offset += kBlockRows) {
    const int tile_column = threadIdx.y + offset;
    const int output_row = blockIdx.x * kTile + tile_column;
    if (output_row < cols && output_column < rows)
      output[(long long)output_row * rows + output_column] = tile[threadIdx.x][slot(threadIdx.x, tile_column)];
  }
}
