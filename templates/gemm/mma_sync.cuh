// mma_sync path: warp-level tensor cores (sm_80+), fp32 accumulation.
//   fp16 / bf16: mma.sync.m16n8k16, A fragments by ldmatrix, B fragments by ldmatrix.trans (B is k x n row-major,
//                the instruction wants it column-major).
//   tf32:        mma.sync.m16n8k8 on fp32 storage. A fragments by ldmatrix too: an 8 x 8 matrix of 16-bit halves
//                is an 8 x 4 matrix of fp32 words, and the word each lane receives is exactly the tf32 A layout.
//                B fragments are 32-bit shared loads (ldmatrix.trans would split the words). The fp32 bits go to
//                the tensor core as they are; it ignores the 13 low mantissa bits (truncation instead of a cvt
//                per element in the inner loop; the spec's tolerance allows for it).
//
// A block computes BM x BN of C with (BM / WM) x (BN / WN) warps; a warp holds (WM / 16) x (WN / 8) accumulator
// tiles of m16n8. Global -> shared copies are cp.async (16 bytes, bypassing registers and L1) into a ring of STAGES
// buffers, so STAGES - 1 K tiles are in flight while one is computed. SMEM_PAD adds 16 bytes to each shared row:
// the 8 row addresses of an ldmatrix then fall on 8 distinct 16-byte bank groups; tf32 B gets 32 bytes so the 4
// k-rows read by one 32-bit load instruction land 8 banks apart.
//
// H200, best measured (fp32 accumulation): fp16 398 TFLOPS at 8192^3 (256 x 128 x 32 blocks, 64 x 64 warp tiles,
// 3 stages; 52% of cuBLAS, which uses wgmma), bf16 403 (50%), tf32 195 (48%). mma.sync cannot reach the wgmma
// rates on Hopper; the 80% floors of issue #5 are for the wgmma path (16-bit) and out of reach here for tf32.
#pragma once

namespace mma {

constexpr int threads = THREADS;
constexpr int element_bytes = sizeof(Input);
constexpr int chunk = 16 / element_bytes;       // elements per 16-byte cp.async
constexpr int k_step = 32 / element_bytes;      // K per mma: 16 halves or 8 tf32
constexpr int warp_columns = BN / WN;
constexpr int m_tiles = WM / 16;
constexpr int n_tiles = WN / 8;
constexpr int a_stride = BK + PAD_A;            // elements per shared row of A (m rows, k contiguous)
constexpr int b_stride = BN + PAD_B;            // elements per shared row of B (k rows, n contiguous)
constexpr int a_stage = BM * a_stride;
constexpr int b_stage = BK * b_stride;
constexpr int a_chunks = BM * BK / chunk;
constexpr int b_chunks = BK * BN / chunk;

static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % k_step == 0, "warp tiles of whole mma tiles");

// Issues the copies of K tile k_tile into one ring slot (a_shared, b_shared).
__device__ __forceinline__ void load_stage(const Input* a, const Input* b, int n, int k, BlockTile tile, int k_tile,
                                           Input* a_shared, Input* b_shared) {
  const int k_offset = k_tile * BK;
#pragma unroll
  for (int load = 0; load < (a_chunks + threads - 1) / threads; ++load) {
    const int index = threadIdx.x + load * threads;
    if (a_chunks % threads == 0 || index < a_chunks) {
      const int row = index / (BK / chunk), column = (index % (BK / chunk)) * chunk;
      copy_async<16>(a_shared + row * a_stride + column, a + (size_t)(tile.row + row) * k + k_offset + column);
    }
  }
#pragma unroll
  for (int load = 0; load < (b_chunks + threads - 1) / threads; ++load) {
    const int index = threadIdx.x + load * threads;
    if (b_chunks % threads == 0 || index < b_chunks) {
      const int row = index / (BN / chunk), column = (index % (BN / chunk)) * chunk;
      copy_async<16>(b_shared + row * b_stride + column, b + (size_t)(k_offset + row) * n + tile.column + column);
    }
  }
}

__device__ __forceinline__ void load_matrix_x4(unsigned (&registers)[4], const void* address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(registers[0]), "=r"(registers[1]), "=r"(registers[2]), "=r"(registers[3])
               : "r"(shared_address(address)));
}
__device__ __forceinline__ void load_matrix_x4_transposed(unsigned (&registers)[4], const void* address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(registers[0]), "=r"(registers[1]), "=r"(registers[2]), "=r"(registers[3])
               : "r"(shared_address(address)));
}

