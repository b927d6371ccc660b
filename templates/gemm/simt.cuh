// SIMT path: fp32 FFMA on CUDA cores, the classic fast-SGEMM structure.
//
// A block computes a BM x BN tile of C with (BM / WM) x (BN / WN) warps. Each warp's WM x WN tile is covered by its
// 32 threads laid out (WM / TM) x (WN / TN); a thread's TM x TN outputs are (TM / 4) x (TN / 4) sub-blocks of 4 x 4,
// spaced a warp's width of threads apart, so one float4 shared-memory load feeds four FFMA rows and the threads of a
// quarter-warp read adjacent float4s (no bank conflicts) or the same one (a broadcast).
//
// Two ways to stage tiles (SIMT_COPY):
//   registers  the next A and B tiles are loaded from global memory into registers (16-byte loads) while the
//              current shared-memory buffer is consumed, then stored into the other buffer: double buffering with
//              one barrier per K step.
//   async      cp.async copies straight into a ring of STAGES buffers, STAGES - 1 K tiles in flight, no registers
//              held; A is scattered element by element into its transposed layout (fp32 inputs only).
// A is stored transposed (k-major), so a thread's TM values of one k are contiguous: a float4 load instead of TM
// scalar loads. SMEM_PAD skews those transposed rows by 4 floats: without it the stores of one loaded A row land
// a multiple of 32 banks apart. Inside a K step, the fragments of k + 1 are read from shared memory while the
// FFMAs of k run (register double buffering).
// 16-bit inputs are converted to fp32 when staged (correct, not tuned for speed).
//
// H200, fp32: 128 x 128 x 16 blocks, 64 x 32 warp tiles, 8 x 8 thread tiles, register staging, serpentine FFMA
// order, 2 blocks per SM: 48.4 TFLOPS at 4096^3 (94% of cuBLAS SGEMM), 49.1 at 8192^3 (96%).
#pragma once

namespace simt {

constexpr int threads = THREADS;
constexpr int warp_columns = BN / WN;            // warps across the block tile
constexpr int lane_columns = WN / TN;            // threads across the warp tile
constexpr int sub_rows = TM / 4;                 // 4 x 4 sub-blocks per thread, down ...
constexpr int sub_columns = TN / 4;              // ... and across
constexpr int sub_row_stride = WM / sub_rows;    // rows between a thread's sub-blocks
constexpr int sub_column_stride = WN / sub_columns;
constexpr int a_stride = BM + PAD_A;             // floats per k-row of transposed A in shared memory
constexpr int b_stride = BN;
constexpr int a_vectors = BM * BK / 4;           // float4s per A tile, BK / 4 per row of A
constexpr int b_vectors = BK * BN / 4;
constexpr int a_loads = (a_vectors + threads - 1) / threads;
constexpr int b_loads = (b_vectors + threads - 1) / threads;
constexpr int a_buffer = BK * a_stride;          // floats per buffer
#if SIMT_COPY_async
constexpr bool copies_asynchronously = true;
constexpr int buffers = STAGES;
#else
constexpr bool copies_asynchronously = false;
constexpr int buffers = 2;
#endif
constexpr int b_buffer = BK * b_stride;

static_assert(lane_columns * (WM / TM) == 32, "a warp's threads must cover its tile exactly");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "tiles are made of float4s");

// Global -> registers for K tile starting at column k_offset of A and row k_offset of B.
__device__ __forceinline__ void load_tiles(const Input* a, const Input* b, int n, int k, BlockTile tile, int k_offset,
                                           float4 (&a_staged)[a_loads], float4 (&b_staged)[b_loads]) {
#pragma unroll
  for (int load = 0; load < a_loads; ++load) {
    const int vector = threadIdx.x + load * threads;
    if (a_vectors % threads == 0 || vector < a_vectors) {
      const int row = vector / (BK / 4);
      const int column = (vector % (BK / 4)) * 4;
      a_staged[load] = load_four(a + (size_t)(tile.row + row) * k + k_offset + column);
    }
  }
#pragma unroll
  for (int load = 0; load < b_loads; ++load) {
    const int vector = threadIdx.x + load * threads;
    if (b_vectors % threads == 0 || vector < b_vectors) {
      const int row = vector / (BN / 4);
      const int column = (vector % (BN / 4)) * 4;
      b_staged[load] = load_four(b + (size_t)(k_offset + row) * n + tile.column + column);
    }
  }
}

// Registers -> one shared-memory buffer, A transposed.
__device__ __forceinline__ void store_tiles(float* a_shared, float* b_shared, const float4 (&a_staged)[a_loads],
                                            const float4 (&b_staged)[b_loads]) {
#pragma unroll
  for (int load = 0; load < a_loads; ++load) {
    const int vector = threadIdx.x + load * threads;
    if (a_vectors % threads == 0 || vector < a_vectors) {
      const int row = vector / (BK / 4);
      const int column = (vector % (BK / 4)) * 4;
      a_shared[(column + 0) * a_stride + row] = a_staged[load].x;
      a_shared[(column + 1) * a_stride + row] = a_staged[load].y;
      a_shared[(column + 2) * a_stride + row] = a_staged[load].z;
      a_shared[(column + 3) * a_stride + row] = a_staged[load].w;
    }
  }
#pragma unroll
  for (int load = 0; load < b_loads; ++load) {
    const int vector = threadIdx.x + load * threads;
    if (b_vectors % threads == 0 || vector < b_vectors) {
      const int row = vector / (BN / 4);
      const int column = (vector % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&b_shared[row * b_stride + column]) = b_staged[load];
    }
  }
}

