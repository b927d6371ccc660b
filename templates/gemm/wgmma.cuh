// GEMM on Hopper tensor cores: warpgroup wgmma.mma_async fed by TMA bulk tensor copies (sm_90a only).
//
// Shape of the kernel, the recipe public Hopper GEMMs reach cuBLAS with:
//   - Warpgroup 0 is the producer: one thread issues cp.async.bulk.tensor copies of A and B tiles into a ring of
//     WG_STAGES shared-memory stages; each copy completes on the stage's "full" mbarrier (transaction bytes).
//   - Warpgroups 1..WG_CONSUMERS are consumers: each waits on "full", issues wgmma on its WG_BM / WG_CONSUMERS rows
//     of the tile (tf32: WG_BN / WG_CONSUMERS columns), and arrives on the stage's "empty" mbarrier once the tensor
//     cores have read it, so the producer runs up to WG_STAGES blocks of K ahead.
//   - setmaxnreg moves registers from the producer (which needs few) to the consumers' fp32 accumulators.
//   - WG_PINGPONG: instead of splitting each tile by rows, the consumers take whole tiles in turn (consumer 0 the
//     block's 1st, 3rd, ... tile), so one consumer's epilogue overlaps the other's wgmma and the tensor cores do not
//     wait for stores to C. Each stage is then read by one consumer only.
//   - Persistent: with WG_PERSISTENT the grid is one block per SM and each block walks tiles blockIdx.x,
//     blockIdx.x + gridDim.x, ...; the producer prefetches the next tile while the consumers store the last.
//     Tiles are numbered in groups of WG_GROUP_M tile rows so blocks running at once share A and B tiles in L2.
//   - WG_CLUSTER = 2: pairs of blocks form a thread-block cluster computing two tiles stacked along M, which share
//     their B tile: each block's producer loads half of B's boxes and multicasts them into both blocks, so a stage
//     is refilled only when the consumers of both blocks have released it (each arrives on both "empty" barriers).
//
// Operand layouts (the tensor maps are encoded by the evaluation worker with 128-byte swizzle; a swizzled row is
// 128 bytes of K: WG_BK = 64 halves or 32 tf32):
//   A (M x K, K contiguous): one box of WG_BK x WG_BM per stage, swizzled in 8-row (1024-byte) atoms: wgmma's
//     K-major 128-byte-swizzle layout.
//   B (K x N, N contiguous): WG_BN / (128 / element bytes) boxes of 128 bytes of N x WG_BK rows per stage.
//   B stored N x K (B_K_MAJOR, the nn.Linear layout of a weight W, C = A W^T): like A, one box of WG_BK x WG_BN
//     rows per stage (WG_BN / WG_CLUSTER rows from each block of a cluster), read by wgmma K-major.
// 16-bit inputs: wgmma reads A and B straight from shared memory, B "MN-major" through the transpose bit, or
// K-major without it when B_K_MAJOR.
// tf32: the transpose bit exists for 16-bit inputs only, and an N-major B cannot feed a tf32 wgmma from shared memory.
//   So the kernel computes the transpose, C^T = B^T A^T: the block's A tile (K-major, as tf32 needs) is the
//   instruction's shared-memory operand, and B^T is its register operand, each consumer thread gathering its fragment
//   from the N-major B tile with 32-bit shared loads. The instruction's 64-row slices then run along N, its width
//   (WG_BM = 64 .. 256) along M, and the epilogue stores the accumulators transposed. The fragments of one stage are
//   loaded while the previous stage's wgmma still runs, into the other of two register buffers.
// Any M, N, K >= 1 (issue 30): tiles that cross the edge of C load boxes that TMA fills with zeros outside the
// tensors (a K tail then adds zeros; the copy still delivers the whole box's bytes to the barrier), and their slices
// store element by element behind bounds checks; whole slices keep the paired stores. What TMA itself needs stays
// in the space: rows of A and B whose byte pitch is a multiple of 16 (K, and N for a K x N B, multiples of 8 halves).
//
// Measured on the H200 with scripts/wgmma_probe.cu (C bit-identical to cuBLAS's at beta = 0; fraction of cuBLAS in the
// same run):
//   4096^3 f16: 128 x 256 cooperative, 4 stages 697 TFLOP/s = 91%; 128 x 128 ping-pong, 6 stages 709 = 93%
//   8192^3 f16: 96% and 97%; bf16: 91% and 93% at 4096^3, 96.5% and 92% at 8192^3.
// tf32 and clusters: see the README's GEMM table for what the tuner found with them.
// Fused epilogues (gemm/epilogue.cuh) run in the consumers' stores, after each tile's K loop, not overlapped with the
// tensor cores' work; a bias + residual epilogue's residual is brought into L2 by the producer near the end of each
// tile's K loop (residual_prefetch_blocks below). Measured at 8192^3 on the H200: results/benchmarks.md, issue 19 (a
// version that copied each tile's residual into shared memory during the K loop, 16 rows of bulk copies from the
// producer thread per stage, cost 6.8%, SM throughput 81% against 89%).
// Split-K (WG_SPLIT_K > 1): where C has few rows (decode: M of 1 to a few hundred), its tiles alone leave most SMs
// idle while B streams through a few of them. Each tile's K blocks are then shared among WG_SPLIT_K work items that
// run on different SMs; each adds its partial sums into an fp32 workspace in L2 (red.global.add), and the last to
// arrive on the tile's counter reads the total, applies alpha, beta and the epilogue, stores C and leaves the
// workspace and the counter zero for the next launch.
// Not done: an asynchronous TMA-store epilogue, and epilogue work overlapped with the next tile's K loop.
#pragma once

#if defined(GEMM_INPUT_F16)
#define WGMMA_INPUT_TYPES ".f16.f16"
#define WGMMA_SWAP_OPERANDS 0
#elif defined(GEMM_INPUT_BF16)
#define WGMMA_INPUT_TYPES ".bf16.bf16"
#define WGMMA_SWAP_OPERANDS 0
#elif defined(GEMM_INPUT_TF32)
#define WGMMA_INPUT_TYPES ".tf32.tf32"  // named by the 16-bit form too, which tf32 never emits
#define WGMMA_SWAP_OPERANDS 1
#else
#error "the wgmma path takes tf32, fp16 or bf16 inputs"
#endif