// Not volatile: the mma touches registers only, so the compiler may interleave it with the (volatile, hence
// ordered) ldmatrix and cp.async statements.
__device__ __forceinline__ void multiply_accumulate(float (&d)[4], const unsigned (&a_fragment)[4],
                                                    const unsigned (&b_fragment)[2]) {
#if defined(GEMM_INPUT_TF32)
  asm(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a_fragment[0]), "r"(a_fragment[1]), "r"(a_fragment[2]), "r"(a_fragment[3]), "r"(b_fragment[0]),
        "r"(b_fragment[1]));
#elif defined(GEMM_INPUT_F16)
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a_fragment[0]), "r"(a_fragment[1]), "r"(a_fragment[2]), "r"(a_fragment[3]), "r"(b_fragment[0]),
        "r"(b_fragment[1]));
#elif defined(GEMM_INPUT_BF16)
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a_fragment[0]), "r"(a_fragment[1]), "r"(a_fragment[2]), "r"(a_fragment[3]), "r"(b_fragment[0]),
        "r"(b_fragment[1]));
#else
#error "the mma_sync path computes tf32, f16 or bf16 inputs"
#endif
}

// The A and B fragments of k step kk of a ring slot.
struct Fragments {
  unsigned a[m_tiles][4];
  unsigned b[n_tiles][2];
};

__device__ __forceinline__ void load_fragments(const Input* a_shared, const Input* b_shared, int kk, int warp_row,
                                               int warp_column, int lane, Fragments& fragments) {
  // Lanes 0-15 address rows 0-15 of the first 16 bytes of the k step, lanes 16-31 the same rows' second 16 bytes:
  // the four 8 x 8 matrices come back in the order the A fragment wants (rows 0-7, 8-15, then k + 8 bytes).
#pragma unroll
  for (int tile_m = 0; tile_m < m_tiles; ++tile_m) {
    load_matrix_x4(fragments.a[tile_m],
                   a_shared + (warp_row + tile_m * 16 + lane % 16) * a_stride + kk + (lane / 16) * chunk);
  }
#if defined(GEMM_INPUT_TF32)
  const int group = lane / 4, thread_in_group = lane % 4;
#pragma unroll
  for (int tile_n = 0; tile_n < n_tiles; ++tile_n) {
    const Input* column = b_shared + warp_column + tile_n * 8 + group;
    fragments.b[tile_n][0] = __float_as_uint(column[(kk + thread_in_group) * b_stride]);
    fragments.b[tile_n][1] = __float_as_uint(column[(kk + thread_in_group + 4) * b_stride]);
  }
#else
  // Transposed 8 x 8 loads: lanes 0-15 address k rows 0-15 of n columns 0-7, lanes 16-31 of columns 8-15, giving
  // the B fragments of two n8 tiles.
#pragma unroll
  for (int pair = 0; pair < n_tiles / 2; ++pair) {
    unsigned registers[4];
    load_matrix_x4_transposed(registers,
                              b_shared + (kk + lane % 16) * b_stride + warp_column + pair * 16 + (lane / 16) * 8);
    fragments.b[2 * pair][0] = registers[0];
    fragments.b[2 * pair][1] = registers[1];
    fragments.b[2 * pair + 1][0] = registers[2];
    fragments.b[2 * pair + 1][1] = registers[3];
  }
#endif
}

}  // namespace mma