// The TM values of A and TN values of B that one k contributes to this thread's outputs.
__device__ __forceinline__ void load_fragments(const float* a_shared, const float* b_shared, int kk, int a_offset,
                                               int b_offset, float (&a_fragment)[TM], float (&b_fragment)[TN]) {
#pragma unroll
  for (int sub = 0; sub < sub_rows; ++sub) {
    float4 value = *reinterpret_cast<const float4*>(&a_shared[kk * a_stride + a_offset + sub * sub_row_stride]);
    a_fragment[sub * 4 + 0] = value.x;
    a_fragment[sub * 4 + 1] = value.y;
    a_fragment[sub * 4 + 2] = value.z;
    a_fragment[sub * 4 + 3] = value.w;
  }
#pragma unroll
  for (int sub = 0; sub < sub_columns; ++sub) {
    float4 value = *reinterpret_cast<const float4*>(&b_shared[kk * b_stride + b_offset + sub * sub_column_stride]);
    b_fragment[sub * 4 + 0] = value.x;
    b_fragment[sub * 4 + 1] = value.y;
    b_fragment[sub * 4 + 2] = value.z;
    b_fragment[sub * 4 + 3] = value.w;
  }
}

// SIMT_COPY async: K tile k_tile straight from global into ring slot (a_shared, b_shared) with cp.async, A
// scattered element by element into its transposed layout (consecutive threads copy consecutive k of one row, so a
// warp's copies cover whole 32-byte sectors), B in 16-byte pieces. fp32 inputs only: a 16-bit element is below
// cp.async's 4-byte minimum and would also need converting.
__device__ __forceinline__ void copy_tiles(const Input* a, const Input* b, int n, int k, BlockTile tile, int k_tile,
                                           float* a_shared, float* b_shared) {
  static_assert(sizeof(Input) == 4 || !copies_asynchronously, "cp.async copies fp32 elements only");
  constexpr int a_elements = BM * BK;
  const int k_offset = k_tile * BK;
#pragma unroll
  for (int copy = 0; copy < (a_elements + threads - 1) / threads; ++copy) {
    const int element = threadIdx.x + copy * threads;
    if (a_elements % threads == 0 || element < a_elements) {
      const int row = element / BK, column = element % BK;
      copy_async<4>(&a_shared[column * a_stride + row], a + (size_t)(tile.row + row) * k + k_offset + column);
    }
  }
#pragma unroll
  for (int copy = 0; copy < b_loads; ++copy) {
    const int vector = threadIdx.x + copy * threads;
    if (b_vectors % threads == 0 || vector < b_vectors) {
      const int row = vector / (BN / 4);
      const int column = (vector % (BN / 4)) * 4;
      copy_async<16>(&b_shared[row * b_stride + column], b + (size_t)(k_offset + row) * n + tile.column + column);
    }
  }
}

// One K tile of the ring slot into this thread's accumulators, reading the fragments of k + 1 while the FFMAs of k
// run.
__device__ __forceinline__ void compute_tile(const float* a_current, const float* b_current, int a_offset,
                                             int b_offset, float (&accumulator)[TM][TN]) {
  float a_fragment[2][TM], b_fragment[2][TN];
  load_fragments(a_current, b_current, 0, a_offset, b_offset, a_fragment[0], b_fragment[0]);
#pragma unroll
  for (int kk = 0; kk < BK; ++kk) {
    if (kk + 1 < BK) {
      load_fragments(a_current, b_current, kk + 1, a_offset, b_offset, a_fragment[(kk + 1) & 1],
                     b_fragment[(kk + 1) & 1]);
    }
#if SIMT_FMA_ORDER_serpentine
    // Every other row runs right to left, so consecutive FFMAs share a B register at each row change too: the
    // operand reuse cache then saves a register-file read there (H200 4096^3: 44.9 -> 45.7 TFLOPS).
#pragma unroll
    for (int row = 0; row < TM; ++row)
#pragma unroll
      for (int step = 0; step < TN; ++step) {
        const int column = row % 2 == 0 ? step : TN - 1 - step;
        accumulator[row][column] = fmaf(a_fragment[kk & 1][row], b_fragment[kk & 1][column], accumulator[row][column]);
      }
#else
#pragma unroll
    for (int row = 0; row < TM; ++row)
#pragma unroll
      for (int column = 0; column < TN; ++column)
        accumulator[row][column] = fmaf(a_fragment[kk & 1][row], b_fragment[kk & 1][column], accumulator[row][column]);
#endif
  }
}

}  // namespace simt