// The space's WG_CLUSTER_BLOCKS and WG_SPLITS are WG_CLUSTER and WG_SPLIT_K as they apply at the problem (no
// clusters where C has fewer tile rows than a cluster's blocks; split-K's automatic count): spaces/gemm.yaml.
#ifndef WG_CLUSTER_BLOCKS
#define WG_CLUSTER_BLOCKS WG_CLUSTER
#endif
#if WG_CLUSTER_BLOCKS > 1
#define GEMM_CLUSTER_DIMS __cluster_dims__(WG_CLUSTER_BLOCKS, 1, 1)
#endif

#include "common/async_copy.cuh"
#include "common/cluster.cuh"
#include "common/mbarrier.cuh"
#include "common/prefetch.cuh"
#include "common/wgmma.cuh"

#ifndef B_K_MAJOR
#define B_K_MAJOR 0
#endif
#ifndef WG_SPLITS
#define WG_SPLITS 1
#endif
#if B_K_MAJOR && WGMMA_SWAP_OPERANDS
#error "a K-major B (N x K) is taken by the 16-bit inputs only"
#endif

namespace wgmma_path {

constexpr int block_m = WG_BM;
constexpr int block_n = WG_BN;
constexpr int block_k = WG_BK;
constexpr int stages = WG_STAGES;
constexpr int consumers = WG_CONSUMERS;
constexpr int cluster = WG_CLUSTER_BLOCKS;              // blocks of a cluster, stacked along M, sharing B tiles
constexpr bool swapped = WGMMA_SWAP_OPERANDS;
constexpr bool b_k_major = B_K_MAJOR;                   // B stored N x K: C = A B^T
constexpr int split_k = WG_SPLITS;                      // work items sharing each tile's K blocks
constexpr int warpgroup_threads = 128;
constexpr int element_bytes = sizeof(Input);
constexpr int instruction_m = 64;                       // wgmma rows per instruction
constexpr int instruction_k = 32 / element_bytes;       // wgmma depth: 32 bytes of K (16 halves, 8 tf32)
constexpr int swizzle_bytes = 128;                      // one swizzled row
constexpr int swizzle_atom_bytes = 8 * swizzle_bytes;   // the 8-row period of the 128-byte swizzle
constexpr int b_box_columns = swizzle_bytes / element_bytes;
constexpr bool pingpong = WG_PINGPONG;
// The C dimension the instruction's 64-row slices run along (M; N when swapped), split among consumers, and the one
// its width covers whole.
constexpr int sliced_extent = swapped ? block_n : block_m;
constexpr int instruction_n = swapped ? block_m : block_n;
constexpr int consumer_share = pingpong ? sliced_extent : sliced_extent / consumers;  // what one consumer computes
constexpr int stage_readers = pingpong ? 1 : consumers;                              // consumers that read each stage
constexpr int consumer_slices = consumer_share / instruction_m;
constexpr int accumulator_count = instruction_n / 2;    // per thread and slice
constexpr int k_steps = block_k / instruction_k;        // instructions per slice and stage
constexpr int a_stage_bytes = block_m * block_k * element_bytes;
constexpr int b_box_bytes = block_k * b_box_columns * element_bytes;
constexpr int b_stage_bytes = block_k * block_n * element_bytes;
constexpr int stage_bytes = a_stage_bytes + b_stage_bytes;
constexpr int b_boxes = block_n / b_box_columns;
constexpr int b_boxes_per_block = b_boxes / cluster;    // the B boxes each block of a cluster loads for all of them
constexpr int b_rows_per_block = block_n / cluster;     // K-major B: the rows of B each block of a cluster loads
// 40 registers are plenty for the one thread that issues copies; the consumers get the rest of the 64K-register file
// (384 threads: 128 * 40 + 256 * 232 = 64512; 256 threads: 128 * 40 + 128 * 240).
constexpr int producer_registers = 40;

constexpr int consumer_registers = consumers == 2 ? 232 : 240;

// WG_STORE bulk: a consumer writes its finished tile, the epilogue applied, into a buffer of its own in shared
// memory and one warp hands each row of it to the TMA unit (cp.async.bulk, shared to global), so the stores to C go
// out as whole 128-byte lines while the consumer already waits for its next tile. Direct stores write each thread's
// pairs of C from registers: half of a 32-byte sector per store instruction. H200, nn.Linear layout, 4096 x 6144 x
// 4096, the example's burst timing (results/linear_workload/2026-11-29-h200-dab0a55-descriptors/): with its direct
// stores skipped, 128 x 256 cooperative ran at 103.5% of cuBLAS against 91.7% storing, 128 x 128 ping-pong 100.2%
// against 93.3%. Rows are padded by 16 bytes, so the eight rows one store instruction covers fall in distinct banks.
// Not with the SiLU-gated epilogue (its C is n / 2 wide), nor with split-K (its last split stores from the fp32
// workspace), nor tf32 (C is stored transposed): those store directly (the space holds WG_STORE at direct there).
#if WG_STORE_bulk
constexpr bool bulk_store = !swapped && !gated_epilogue && split_k == 1;
#else
constexpr bool bulk_store = false;
#endif
constexpr int staging_pitch = instruction_n * static_cast<int>(sizeof(Output)) + 16;  // bytes per staged row
constexpr int staging_bytes_per_consumer = bulk_store ? consumer_share * staging_pitch : 0;
static_assert(staging_pitch % 16 == 0, "bulk copies read shared memory in 16-byte units");

// With the bias + residual epilogue, the producer asks for each tile's residual to be brought into L2 during the last
// GEMM_RESIDUAL_PREFETCH_BLOCKS K blocks it loads for the tile (a few rows per block, so the prefetches never queue
// up in front of a stage's copies), and the consumers' epilogue reads find it there instead of waiting on DRAM while
// the tensor cores idle. The producer runs up to WG_STAGES blocks ahead of the consumers, so the window ends that
// much before the epilogue. 0 turns it off. H200, bf16 8192^3, 128 x 256 tiles, 3 stages, against the plain GEMM in
// one process (results/benchmarks.md, "Fused kernels"): without clusters +1.95% with a window of 16 blocks, +3.27%
// without the prefetch; with 2-block clusters +9.15% with it (4 blocks: +8.2%, 64: +4.0%) and +4.55% without, so
// clustered kernels do not prefetch. Prefetching from the consumers instead (each thread two 128-byte lines with
// prefetch.global.L2 at the window's start) measured +3.8-4.9% without clusters, no better than none.
#ifndef GEMM_RESIDUAL_PREFETCH_BLOCKS
#define GEMM_RESIDUAL_PREFETCH_BLOCKS 16
#endif
constexpr int residual_prefetch_blocks =
    GEMM_EPILOGUE_HAS_RESIDUAL && cluster == 1 ? GEMM_RESIDUAL_PREFETCH_BLOCKS : 0;

static_assert(block_k * element_bytes == swizzle_bytes, "a row of an A box must be exactly one 128-byte swizzle row");
static_assert(consumer_share % instruction_m == 0, "each consumer owns whole 64-row wgmma slices");
static_assert(block_n % b_box_columns == 0, "B arrives in 128-byte-wide boxes");
static_assert(b_boxes % cluster == 0, "the blocks of a cluster split B's boxes evenly");
static_assert(THREADS == warpgroup_threads * (1 + consumers), "one producer and WG_CONSUMERS consumer warpgroups");
static_assert(split_k == 1 || !swapped, "split-K is built for the 16-bit path (tf32 takes K blocks in pairs)");

// ------------------------------------------------------------------------------------------------ schedule
// Tile numbers walk C in strips WG_GROUP_M tile rows tall, column by column, so the blocks running at the same time
// read few distinct A rows and B columns and find them in L2.
__device__ __forceinline__ void tile_position(int tile, int tiles_m, int tiles_n, int& tile_row, int& tile_column) {
  const int tiles_per_group = WG_GROUP_M * tiles_n;
  const int first_row = tile / tiles_per_group * WG_GROUP_M;
  const int rows_in_group = min(WG_GROUP_M, tiles_m - first_row);
  const int in_group = tile % tiles_per_group;
  tile_row = first_row + in_group % rows_in_group;
  tile_column = in_group / rows_in_group;
}

// The producer's residual prefetch at K block `k_block` of tile (tile_row, tile_column): the tile's rows inside C
// (block_m, fewer at the bottom edge), spread evenly over the tile's last `residual_prefetch_blocks` K blocks (all of
// them when K is shorter). A bulk prefetch takes 16-byte multiples at 16-byte-aligned addresses: rows whose length n
// is not a multiple of 16 bytes are not prefetched (a hint only), and at the right edge only the columns inside C.
__device__ __forceinline__ void prefetch_residual_rows([[maybe_unused]] const Epilogue& epilogue,
                                                       [[maybe_unused]] int tile_row,
                                                       [[maybe_unused]] int tile_column, [[maybe_unused]] int m,
                                                       [[maybe_unused]] int n, [[maybe_unused]] int k_block,
                                                       [[maybe_unused]] int k_blocks) {
#if GEMM_EPILOGUE_HAS_RESIDUAL
  if (n * sizeof(Output) % 16 != 0) return;
  const int window = min(residual_prefetch_blocks, k_blocks);
  const int position = k_block - (k_blocks - window);
  if (position < 0) return;
  const int rows_per_block = (block_m + window - 1) / window;
  const Output* tile = epilogue.residual + static_cast<long long>(tile_row) * block_m * n + tile_column * block_n;
  const int last_row = min(min(block_m, m - tile_row * block_m), (position + 1) * rows_per_block);
  const unsigned row_bytes = min(block_n, n - tile_column * block_n) * sizeof(Output);
  for (int row = position * rows_per_block; row < last_row; ++row) {
    prefetch_to_l2(tile + static_cast<long long>(row) * n, row_bytes);
  }
#endif
}

// alpha * D + beta * C, through the epilogue, into C, for a slice that runs along M (16-bit inputs). Register
// j * 4 + {0, 1} of the wgmma fragment holds row lane / 4 of the warp's 16 rows, columns 8 j + 2 (lane % 4) + {0, 1};
// registers j * 4 + {2, 3} the same columns 8 rows further down.
__device__ __forceinline__ void store_slice(const float (&accumulators)[accumulator_count], int row_base,
                                            int column_base, int n, float alpha, float beta, Output* c,
                                            const Epilogue& epilogue) {
  const int thread = threadIdx.x % warpgroup_threads;
  const int row = row_base + thread / 32 * 16 + thread % 32 / 4;
  const int column = column_base + thread % 4 * 2;
  const auto store_pair = [&](int half, int chunk) {
    Output* destination = c + static_cast<long long>(row + half * 8) * n + column + chunk * 8;
    float first = scaled(accumulators[chunk * 4 + half * 2], alpha, beta, destination);
    float second = scaled(accumulators[chunk * 4 + half * 2 + 1], alpha, beta, destination + 1);
    apply_epilogue_two(epilogue, first, second, row + half * 8, column + chunk * 8, n);
    store_output_two(c, row + half * 8, column + chunk * 8, n, first, second);
  };
  if constexpr (GEMM_EPILOGUE_HAS_RESIDUAL) {
    // With beta == 0 (C is not read), an epilogue that reads a residual loads the bias and the residual of eight
    // chunks of both rows, then stores them: sixteen loads in flight, and nothing between them and the stores that
    // must wait for an earlier store (with beta != 0 every read of C must follow the stores to C before it). Row by
    // row over the whole slice, the compiler hoisted all 64 residual loads above the stores and spilled (128 x 256
    // tiles: 64 more live registers beside the 128 accumulators).
    if (beta == 0.0f) {
      constexpr int group_chunks = 8;
#pragma unroll
      for (int group = 0; group < instruction_n / 8; group += group_chunks) {
        float2 addends[group_chunks][2];
#pragma unroll
        for (int chunk = 0; chunk < group_chunks; ++chunk)
#pragma unroll
          for (int half = 0; half < 2; ++half)
            addends[chunk][half] = epilogue_addends_two(epilogue, row + half * 8, column + (group + chunk) * 8, n);
#pragma unroll
        for (int chunk = 0; chunk < group_chunks; ++chunk)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int index = (group + chunk) * 4 + half * 2;
            store_two(c + static_cast<long long>(row + half * 8) * n + column + (group + chunk) * 8,
                      alpha * accumulators[index] + addends[chunk][half].x,
                      alpha * accumulators[index + 1] + addends[chunk][half].y);
          }
      }
      return;
    }
#pragma unroll
    for (int chunk = 0; chunk < instruction_n / 8; ++chunk)
#pragma unroll
      for (int half = 0; half < 2; ++half) store_pair(half, chunk);
  } else {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
#pragma unroll
      for (int chunk = 0; chunk < instruction_n / 8; ++chunk) store_pair(half, chunk);
    }
  }
}

