// GEMM for few rows of C (decode: a handful of tokens through a linear layer), C = alpha * A * W^T + beta * C, with
// A (m x k) row-major, the weight W stored n x k (nn.Linear's layout, k contiguous) and C (m x n) row-major; 16-bit
// inputs, fp32 accumulation. m is at most 64.
//
// At few rows a GEMM is a stream of the weight: 16 x 4096 x 14336 reads 117 MB of W and 0.5 MB of A. A tiled GEMM
// (gemm.cu) covers C with 64-row tiles, so at 16 rows it has few tiles for the SMs and multiplies rows of zeros
// (results/linear_workload/). This path gives each block DC_COLUMNS columns of C and every SM many blocks: each
// warp of a block takes an interleaved share of K, loads 16 bytes of every one of its W rows per 32-element K
// chunk straight into registers (DC_CHUNKS chunks in flight before any is used, no shared-memory staging), and
// multiplies on tensor cores with mma.sync m16n8k16, one 16-row group of A at a time. The warps' partial sums meet
// in shared memory, and the block writes its columns of C through the epilogue (gemm/epilogue.cuh).
//
// Fragments without shuffles: a dot product does not depend on the order of its k terms, so a lane may feed the
// instruction any k positions as long as A and W use the same ones. Lane (group g = lane / 4, quad q = lane % 4)
// loads elements [8q, 8q + 8) of a 32-element chunk, four 32-bit words w0..w3, of W row (column of C) g and of A
// rows g and g + 8. The first mma takes w0 and w1 where the instruction's layout says k pairs (2q, 2q + 1) and
// (2q + 8, 2q + 9), the second mma w2 and w3: over the four quads the two instructions cover the chunk's 32
// positions once each.
//
// Tails: m, n and k need not be multiples of anything but k of 8 (16-byte loads of whole 8-element groups); rows of
// A past m, columns past n and k groups past k load as zeros, and only elements inside C are stored.
#include "gemm/common.cuh"
#include "gemm/epilogue.cuh"

#if !defined(GEMM_INPUT_F16) && !defined(GEMM_INPUT_BF16)
#error "the decode path computes 16-bit inputs (mma.sync m16n8k16)"
#endif

namespace decode {

constexpr int warps = DC_WARPS;
constexpr int n_tiles = DC_COLUMNS / 8;         // 8-column mma tiles per warp (every warp of a block: the same ones)
constexpr int row_groups = DC_ROW_GROUPS;       // 16-row groups of A: ceil(m / 16), at most 4
constexpr int chunks = DC_CHUNKS;               // 32-element K chunks a warp loads before it multiplies
constexpr int chunk_k = 32;
constexpr int accumulators = row_groups * n_tiles * 4;

static_assert(DC_COLUMNS % 8 == 0, "whole 8-column mma tiles");
static_assert(THREADS == warps * 32, "a block of DC_WARPS warps");

union Words {
  uint4 vector;
  unsigned word[4];
};

// 16 bytes of W: read once, so not kept in L1 (ld.global.nc.L1::no_allocate), leaving L1 to A, which every warp of
// the SM reads.
__device__ __forceinline__ uint4 load_weight(const Input* source) {
  uint4 value;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
               : "l"(source));
  return value;
}

__device__ __forceinline__ uint4 load_activation(const Input* source) {
  return __ldg(reinterpret_cast<const uint4*>(source));
}

__device__ __forceinline__ void multiply_accumulate(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,
                                                    unsigned a3, unsigned b0, unsigned b1) {
#if defined(GEMM_INPUT_F16)
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// What one lane reads: its W rows (columns of C) and A rows, with whether each lies inside the matrices.
struct LaneRows {
  const Input* weight[n_tiles];
  bool column_inside[n_tiles];
  const Input* activation[row_groups][2];  // rows g and g + 8 of each 16-row group
  bool row_inside[row_groups][2];
};

__device__ __forceinline__ LaneRows lane_rows(int m, int n, int k, const Input* a, const Input* w, int column_base,
                                              int group) {
  LaneRows rows;
#pragma unroll
  for (int tile = 0; tile < n_tiles; ++tile) {
    const int column = column_base + tile * 8 + group;
    rows.column_inside[tile] = column < n;
    rows.weight[tile] = w + static_cast<long long>(rows.column_inside[tile] ? column : 0) * k;
  }
#pragma unroll
  for (int row_group = 0; row_group < row_groups; ++row_group) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = row_group * 16 + half * 8 + group;
      rows.row_inside[row_group][half] = row < m;
      rows.activation[row_group][half] = a + static_cast<long long>(rows.row_inside[row_group][half] ? row : 0) * k;
    }
  }
  return rows;
}