__device__ __forceinline__ void gemm_path(int m, int n, int k, float alpha, float beta, const Input* __restrict__ a,
                                          const Input* __restrict__ b, Output* __restrict__ c, const TensorMap&,
                                          const TensorMap&, const Epilogue& epilogue, const SplitWorkspace&) {
  using namespace mma;
  extern __shared__ float4 mma_shared[];
  Input* a_shared = reinterpret_cast<Input*>(mma_shared);  // [STAGES][BM][a_stride]
  Input* b_shared = a_shared + STAGES * a_stage;           // [STAGES][BK][b_stride]

  const BlockTile tile = block_tile(blockIdx.x, m, n, BM, BN, GROUP_M);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = (warp / warp_columns) * WM, warp_column = (warp % warp_columns) * WN;

  float accumulator[m_tiles][n_tiles][4];
#pragma unroll
  for (int tile_m = 0; tile_m < m_tiles; ++tile_m)
#pragma unroll
    for (int tile_n = 0; tile_n < n_tiles; ++tile_n)
#pragma unroll
      for (int index = 0; index < 4; ++index) accumulator[tile_m][tile_n][index] = 0.0f;

  const int k_tiles = k / BK;
#pragma unroll
  for (int stage = 0; stage < STAGES - 1; ++stage) {
    if (stage < k_tiles) load_stage(a, b, n, k, tile, stage, a_shared + stage * a_stage, b_shared + stage * b_stage);
    commit_copies();  // one group per stage, empty or not, so wait_copies counts stages
  }

  // Fragments are double-buffered across k steps and across K tiles: during the last k step of a tile the block
  // waits for the next tile, synchronises and requests that tile's first fragments before issuing the step's
  // mmas, so neither the barrier nor the first ldmatrix of a tile leaves the tensor cores idle.
  constexpr int steps = BK / k_step;
  wait_copies<STAGES - 2>();  // K tile 0 has landed (for this thread) ...
  __syncthreads();            // ... and for every thread
  Fragments fragments[2];
  load_fragments(a_shared, b_shared, 0, warp_row, warp_column, lane, fragments[0]);
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    // Refills the slot of K tile k_tile - 1: every warp read it before the barrier of that tile's last step.
    const int next = k_tile + STAGES - 1;
    if (next < k_tiles) {
      const int slot = next % STAGES;
      load_stage(a, b, n, k, tile, next, a_shared + slot * a_stage, b_shared + slot * b_stage);
    }
    commit_copies();  // one group per K tile, empty or not, so wait_copies counts tiles
    const int slot = k_tile % STAGES;
#pragma unroll
    for (int step = 0; step < steps; ++step) {
      Fragments& following = fragments[(step + 1) & 1];
      if (step + 1 < steps) {
        load_fragments(a_shared + slot * a_stage, b_shared + slot * b_stage, (step + 1) * k_step, warp_row,
                       warp_column, lane, following);
      } else {
        wait_copies<STAGES - 2>();  // K tile k_tile + 1 has landed (for this thread) ...
        __syncthreads();            // ... for every thread, and every warp is done reading earlier slots
        if (k_tile + 1 < k_tiles) {
          const int next_slot = (k_tile + 1) % STAGES;
          load_fragments(a_shared + next_slot * a_stage, b_shared + next_slot * b_stage, 0, warp_row, warp_column,
                         lane, following);
        }
      }
      const Fragments& current = fragments[step & 1];
#pragma unroll
      for (int tile_m = 0; tile_m < m_tiles; ++tile_m)
#pragma unroll
        for (int tile_n = 0; tile_n < n_tiles; ++tile_n)
          multiply_accumulate(accumulator[tile_m][tile_n], current.a[tile_m], current.b[tile_n]);
    }
    // With an odd number of k steps the next tile's first fragments landed in buffer 1; the loop starts from 0.
    if constexpr (steps % 2 == 1) fragments[0] = fragments[1];
  }
  wait_copies<0>();  // leave no copy in flight into shared memory the block is about to release

  // Accumulator (tile_m, tile_n) holds rows group and group + 8, columns 2 * thread_in_group + {0, 1} of its m16n8.
  const int group = lane / 4, thread_in_group = lane % 4;
#pragma unroll
  for (int tile_m = 0; tile_m < m_tiles; ++tile_m) {
#pragma unroll
    for (int tile_n = 0; tile_n < n_tiles; ++tile_n) {
      const int column = tile.column + warp_column + tile_n * 8 + 2 * thread_in_group;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = tile.row + warp_row + tile_m * 16 + group + half * 8;
        Output* destination = c + (size_t)row * n + column;
        const float* values = &accumulator[tile_m][tile_n][half * 2];
        float first = scaled(values[0], alpha, beta, destination);
        float second = scaled(values[1], alpha, beta, destination + 1);
        apply_epilogue_two(epilogue, first, second, row, column, n);
        store_output_two(c, row, column, n, first, second);
      }
    }
  }
}