// The same as store_slice for a slice that crosses the bottom or right edge of C, or for any slice when n is odd
// (a pair of 16-bit outputs at an odd element offset is not 4-byte aligned): element by element, each inside C.
__device__ __forceinline__ void store_slice_bounded(const float (&accumulators)[accumulator_count], int row_base,
                                                 int column_base, int m, int n, float alpha, float beta, Output* c,
                                                 const Epilogue& epilogue) {
  const int thread = threadIdx.x % warpgroup_threads;
  const int row = row_base + thread / 32 * 16 + thread % 32 / 4;
  const int column = column_base + thread % 4 * 2;
  if constexpr (gated_epilogue) {  // by pairs: n is even, so a pair inside C is whole
#pragma unroll
    for (int chunk = 0; chunk < instruction_n / 8; ++chunk) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int element_row = row + half * 8, element_column = column + chunk * 8;
        if (element_row >= m || element_column >= n) continue;
        float first = alpha * accumulators[chunk * 4 + half * 2], second = alpha * accumulators[chunk * 4 + half * 2 + 1];
        apply_epilogue_two(epilogue, first, second, element_row, element_column, n);
        store_output_two(c, element_row, element_column, n, first, second);
      }
    }
    return;
  }
#pragma unroll
  for (int chunk = 0; chunk < instruction_n / 8; ++chunk) {
#pragma unroll
    for (int index = 0; index < 4; ++index) {
      // index: bit 0 the next column, bit 1 the row 8 further down.
      const int element_row = row + index / 2 * 8;
      const int element_column = column + chunk * 8 + index % 2;
      if (element_row >= m || element_column >= n) continue;
      Output* destination = c + static_cast<long long>(element_row) * n + element_column;
      *destination = from_float<Output>(apply_epilogue(
          epilogue, scaled(accumulators[chunk * 4 + index], alpha, beta, destination), element_row, element_column, n));
    }
  }
}