__device__ __forceinline__ void gemm_path(int m, int n, int k, float alpha, float beta, const Input* __restrict__ a,
                                          const Input* __restrict__ b, Output* __restrict__ c, const TensorMap&,
                                          const TensorMap&, const Epilogue& epilogue, const SplitWorkspace&) {
  using namespace simt;
  extern __shared__ float4 simt_shared[];
  float* a_shared = reinterpret_cast<float*>(simt_shared);  // [buffers][BK][a_stride]
  float* b_shared = a_shared + buffers * a_buffer;          // [buffers][BK][b_stride]

  const BlockTile tile = block_tile(blockIdx.x, m, n, BM, BN, GROUP_M);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = (warp / warp_columns) * WM, warp_column = (warp % warp_columns) * WN;
  const int lane_row = (lane / lane_columns) * 4, lane_column = (lane % lane_columns) * 4;
  const int a_offset = warp_row + lane_row;     // within a k-row of transposed A
  const int b_offset = warp_column + lane_column;

  float accumulator[TM][TN];
#pragma unroll
  for (int row = 0; row < TM; ++row)
#pragma unroll
    for (int column = 0; column < TN; ++column) accumulator[row][column] = 0.0f;

  const int k_tiles = k / BK;
#if SIMT_COPY_async
  constexpr int stages = buffers;
#pragma unroll
  for (int stage = 0; stage < stages - 1; ++stage) {
    if (stage < k_tiles) copy_tiles(a, b, n, k, tile, stage, a_shared + stage * a_buffer, b_shared + stage * b_buffer);
    commit_copies();  // one group per stage, empty or not, so wait_copies counts stages
  }
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    wait_copies<stages - 2>();  // K tile k_tile has landed (for this thread) ...
    __syncthreads();            // ... for every thread, and every warp is done with the slot refilled below
    const int next = k_tile + stages - 1;
    if (next < k_tiles) {
      const int slot = next % stages;
      copy_tiles(a, b, n, k, tile, next, a_shared + slot * a_buffer, b_shared + slot * b_buffer);
    }
    commit_copies();
    const int slot = k_tile % stages;
    compute_tile(a_shared + slot * a_buffer, b_shared + slot * b_buffer, a_offset, b_offset, accumulator);
  }
  wait_copies<0>();
#else
  float4 a_staged[a_loads], b_staged[b_loads];
  load_tiles(a, b, n, k, tile, 0, a_staged, b_staged);
  store_tiles(a_shared, b_shared, a_staged, b_staged);
  __syncthreads();
  // The last K tile is peeled off, so the loop body loads, computes and stores without checking for a next tile.
  for (int k_tile = 0; k_tile < k_tiles - 1; ++k_tile) {
    const int current = k_tile & 1;
    load_tiles(a, b, n, k, tile, (k_tile + 1) * BK, a_staged, b_staged);
    compute_tile(a_shared + current * a_buffer, b_shared + current * b_buffer, a_offset, b_offset, accumulator);
    // The other buffer was last read before the previous barrier, so it can be overwritten now.
    store_tiles(a_shared + (current ^ 1) * a_buffer, b_shared + (current ^ 1) * b_buffer, a_staged, b_staged);
    __syncthreads();
  }
  const int last = (k_tiles - 1) & 1;
  compute_tile(a_shared + last * a_buffer, b_shared + last * b_buffer, a_offset, b_offset, accumulator);
#endif

#pragma unroll
  for (int sub_row = 0; sub_row < sub_rows; ++sub_row) {
#pragma unroll
    for (int row = 0; row < 4; ++row) {
      const int c_row = tile.row + a_offset + sub_row * sub_row_stride + row;
#pragma unroll
      for (int sub_column = 0; sub_column < sub_columns; ++sub_column) {
        const int c_column = tile.column + b_offset + sub_column * sub_column_stride;
        Output* destination = c + (size_t)c_row * n + c_column;
        const float* values = &accumulator[sub_row * 4 + row][sub_column * 4];
        float4 result = make_float4(alpha * values[0], alpha * values[1], alpha * values[2], alpha * values[3]);
        if (beta != 0.0f && !gated_epilogue) {
          const float4 old = load_four(destination);
          result.x += beta * old.x;
          result.y += beta * old.y;
          result.z += beta * old.z;
          result.w += beta * old.w;
        }
        result.x = apply_epilogue(epilogue, result.x, c_row, c_column, n);
        result.y = apply_epilogue(epilogue, result.y, c_row, c_column + 1, n);
        result.z = apply_epilogue(epilogue, result.z, c_row, c_column + 2, n);
        result.w = apply_epilogue(epilogue, result.w, c_row, c_column + 3, n);
        if constexpr (gated_epilogue) {
          store_output_two(c, c_row, c_column, n, result.x, result.y);
          store_output_two(c, c_row, c_column + 2, n, result.z, result.w);
        } else {
          store_four(destination, result);
        }
      }
    }
  }
}