// The warp's share of K: chunks first, first + 1, ... (DC_CHUNKS of them, those inside k) into its accumulators.
__device__ __forceinline__ void multiply_chunks(const LaneRows& rows, int k, int first, int quad,
                                                float (&sums)[row_groups][n_tiles][4]) {
  Words weight[chunks][n_tiles];
  Words activation[chunks][row_groups][2];
#pragma unroll
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const int offset = (first + chunk) * chunk_k + quad * 8;
    const bool inside = offset < k;  // k is a multiple of 8: a lane's 8 elements are all inside or all outside
#pragma unroll
    for (int tile = 0; tile < n_tiles; ++tile) {
      weight[chunk][tile].vector = inside && rows.column_inside[tile] ? load_weight(rows.weight[tile] + offset)
                                                                      : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int row_group = 0; row_group < row_groups; ++row_group) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        activation[chunk][row_group][half].vector =
            inside && rows.row_inside[row_group][half] ? load_activation(rows.activation[row_group][half] + offset)
                                                       : make_uint4(0, 0, 0, 0);
      }
    }
  }
#pragma unroll
  for (int chunk = 0; chunk < chunks; ++chunk) {
#pragma unroll
    for (int step = 0; step < 2; ++step) {
#pragma unroll
      for (int row_group = 0; row_group < row_groups; ++row_group) {
        const Words& upper = activation[chunk][row_group][0];
        const Words& lower = activation[chunk][row_group][1];
#pragma unroll
        for (int tile = 0; tile < n_tiles; ++tile) {
          multiply_accumulate(sums[row_group][tile], upper.word[2 * step], lower.word[2 * step],
                              upper.word[2 * step + 1], lower.word[2 * step + 1], weight[chunk][tile].word[2 * step],
                              weight[chunk][tile].word[2 * step + 1]);
        }
      }
    }
  }
}

// The warps' sums added through shared memory, then each element of the block's columns through alpha, beta and
// the epilogue into C. Accumulator r of a lane's m16n8 tile is row g (+ 8 for r >= 2), column 2q + (r & 1).
__device__ __forceinline__ void reduce_and_store(const float (&sums)[row_groups][n_tiles][4], int m, int n,
                                                 float alpha, float beta, Output* c, const Epilogue& epilogue,
                                                 int column_base) {
  extern __shared__ float partial[];  // [warps][accumulators][32 lanes]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int row_group = 0; row_group < row_groups; ++row_group)
#pragma unroll
    for (int tile = 0; tile < n_tiles; ++tile)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        partial[(warp * accumulators + (row_group * n_tiles + tile) * 4 + r) * 32 + lane] = sums[row_group][tile][r];
  __syncthreads();
  for (int element = threadIdx.x; element < accumulators * 32; element += THREADS) {
    const int owner = element % 32, index = element / 32;
    const int r = index % 4, tile = index / 4 % n_tiles, row_group = index / 4 / n_tiles;
    const int row = row_group * 16 + owner / 4 + (r >= 2 ? 8 : 0);
    const int column = column_base + tile * 8 + owner % 4 * 2 + (r & 1);
    if (row >= m || column >= n) continue;
    float total = 0.0f;
#pragma unroll
    for (int other = 0; other < warps; ++other) total += partial[other * accumulators * 32 + element];
    const long long offset = static_cast<long long>(row) * n + column;
    c[offset] = from_float<Output>(apply_epilogue(epilogue, scaled(total, alpha, beta, c + offset), row, column, n));
  }
}

}  // namespace decode

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    gemm_decode(int m, int n, int k, float alpha, float beta, const Input* __restrict__ a,
                const Input* __restrict__ w, GEMM_EPILOGUE_PARAMETERS Output* __restrict__ c) {
  using namespace decode;
  const Epilogue epilogue GEMM_EPILOGUE_INPUTS;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int column_base = blockIdx.x * DC_COLUMNS;
  const LaneRows rows = lane_rows(m, n, k, a, w, column_base, lane / 4);
  float sums[row_groups][n_tiles][4] = {};
  const int k_chunks = (k + chunk_k - 1) / chunk_k;
  // Interleaved shares: warp 0 takes chunks [0, DC_CHUNKS), warp 1 the next DC_CHUNKS, and so on round the warps,
  // so the block's warps read neighbouring stretches of every W row together.
  for (int first = warp * chunks; first < k_chunks; first += warps * chunks) {
    multiply_chunks(rows, k, first, lane % 4, sums);
  }
  reduce_and_store(sums, m, n, alpha, beta, c, epilogue, column_base);
}