// The 128 threads of consumer warpgroup `consumer` only (named barriers 2 and 3; 0 is __syncthreads).
__device__ __forceinline__ void consumer_barrier(int consumer) {
  asm volatile("bar.sync %0, %1;" ::"r"(2 + consumer), "n"(warpgroup_threads) : "memory");
}

// WG_STORE bulk: this consumer's share of a tile (consumer_share rows from row_base, instruction_n columns from
// column_base) through its staging buffer into C. The buffer is written only after the copies of the consumer's
// previous tile have read it; the elements outside C are neither computed nor copied. n % 8 == 0 and C 16-byte
// aligned (the caller checks): every row's copy starts and ends on 16 bytes.
__device__ __forceinline__ void store_share_bulk(const float (&accumulators)[consumer_slices][accumulator_count],
                                                 unsigned char* staging, int consumer, int row_base,
                                                 int column_base, int m, int n, float alpha, float beta, Output* c,
                                                 const Epilogue& epilogue) {
  const int thread = threadIdx.x % warpgroup_threads;
  const bool issues_copies = thread < 32;  // the consumer's first warp
  if (issues_copies) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  consumer_barrier(consumer);
  const int warp_row = thread / 32 * 16 + thread % 32 / 4;
  const int pair_column = thread % 4 * 2;
#pragma unroll
  for (int slice = 0; slice < consumer_slices; ++slice) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int local_row = slice * instruction_m + warp_row + half * 8;
      const int row = row_base + local_row;
#pragma unroll
      for (int chunk = 0; chunk < instruction_n / 8; ++chunk) {
        const int local_column = chunk * 8 + pair_column;
        const int column = column_base + local_column;
        if (row >= m || column >= n) continue;  // n is even: a pair starting inside C is whole
        const Output* destination = c + static_cast<long long>(row) * n + column;
        float first = scaled(accumulators[slice][chunk * 4 + half * 2], alpha, beta, destination);
        float second = scaled(accumulators[slice][chunk * 4 + half * 2 + 1], alpha, beta, destination + 1);
        apply_epilogue_two(epilogue, first, second, row, column, n);
        store_two(reinterpret_cast<Output*>(staging + local_row * staging_pitch) + local_column, first, second);
      }
    }
  }
  // The generic-proxy writes above become visible to the TMA unit's reads (the async proxy).
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  consumer_barrier(consumer);
  if (issues_copies) {
    const int row_bytes = min(instruction_n, n - column_base) * static_cast<int>(sizeof(Output));
    for (int local_row = thread; local_row < consumer_share && row_base + local_row < m; local_row += 32) {
      Output* destination = c + static_cast<long long>(row_base + local_row) * n + column_base;
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(destination),
                   "r"(shared_address(staging + local_row * staging_pitch)), "r"(row_bytes)
                   : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  }
}

// Split-K: the K blocks [first, last) of work item `split` of a tile (empty for the last items when the blocks run
// out first).
__device__ __forceinline__ void split_range(int split, int k_blocks, int& first, int& last) {
  const int per_split = (k_blocks + split_k - 1) / split_k;
  first = min(k_blocks, split * per_split);
  last = min(k_blocks, first + per_split);
}

// Split-K: a slice's partial sums added into the fp32 workspace (elements inside C only). The additions resolve in
// L2, so the last split's loads below (through L2, __ldcg) see them all. Each thread's two adjacent columns go as one
// 8-byte vector reduction (sm_90) where n is even: the per-element form halved the rate of the whole split-K tile
// (H200, 128 x 4096 x 4096: 0.057 ms split 2 ways against 0.013 unsplit).
__device__ __forceinline__ void add_partial_slice(const float (&accumulators)[accumulator_count], int row_base,
                                                  int column_base, int m, int n, float* partials) {
  const int thread = threadIdx.x % warpgroup_threads;
  const int row = row_base + thread / 32 * 16 + thread % 32 / 4;
  const int column = column_base + thread % 4 * 2;
#pragma unroll
  for (int chunk = 0; chunk < instruction_n / 8; ++chunk) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int element_row = row + half * 8;
      const int element_column = column + chunk * 8;
      if (element_row >= m || element_column >= n) continue;
      float* destination = partials + static_cast<long long>(element_row) * n + element_column;
      const float first = accumulators[chunk * 4 + half * 2], second = accumulators[chunk * 4 + half * 2 + 1];
      if (n % 2 == 0) {  // element_column + 1 < n too, and the pair is 8-byte aligned
        asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(destination), "f"(first), "f"(second) : "memory");
      } else {
        atomicAdd(destination, first);
        if (element_column + 1 < n) atomicAdd(destination + 1, second);
      }
    }
  }
}

// Split-K, the last split of a tile: each element's total from the workspace through alpha, beta and the epilogue
// into C, and the workspace element set back to zero.
__device__ __forceinline__ void finish_split_slice(int row_base, int column_base, int m, int n, float alpha,
                                                   float beta, Output* c, float* partials, const Epilogue& epilogue) {
  const int thread = threadIdx.x % warpgroup_threads;
  const int row = row_base + thread / 32 * 16 + thread % 32 / 4;
  const int column = column_base + thread % 4 * 2;
#pragma unroll
  for (int chunk = 0; chunk < instruction_n / 8; ++chunk) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int element_row = row + half * 8;
      const int element_column = column + chunk * 8;
      if (element_row >= m || element_column >= n) continue;
      const long long offset = static_cast<long long>(element_row) * n + element_column;
      if (n % 2 == 0) {
        const float2 total = __ldcg(reinterpret_cast<const float2*>(partials + offset));
        *reinterpret_cast<float2*>(partials + offset) = make_float2(0.0f, 0.0f);
        float first = scaled(total.x, alpha, beta, c + offset), second = scaled(total.y, alpha, beta, c + offset + 1);
        apply_epilogue_two(epilogue, first, second, element_row, element_column, n);
        store_output_two(c, element_row, element_column, n, first, second);
        continue;
      }
      if constexpr (gated_epilogue) continue;  // n is even there: never reached
      for (int index = 0; index < 2 && element_column + index < n; ++index) {
        const float total = __ldcg(partials + offset + index);
        partials[offset + index] = 0.0f;
        c[offset + index] = from_float<Output>(apply_epilogue(epilogue, scaled(total, alpha, beta, c + offset + index),
                                                              element_row, element_column + index, n));
      }
    }
  }
}

// The column of a 64-column slice that fragment row `row` stands for (swapped). In order, the 32 lanes of one
// fragment load read 8 adjacent columns in 4 K rows, which the swizzle maps onto 16 banks: a 2-way conflict. With
// WG_SPREAD the 8 rows a load covers are columns 0-3 and 16-19 (plus an offset), whose chunks differ in the bit the
// K row cannot flip, so the load hits 32 banks; the price is that each store to C fills half of a 32-byte sector.
__device__ __forceinline__ int fragment_column(int row) {
  if (!WG_SPREAD) return row;
  return row % 4 + row / 8 % 2 * 4 + row / 16 % 2 * 8 + row / 4 % 2 * 16 + row / 32 * 32;
}

// The same for a swapped slice (tf32), whose fragment is C^T: its rows are columns of C. For one register, the 32
// lanes of a warp cover 8 columns (adjacent unless WG_SPREAD) of 4 rows of C.
__device__ __forceinline__ void store_slice_transposed(const float (&accumulators)[accumulator_count], int row_base,
                                                       int column_base, int m, int n, float alpha, float beta,
                                                       Output* c, const Epilogue& epilogue) {
  const int thread = threadIdx.x % warpgroup_threads;
  const int columns[2] = {column_base + fragment_column(thread / 32 * 16 + thread % 32 / 4),
                          column_base + fragment_column(thread / 32 * 16 + thread % 32 / 4 + 8)};
  const int row = row_base + thread % 4 * 2;
#pragma unroll
  for (int chunk = 0; chunk < instruction_n / 8; ++chunk) {
#pragma unroll
    for (int index = 0; index < 4; ++index) {
      // index: bit 0 the next row of C (the fragment's next column), bit 1 the fragment row 8 further down.
      const int c_row = row + chunk * 8 + index % 2;
      if (c_row >= m || columns[index / 2] >= n) continue;  // outside C: a tile at its edge
      Output* destination = c + static_cast<long long>(c_row) * n + columns[index / 2];
      *destination = from_float<Output>(
          apply_epilogue(epilogue, scaled(accumulators[chunk * 4 + index], alpha, beta, destination), c_row,
                         columns[index / 2], n));
    }
  }
}

// A consumer thread's part of B^T for one stage (tf32): for each 8-deep K step and each 64-column slice, the four
// registers of wgmma's tf32 A fragment. Register r holds fragment row lane / 4 (+ 8 for r = 1, 3), i.e. a column of
// B, and fragment column lane % 4 (+ 4 for r = 2, 3), a K row of B. B's tile sits in 128-byte-wide boxes whose rows
// (one K each) are swizzled: 16-byte chunk c of row k is stored at chunk c ^ (k % 8).
using Fragments = unsigned[k_steps][consumer_slices][4];


__device__ __forceinline__ void load_fragments(Fragments& fragments, unsigned b_tile, int first_column) {
  const int thread = threadIdx.x % warpgroup_threads;
#pragma unroll
  for (int slice = 0; slice < consumer_slices; ++slice) {
#pragma unroll
    for (int index = 0; index < 4; ++index) {
      const int column =
          first_column + slice * instruction_m + fragment_column(thread / 32 * 16 + thread % 32 / 4 + index % 2 * 8);
      const int k_row = thread % 4 + index / 2 * 4;  // the same K row within every 8-row swizzle atom
      const unsigned address = b_tile + column / b_box_columns * b_box_bytes + k_row * swizzle_bytes +
                               ((column % b_box_columns / 4) ^ k_row) * 16 + column % 4 * 4;
#pragma unroll
      for (int step = 0; step < k_steps; ++step) {
        asm volatile("ld.shared.b32 %0, [%1];"
                     : "=r"(fragments[step][slice][index])
                     : "r"(address + step * instruction_k * swizzle_bytes));
      }
    }
  }
}

}  // namespace wgmma_path

__device__ __forceinline__ void gemm_path(int m, int n, int k, float alpha, float beta, const Input* /*a*/,
                                          const Input* /*b*/, Output* c, const TensorMap& a_map,
                                          const TensorMap& b_map, const Epilogue& epilogue,
                                          [[maybe_unused]] const SplitWorkspace& split) {
  using namespace wgmma_path;
  extern __shared__ unsigned char wgmma_shared[];
  // The 128-byte swizzle pattern repeats every 1024 bytes of shared address, and wgmma and TMA both derive it from
  // the address bits: every tile must start on a 1024-byte boundary (SHARED_BYTES has 1024 bytes of slack for this).
  const unsigned tiles_base = (shared_address(wgmma_shared) + swizzle_atom_bytes - 1) & ~(swizzle_atom_bytes - 1u);
  // WG_STORE bulk: each consumer's staging buffer follows the stages (none with direct stores).
  const unsigned staging_base = tiles_base + stages * stage_bytes;
  const unsigned barriers_base = staging_base + consumers * staging_bytes_per_consumer;
  const auto full_barrier = [&](int stage) { return barriers_base + 8u * stage; };
  const auto empty_barrier = [&](int stage) { return barriers_base + 8u * (stages + stage); };
  // Ping-pong: completes each time the given consumer has issued the wgmma of one of its tiles.
  const auto turn_barrier = [&](int consumer) { return barriers_base + 8u * (2 * stages + consumer); };
  // Split-K: where a consumer's thread 0 tells its warpgroup that its split was the tile's last.
  [[maybe_unused]] const auto last_split_flag = [&](int consumer) {
    return barriers_base + 8u * (2 * stages + consumers) + 4u * consumer;
  };

  // Tiles cover C, the last row and column of tiles possibly crossing its edge. The swapped path takes K blocks in
  // pairs; an odd count gets one more block, wholly outside A and B, which TMA fills with zeros.
  const int tiles_m = (m + block_m - 1) / block_m;
  const int tiles_n = (n + block_n - 1) / block_n;
  const int k_blocks = swapped ? (k + 2 * block_k - 1) / (2 * block_k) * 2 : (k + block_k - 1) / block_k;
  // Read from lane 0, so the compiler knows it is the same in every thread of a warp: what is derived from it (the
  // consumer's rows, the stage addresses, the matrix descriptors) then lives in uniform registers and is computed on
  // the uniform datapath. Derived from threadIdx.x directly, each wgmma's descriptors were rebuilt in every thread
  // and moved to uniform registers: about 130 instructions per stage and warp beside 8 wgmma (H200, ncu, 16384 x 4096
  // x 4096; cuBLAS's kernel issues 58% as many instructions and ran at a 7.6% higher clock in the same profile).
  const int warpgroup = __shfl_sync(0xFFFFFFFFu, threadIdx.x / warpgroup_threads, 0);
  // Work is handed out in units of `cluster` tiles stacked along M, one per block of a cluster (a unit is one tile
  // without clusters). The blocks of a cluster walk the same units, so their stages fill in step; a unit at the
  // bottom may hold tiles wholly below C, which load zeros and store nothing.
  const int unit_rows = (tiles_m + cluster - 1) / cluster;
  // With split-K a work item is one split of a unit: `unit_count` counts work items, consecutive ones the splits of
  // one unit, so they run at the same time on different SMs.
  const int unit_count = unit_rows * tiles_n * split_k;
  const int cluster_index = blockIdx.x / cluster;
  const int cluster_count = gridDim.x / cluster;
  const int rank = blockIdx.x % cluster;  // clusters are consecutive blocks along x
  const auto unit_tile = [&](int unit, int& tile_row, int& tile_column) {
    tile_position(unit / split_k, unit_rows, tiles_n, tile_row, tile_column);
    tile_row = tile_row * cluster + rank;
  };
  // The K blocks a work item takes: all of them without split-K.
  const auto unit_k_blocks = [&](int unit, int& first, int& last) {
    if constexpr (split_k > 1) {
      split_range(unit % split_k, k_blocks, first, last);
    } else {
      first = 0;
      last = k_blocks;
    }
  };

  if (threadIdx.x == 0) {
    for (int stage = 0; stage < stages; ++stage) {
      barrier_init(full_barrier(stage), 1);
      // One arrival per consumer warp of every block of the cluster: each warp knows only that its own wgmma reads
      // are done, and with B multicast a stage is free only once every block has finished with its copy.
      barrier_init(empty_barrier(stage), stage_readers * 4 * cluster);
    }
    for (int consumer = 0; consumer < consumers; ++consumer) barrier_init(turn_barrier(consumer), 4);
    // Makes the initialised barriers visible to the copy engine before any copy completes on them.
    barrier_init_fence();
  }
  if constexpr (cluster > 1) {
    cluster_sync<cluster>();
  } else {
    __syncthreads();
  }

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(producer_registers));
    if (threadIdx.x == 0) {
      int stage = 0;
      unsigned phase = 0;
      for (int unit = cluster_index; unit < unit_count; unit += cluster_count) {
        int tile_row, tile_column, first_k_block, last_k_block;
        unit_tile(unit, tile_row, tile_column);
        unit_k_blocks(unit, first_k_block, last_k_block);
        for (int k_block = first_k_block; k_block < last_k_block; ++k_block) {
          barrier_wait(empty_barrier(stage), phase ^ 1);
          const unsigned a_tile = tiles_base + stage * stage_bytes;
          const unsigned b_tile = a_tile + a_stage_bytes;
          // All of B arrives in every block of a cluster, this block's share of the boxes from its own copies.
          barrier_arrive_expect_bytes(full_barrier(stage), stage_bytes);
          copy_tile(a_tile, a_map, full_barrier(stage), k_block * block_k, tile_row * block_m);
          if constexpr (b_k_major) {
            // This block's share of B's rows (all of them without clusters), as one box like A's.
            const unsigned destination = b_tile + rank * b_rows_per_block * swizzle_bytes;
            const int b_row = tile_column * block_n + rank * b_rows_per_block;
            if (cluster > 1) {
              copy_tile_to_cluster<cluster>(destination, b_map, full_barrier(stage), k_block * block_k, b_row);
            } else {
              copy_tile(destination, b_map, full_barrier(stage), k_block * block_k, b_row);
            }
          } else {
#pragma unroll
            for (int box = rank * b_boxes_per_block; box < (rank + 1) * b_boxes_per_block; ++box) {
              const unsigned destination = b_tile + box * b_box_bytes;
              const int column = tile_column * block_n + box * b_box_columns;
              if (cluster > 1) {
                copy_tile_to_cluster<cluster>(destination, b_map, full_barrier(stage), column, k_block * block_k);
              } else {
                copy_tile(destination, b_map, full_barrier(stage), column, k_block * block_k);
              }
            }
          }
          if constexpr (residual_prefetch_blocks > 0) {
            prefetch_residual_rows(epilogue, tile_row, tile_column, m, n, k_block, k_blocks);
          }
          if (++stage == stages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(consumer_registers));
    const int consumer = warpgroup - 1;
    const bool signals_warp = threadIdx.x % 32 == 0;
    // Where this consumer's share starts within the tile: rows of C, or columns when swapped.
    const int consumer_first = pingpong ? 0 : consumer * consumer_share;
    float accumulators[consumer_slices][accumulator_count];
    Fragments fragments[2];  // swapped only: B^T for the stage being issued and for the one still in flight
    // Stages are filled in the block's tile order; a ping-pong consumer skips the k_blocks stages of each tile that
    // belongs to the other consumer.
    const int first_unit = cluster_index + (pingpong ? consumer * cluster_count : 0);
    const int unit_step = pingpong ? consumers * cluster_count : cluster_count;
    int stage = 0;
    unsigned phase = 0;
    // Moves this consumer's place in the ring past `blocks` stages (the parity flips once per turn of the ring).
    const auto skip_stages = [&](int blocks) {
      const int position = stage + blocks;
      phase ^= position / stages % 2;
      stage = position % stages;
    };
    // The stages one work item fills (none past the end): k_blocks, or its split's share.
    const auto unit_stages = [&](int unit) {
      int first, last;
      unit_k_blocks(unit, first, last);
      return unit < unit_count ? last - first : 0;
    };
    if (pingpong) {
      for (int other = 0; other < consumer; ++other) skip_stages(unit_stages(cluster_index + other * cluster_count));
    }
    unsigned turn = 0;  // tiles this consumer has started
    int previous_stage = -1;
    const auto release_stage = [&](int released) {
      if (!signals_warp) return;
      if (cluster > 1) {
        for (int block = 0; block < cluster; ++block) barrier_arrive_in_block(empty_barrier(released), block);
      } else {
        barrier_arrive(empty_barrier(released));
      }
    };

    // Issues the wgmma of one K block on the next full stage. `held` receives the stage's fragments (swapped): a
    // wgmma reads its register operand until it completes, and one group stays in flight, so consecutive K blocks
    // alternate between two buffers, each call naming its buffer at compile time to keep it in registers.
    // A matrix descriptor holds a shared address divided by 16 in its low 14 bits, which no sum of the offsets below
    // carries out of (shared memory ends below 256 KB): the descriptor of an address in a stage is the descriptor of
    // stage 0's tile plus the offset / 16, added to the descriptor instead of encoding each address afresh.
    const unsigned long long a_descriptor_base = matrix_descriptor(tiles_base, 16, swizzle_atom_bytes);
    [[maybe_unused]] const unsigned long long b_descriptor_base =
        b_k_major || swapped ? matrix_descriptor(tiles_base + a_stage_bytes, 16, swizzle_atom_bytes)
                             : matrix_descriptor(tiles_base + a_stage_bytes, b_box_bytes, swizzle_atom_bytes);
    const auto descriptor_plus = [](unsigned long long descriptor, unsigned offset_bytes) {
      return descriptor + (offset_bytes >> 4);
    };
    const auto consume_stage = [&](Fragments& held, int k_block, int first_k_block) {
      barrier_wait(full_barrier(stage), phase);
      const unsigned stage_offset = stage * stage_bytes;
      if constexpr (swapped) {
        load_fragments(held, tiles_base + stage_offset + a_stage_bytes, consumer_first);
        wgmma_fence();
#pragma unroll
        for (int step = 0; step < k_steps; ++step) {
          // The whole A tile is the instruction's K-major operand; 8 tf32 of K are 32 bytes along a swizzled row.
          const unsigned long long a_descriptor =
              descriptor_plus(a_descriptor_base, stage_offset + step * instruction_k * element_bytes);
#pragma unroll
          for (int slice = 0; slice < consumer_slices; ++slice) {
            Wgmma<instruction_n>::multiply_accumulate(accumulators[slice], held[step][slice], a_descriptor,
                                                      k_block > first_k_block || step > 0);
          }
        }
      } else {
        wgmma_fence();
#pragma unroll
        for (int step = 0; step < k_steps; ++step) {
          // A: 16 K-elements are 32 bytes along the swizzled row. B: 16 K-rows are two whole swizzle atoms, or,
          // K-major, 32 bytes along its swizzled rows as for A.
          const unsigned long long b_descriptor = descriptor_plus(
              b_descriptor_base,
              stage_offset + step * instruction_k * (b_k_major ? element_bytes : swizzle_bytes));
#pragma unroll
          for (int slice = 0; slice < consumer_slices; ++slice) {
            const unsigned long long a_descriptor = descriptor_plus(
                a_descriptor_base, stage_offset + (consumer_first + slice * instruction_m) * swizzle_bytes +
                                       step * instruction_k * element_bytes);
            if constexpr (b_k_major) {
              Wgmma16<instruction_n>::template shared_a<0>(accumulators[slice], a_descriptor, b_descriptor,
                                                           k_block > first_k_block || step > 0);
            } else {
              Wgmma<instruction_n>::multiply_accumulate(accumulators[slice], a_descriptor, b_descriptor,
                                                        k_block > first_k_block || step > 0);
            }
          }
        }
      }
      wgmma_commit();
      // One group stays in flight: this block's wgmma overlaps the wait for the next stage, and the stage the
      // previous group read is handed back to the producer as soon as that group is done.
      wgmma_wait<1>();
      if (previous_stage >= 0) release_stage(previous_stage);
      previous_stage = stage;
      if (++stage == stages) {
        stage = 0;
        phase ^= 1;
      }
    };

    for (int unit = first_unit; unit < unit_count; unit += unit_step) {
      int tile_row, tile_column, first_k_block, last_k_block;
      unit_tile(unit, tile_row, tile_column);
      unit_k_blocks(unit, first_k_block, last_k_block);
      if (pingpong) {
        // Take turns on the tensor cores, tile by tile. Besides keeping one consumer's epilogue under the other's
        // wgmma, this keeps each consumer within one phase of the stage barriers it skips ahead over: a parity wait
        // cannot tell phase j from phase j + 2.
        if (consumer == 1) {
          barrier_wait(turn_barrier(0), turn % 2);
        } else if (turn > 0) {
          barrier_wait(turn_barrier(1), (turn - 1) % 2);
        }
      }
      previous_stage = -1;
      if constexpr (swapped) {
        // Two K blocks per trip, both unconditional (k_blocks is even, see above): a conditional second
        // block would merge the accumulators from two paths, and the register moves that merge puts between
        // wgmmas make ptxas serialize every wgmma of the kernel (warning C7513).
        for (int k_block = 0; k_block < k_blocks; k_block += 2) {
          consume_stage(fragments[0], k_block, 0);
          consume_stage(fragments[1], k_block + 1, 0);
        }
      } else {
        for (int k_block = first_k_block; k_block < last_k_block; ++k_block)
          consume_stage(fragments[0], k_block, first_k_block);
      }
      if (pingpong && signals_warp) barrier_arrive(turn_barrier(consumer));
      ++turn;
      wgmma_wait<0>();
      if (previous_stage >= 0) release_stage(previous_stage);
      if (pingpong) {
        for (int other = 1; other < consumers; ++other) skip_stages(unit_stages(unit + other * cluster_count));
      }
      if constexpr (split_k > 1) {
        if (tile_row * block_m >= m) continue;  // a cluster's tile wholly below C: nothing to add, nobody waits
        // A split left without K blocks (more splits than blocks) adds nothing but still arrives. Its accumulators
        // are not zeroed instead: with that write on one path, ptxas serialised every wgmma of the kernel (its
        // C7514 "wgmma.mma_async instructions are serialized", seen with nvcc on 64 x 128 tiles split 2 ways; H200,
        // 16 x 6144 x 4096: 0.0415 ms split 2 ways against 0.0246 unsplit while it did).
#pragma unroll
        for (int slice = 0; slice < consumer_slices; ++slice) accumulators_ready(accumulators[slice]);
        if (first_k_block < last_k_block) {
#pragma unroll
          for (int slice = 0; slice < consumer_slices; ++slice) {
            add_partial_slice(accumulators[slice], tile_row * block_m + consumer_first + slice * instruction_m,
                              tile_column * block_n, m, n, split.partials);
          }
        }
        // Every addition of the warpgroup is visible device-wide before its arrival is counted; the arrival that
        // completes the count sees all the others' additions.
        __threadfence();
        consumer_barrier(consumer);
        if (threadIdx.x % warpgroup_threads == 0) {
          // One count per tile and consumer where consumers split tiles by rows, per tile where they take turns.
          const int tile = tile_row * tiles_n + tile_column;
          unsigned* counter = split.counters + (pingpong ? tile : tile * consumers + consumer);
          const bool last = atomicAdd(counter, 1u) == split_k - 1;
          if (last) *counter = 0;  // every split has arrived: the count starts again at the next launch
          asm volatile("st.shared.u32 [%0], %1;" ::"r"(last_split_flag(consumer)), "r"(last ? 1u : 0u) : "memory");
        }
        consumer_barrier(consumer);
        unsigned last = 0;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(last) : "r"(last_split_flag(consumer)) : "memory");
        if (last) {
          __threadfence();
#pragma unroll
          for (int slice = 0; slice < consumer_slices; ++slice) {
            finish_split_slice(tile_row * block_m + consumer_first + slice * instruction_m, tile_column * block_n, m,
                               n, alpha, beta, c, split.partials, epilogue);
          }
        }
        continue;
      }
      if constexpr (bulk_store) {
        if (n % 8 == 0 && reinterpret_cast<unsigned long long>(c) % 16 == 0) {
          if (tile_row * block_m + consumer_first >= m) continue;  // a cluster's tile wholly below C
#pragma unroll
          for (int slice = 0; slice < consumer_slices; ++slice) accumulators_ready(accumulators[slice]);
          store_share_bulk(accumulators, wgmma_shared + (staging_base - shared_address(wgmma_shared)) +
                                             consumer * staging_bytes_per_consumer,
                           consumer,
                           tile_row * block_m + consumer_first, tile_column * block_n, m, n, alpha, beta, c,
                           epilogue);
          continue;
        }
      }
#pragma unroll
      for (int slice = 0; slice < consumer_slices; ++slice) {
        accumulators_ready(accumulators[slice]);
        const int slice_first = consumer_first + slice * instruction_m;
        if constexpr (swapped) {
          store_slice_transposed(accumulators[slice], tile_row * block_m, tile_column * block_n + slice_first, m, n,
                                 alpha, beta, c, epilogue);
        } else {
          const int row_base = tile_row * block_m + slice_first;
          const int column_base = tile_column * block_n;
          if (row_base + instruction_m <= m && column_base + instruction_n <= n && n % 2 == 0) {
            store_slice(accumulators[slice], row_base, column_base, n, alpha, beta, c, epilogue);
          } else if (row_base < m) {
            store_slice_bounded(accumulators[slice], row_base, column_base, m, n, alpha, beta, c, epilogue);
          }
        }
      }
    }
    // The bulk copies of the last tile read the staging buffer until they are done: it must outlive them.
    if (bulk_store && threadIdx.x % warpgroup_threads < 32) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
  cluster_sync<cluster>();
}
