// Attention forward on Hopper tensor cores, FlashAttention-style (sm_90a only).
//
// A block computes the output of AT_BM = 64 * AT_CONSUMERS query rows of one (batch, head) pair:
//   - Warpgroup 0 is the producer: one thread loads the block's Q tile once, then the K and V tiles of AT_KEY_TILE keys
//     each, with TMA bulk tensor copies into a ring of AT_STAGES shared-memory stages. K and V of a stage complete
//     on separate mbarriers, so the S = Q K^T of a stage can start before its V has arrived.
//   - Warpgroups 1..AT_CONSUMERS are consumers, 64 query rows each. Per K/V tile: S = Q K^T (wgmma, Q and K from
//     shared memory, K read K-major: its rows are the instruction's columns), the online softmax on S in registers
//     (running row maximum, rescaled row sums, output rescaled when the maximum grows), P converted to 16 bits in
//     registers, and O += P V (wgmma with P as the register operand and V read N-major through the transpose bit).
//     The fp32 accumulator layout of an m64nN wgmma is the register-operand layout of the next one, so P never goes
//     through shared memory.
//   - AT_OVERLAP: the S = Q K^T of tile j and the O += P V of tile j - 1 are both in flight while the softmax of
//     tile j waits for the first, and the second runs under that softmax, so the tensor cores work while the
//     consumer computes exponentials (P of tile j - 1 is packed into its own registers, so S can be overwritten);
//     without it, each tile's two products and its softmax run one after the other (other consumers' work still
//     overlaps).
//   - AT_PINGPONG (with AT_OVERLAP): the consumers take turns issuing their products, tile by tile, through named
//     barriers (consumer c waits on barrier 1 + c, then lets the next consumer go), so one consumer's softmax runs
//     while the other's products keep the tensor cores busy, instead of both reaching their exponentials at once.
//   - setmaxnreg moves registers from the producer to the consumers' accumulators (O: AT_HEAD_DIM / 2 fp32 per
//     thread, S: AT_KEY_TILE / 2, P: AT_KEY_TILE / 4).
//   - AT_PERSISTENT: one block per SM walks the query tiles (units) b, b + gridDim.x, ... in AT_ORDER's order; the
//     producer loads the next unit's Q as soon as every consumer's last score product of the current unit is done
//     (the q_empty barrier), and its first K / V tiles as stages free up, while the consumers finish and store the
//     current unit. Without it, each block computes one query tile and the pipeline fills again per block.
//   - Causal: a block loads keys up to its last query row's last key only, and each consumer computes only the
//     tiles its own 64 rows see (a consumer whose rows all end before a tile releases that stage without touching
//     it); scores of keys past each row's position are masked in the tiles that straddle the diagonal. AT_ORDER
//     picks the blocks' order: "heads" walks the query tiles of one (batch, head) pair together (they share K and V
//     in L2; causal: last tiles, the longest, first), "tiles" walks one query tile of every pair together, last
//     tiles first, so under causal masking the longest blocks start first.
//   - AT_KV_SHARE > 1 (grouped-query attention): a thread-block cluster of AT_KV_SHARE blocks computes the same query
//     tile of AT_KV_SHARE consecutive query heads of one group, which read the same key/value head. Each K / V tile
//     is loaded once for the cluster: block r's producer loads rows r * AT_KEY_TILE / AT_KV_SHARE onwards of each
//     box (whole 8-row swizzle atoms) and multicasts them into the same offset of every block's stage, so the whole
//     tile arrives in every block, each block's full barriers counting the bytes of all the shares. A stage is
//     refilled only once every consumer warp of every block has released it: lane r of each consumer warp arrives on
//     block r's empty barrier, whose count is consumers * 4 * AT_KV_SHARE (templates/gemm/wgmma.cuh multicasts its
//     B operand the same way). Q and O stay the block's own. The blocks of a cluster walk the same units (the same
//     query rows, so the same key range: causal tile counts and skipped tiles are the same in every block) and so
//     the same stages in the same order; a cluster barrier after the barriers' initialisation and another before
//     exit keep every remote copy and arrival within the cluster's lifetime. Both orders and the persistent schedule
//     take clusters (spaces/attention.yaml's grid puts a cluster's blocks next to each other along x). With
//     AT_KV_SHARE = 1 the kernel's code is the one without clusters. Not yet measured on a GPU: the L2 traffic it
//     saves against the cluster's scheduling constraints (one block per SM, AT_KV_SHARE SMs of one GPC at once) is
//     for the tuner to weigh.
//   - Ragged shapes: any sequence and key count >= 1. TMA fills a box's rows past the tensor's end with zeros (the
//     maps are 4-D, rows within one head, so a box never reaches into the next head's rows); the scores of keys
//     past the last one are masked in the last K / V tile; query rows past the sequence are computed from the zeros
//     and never stored; a consumer whose rows all lie past the sequence computes one tile only.
//
// Layouts (tensor maps encoded by the evaluation worker with 128-byte swizzle): Q, K and V are 4-D maps, innermost
// first [head_dim, rows, heads, batch] (BHSD) or [head_dim, heads, rows, batch] (BSHD), so either layout arrives the
// same way (a BSHD map's strides step over whole token rows, so Q, K and V may be views into one fused QKV output):
// compute_dim / 64 boxes of 64 columns (one 128-byte swizzled row each) by AT_BM or AT_KEY_TILE rows of one head,
// every box starting on a 1024-byte boundary: wgmma's K-major layout for Q and K, and its N-major layout, 64
// columns per chunk, for V. Grouped-query heads: a block of query head h loads the K / V of head h / AT_KV_GROUP,
// and the blocks of the heads of one group run next to each other ("heads" order), so those tiles come from L2 (or,
// with AT_KV_SHARE, are loaded once per cluster, above).
// Head dimension 96 (issue 33): computed as 128, compute_dim, the head dimension rounded up to whole 64-column boxes.
// The second box of a row reaches past the tensor's innermost dimension, so TMA fills columns 96 to 127 of Q, K and
// V with zeros: S = Q K^T is unchanged, O's columns 96 to 127 are zero and not stored. A quarter of the tensor-core
// work is spent on the zeros; the instructions, swizzles and descriptors are those of head dimension 128.
#pragma once

#if defined(ATTENTION_INPUT_BF16)
#define WGMMA_INPUT_TYPES ".bf16.bf16"
#else
#define WGMMA_INPUT_TYPES ".f16.f16"
#endif

#include "common/cluster.cuh"
#include "common/mbarrier.cuh"
#include "common/wgmma.cuh"

// AT_KV_SHARE > 1: the kernel runs in thread-block clusters of AT_KV_SHARE blocks along x (the space's grid puts a
// cluster's blocks next to each other there).
#if AT_KV_SHARE > 1
#define ATTENTION_CLUSTER_DIMS __cluster_dims__(AT_KV_SHARE, 1, 1)
#endif

// Kept here rather than beside copy_tile in common/async_copy.cuh: a stored configuration is keyed by the hash of its
// template and every file it includes, so an addition to a shared header would mark every other kernel's stored
// entries stale.
// The box of a 4-D tensor map at (c0, c1, c2, c3), innermost first, into shared memory, completing on `barrier`.
// Elements of the box outside the tensor arrive as zeros, and the barrier still counts the whole box's bytes.
__device__ __forceinline__ void copy_tile_4d(unsigned shared_destination, const TensorMap& map, unsigned barrier,
                                             int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
      ::"r"(shared_destination),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(barrier)
      : "memory");
}

// The same box into the same shared-memory offset of every block of a cluster of kCluster blocks, each completing on
// its own barrier at the given offset (common/async_copy.cuh's copy_tile_to_cluster for 4-D maps; here for the same
// reason as copy_tile_4d).
template <int kCluster>
__device__ __forceinline__ void copy_tile_4d_to_cluster(unsigned shared_destination, const TensorMap& map,
                                                        unsigned barrier, int c0, int c1, int c2, int c3) {
  const unsigned short every_block = (1u << kCluster) - 1;
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;" ::"r"(shared_destination),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(barrier),
      "h"(every_block)
      : "memory");
}


namespace wgmma_path {

constexpr int block_m = AT_BM;
constexpr int block_n = AT_KEY_TILE;  // AT_BN, or 64 at head dimension 256
constexpr int stages = AT_STAGES;
constexpr int consumers = AT_CONSUMERS;
constexpr bool overlap = AT_OVERLAP;
constexpr bool pingpong = AT_PINGPONG;
constexpr bool persistent = AT_PERSISTENT;
constexpr int kv_share = AT_KV_SHARE;                // blocks of a cluster, one query head each, sharing K / V tiles
constexpr int kv_share_rows = AT_KEY_TILE / AT_KV_SHARE;  // the rows of each K / V tile one block of a cluster loads
#if defined(AT_ORDER_tiles)
constexpr bool tiles_first = true;
#else
constexpr bool tiles_first = false;
#endif
constexpr int warpgroup_threads = 128;
constexpr int instruction_m = 64;
constexpr int instruction_k = 16;
constexpr int swizzle_bytes = 128;
constexpr int swizzle_atom_bytes = 8 * swizzle_bytes;
constexpr int box_columns = swizzle_bytes / 2;          // 64 elements of 16 bits
constexpr int compute_dim = (head_dim + box_columns - 1) / box_columns * box_columns;
constexpr int chunks = compute_dim / box_columns;       // boxes across the head dimension
constexpr int q_box_bytes = block_m * swizzle_bytes;
constexpr int kv_box_bytes = block_n * swizzle_bytes;
constexpr int q_bytes = chunks * q_box_bytes;
constexpr int kv_tile_bytes = chunks * kv_box_bytes;     // K or V of one stage
constexpr int stage_bytes = 2 * kv_tile_bytes;
constexpr int score_count = block_n / 2;                 // S accumulators per thread
constexpr int output_count = compute_dim / 2;            // O accumulators per thread
constexpr int stored_chunks = head_dim / 8;              // 8-column chunks of O stored (not 96's padding)
constexpr int p_steps = block_n / instruction_k;         // k steps of O += P V
constexpr int qk_steps = compute_dim / instruction_k;    // k steps of S = Q K^T
constexpr int producer_registers = 24;
constexpr int consumer_registers = consumers == 3 ? 160 : 240;

static_assert(block_m == instruction_m * consumers, "each consumer warpgroup owns 64 query rows");
static_assert(head_dim % 32 == 0 && head_dim <= 256, "64, 96, 128 or 256 columns: whole or padded 64-column boxes");
static_assert(THREADS == warpgroup_threads * (1 + consumers), "one producer and AT_CONSUMERS consumer warpgroups");
static_assert(!pingpong || (overlap && consumers >= 2), "turns are taken by two or more overlapping consumers");
static_assert(kv_group % kv_share == 0, "a cluster's query heads read one key/value head");
static_assert(kv_share_rows % 8 == 0 && kv_share_rows * kv_share == block_n,
              "each block's share of a K / V tile is whole 8-row swizzle atoms");

// Named barrier 1 + c is consumer c's turn: it completes once c's 128 threads wait on it and the previous
// consumer's 128 threads have arrived (barrier 0 is __syncthreads).
__device__ __forceinline__ void wait_turn(int consumer) {
  asm volatile("bar.sync %0, %1;" ::"r"(1 + consumer), "n"(2 * warpgroup_threads) : "memory");
}
__device__ __forceinline__ void pass_turn(int consumer) {
  asm volatile("bar.arrive %0, %1;" ::"r"(1 + (consumer + 1) % consumers), "n"(2 * warpgroup_threads) : "memory");
}

__device__ __forceinline__ float fast_exp2(float x) {
  float result;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(x));
  return result;
}

__device__ __forceinline__ unsigned pack_two(float low, float high) {
#if defined(ATTENTION_INPUT_BF16)
  __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
#else
  __half2 pair = __floats2half2_rn(low, high);
#endif
  return *reinterpret_cast<unsigned*>(&pair);
}

// One consumer's running softmax state: for each of the thread's two rows (lane / 4 and lane / 4 + 8 of its warp's
// 16), the maximum scaled score so far (in log2 units) and this thread's part of the row sum (the four threads of a
// row add theirs at the end).
struct RowState {
  float max[2] = {NEGATIVE_INFINITY, NEGATIVE_INFINITY};
  float sum[2] = {0.0f, 0.0f};
};

// Masks, exponentiates and sums one tile of scores. Returns the factors the output must be multiplied by (the old
// maximum over the new one, as powers of two), and leaves P = 2^(scaled S - max) in `scores`.
// Register j * 4 + {0, 1} of the S fragment holds row lane / 4 (half 0), columns 8 j + 2 (lane % 4) + {0, 1};
// j * 4 + {2, 3} the same columns of row lane / 4 + 8 (half 1). With `masked`, scores of keys at or past
// key_end[half] (the keys the row sees: causal masking, the last key) become -inf. Every row sees key 0, so a row's
// maximum is finite from the first tile on, and a later tile masked whole leaves it as it was.
__device__ __forceinline__ void online_softmax(float (&scores)[score_count], RowState& state, float scale_log2,
                                               bool masked, const int (&key_end)[2], int key0,
                                               float (&correction)[2]) {
  const int lane = threadIdx.x % 32;
  if (masked) {
#pragma unroll
    for (int index = 0; index < score_count; ++index) {
      const int key = key0 + index / 4 * 8 + lane % 4 * 2 + index % 2;
      if (key >= key_end[index % 4 / 2]) scores[index] = NEGATIVE_INFINITY;
    }
  }
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float tile_max = NEGATIVE_INFINITY;
#pragma unroll
    for (int chunk = 0; chunk < score_count / 4; ++chunk) {
      tile_max = fmaxf(tile_max, fmaxf(scores[chunk * 4 + half * 2], scores[chunk * 4 + half * 2 + 1]));
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float new_max = fmaxf(state.max[half], tile_max * scale_log2);
    correction[half] = fast_exp2(state.max[half] - new_max);  // 0 on the first tile (the old maximum is -inf)
    state.max[half] = new_max;
    float tile_sum = 0.0f;
#pragma unroll
    for (int chunk = 0; chunk < score_count / 4; ++chunk) {
#pragma unroll
      for (int column = 0; column < 2; ++column) {
        float& score = scores[chunk * 4 + half * 2 + column];
        score = fast_exp2(fmaf(score, scale_log2, -new_max));
        tile_sum += score;
      }
    }
    state.sum[half] = state.sum[half] * correction[half] + tile_sum;
  }
}

// P in the register-operand layout of O += P V: k step t covers keys 16 t .. 16 t + 15, which are S registers
// 8 t .. 8 t + 7 in order, packed in pairs.
__device__ __forceinline__ void pack_probabilities(const float (&scores)[score_count], unsigned (&p)[p_steps][4]) {
#pragma unroll
  for (int step = 0; step < p_steps; ++step)
#pragma unroll
    for (int pair = 0; pair < 4; ++pair) p[step][pair] = pack_two(scores[step * 8 + pair * 2], scores[step * 8 + pair * 2 + 1]);
}

__device__ __forceinline__ void rescale_output(float (&output)[output_count], const float (&correction)[2]) {
#pragma unroll
  for (int index = 0; index < output_count; ++index) output[index] *= correction[index % 4 / 2];
}

// The box of `map` at column `column` of row `row` of head `head` of batch `batch`: the 4-D maps order rows and
// heads as the layout does.
__device__ __forceinline__ void copy_rows(unsigned shared_destination, const TensorMap& map, unsigned barrier,
                                          int column, int row, int head, int batch) {
  if constexpr (rows_outside_heads) {
    copy_tile_4d(shared_destination, map, barrier, column, head, row, batch);
  } else {
    copy_tile_4d(shared_destination, map, barrier, column, row, head, batch);
  }
}

// A box of K or V: into this block only, or with a cluster into every block of it.
__device__ __forceinline__ void copy_shared_rows(unsigned shared_destination, const TensorMap& map, unsigned barrier,
                                                 int column, int row, int head, int batch) {
  if constexpr (kv_share == 1) {
    copy_rows(shared_destination, map, barrier, column, row, head, batch);
  } else if constexpr (rows_outside_heads) {
    copy_tile_4d_to_cluster<kv_share>(shared_destination, map, barrier, column, head, row, batch);
  } else {
    copy_tile_4d_to_cluster<kv_share>(shared_destination, map, barrier, column, row, head, batch);
  }
}

// A unit of work is one query tile of one (batch, head) pair. Without AT_PERSISTENT a block has one, named by its
// block index; with it, the grid is at most one block per SM and block b takes units b, b + gridDim.x, ..., in the
// order AT_ORDER gives them. With AT_KV_SHARE > 1 a unit is a cluster's, one query tile of kv_share consecutive query
// heads of one group (of one batch), its block `rank` taking the rank-th head: the blocks of a cluster are
// consecutive along x, and cluster c takes units c, c + gridDim.x / kv_share, ... Causal masking aligns the last
// query row with the last key: row i sees keys up to i + cached.
struct Unit {
  int batch, head, kv_head;
  int first_row;  // the tile's first query row within the sequence
  int kv_tiles;   // K / V tiles the producer loads: those the block's last row sees
};

struct Schedule {
  static constexpr int head_sets = PAIRS / kv_share;  // the clusters' sets of query heads (the pairs without one)
  int sequence, cached, q_tiles, key_tiles;
  int rank;  // the block's place in its cluster
  int unit_count, first_unit, unit_step;

  __device__ __forceinline__ Schedule(int sequence_, int keys)
      : sequence(sequence_),
        cached(keys - sequence_),
        q_tiles((sequence_ + block_m - 1) / block_m),
        key_tiles((keys + block_n - 1) / block_n),
        rank(kv_share > 1 ? static_cast<int>(blockIdx.x) % kv_share : 0),
        unit_count(persistent ? head_sets * q_tiles : 1),
        first_unit(persistent ? static_cast<int>(blockIdx.x) / kv_share : 0),
        unit_step(persistent ? static_cast<int>(gridDim.x) / kv_share : 1) {}

  // K / V tiles seen by query rows [first_row, first_row + row_count): causal, up to the last row's last key (rows
  // past the sequence need none); otherwise all of them. The same for every block of a cluster: its query heads
  // share the rows, and so the key range.
  __device__ __forceinline__ int tiles_seen(int first_row, int row_count) const {
    if (!causal) return key_tiles;
    const int last_key = min(first_row + row_count, sequence) + cached;  // one past the last row's last key
    return min(key_tiles, (last_key + block_n - 1) / block_n);
  }

  __device__ __forceinline__ Unit unit_at(int unit) const {
    int head_set, tile_index;
    if (!persistent) {
      head_set = tiles_first ? static_cast<int>(blockIdx.x) / kv_share : blockIdx.y;
      tile_index = tiles_first ? q_tiles - 1 - static_cast<int>(blockIdx.y) : static_cast<int>(blockIdx.x) / kv_share;
    } else if (tiles_first) {
      head_set = unit % head_sets;
      tile_index = q_tiles - 1 - unit / head_sets;
    } else {
      head_set = unit / q_tiles;
      tile_index = unit % q_tiles;
    }
    const int pair = head_set * kv_share + rank;
    // Causal, "heads" order: a pair's longest tiles (its last rows) first.
    if (causal && !tiles_first) tile_index = q_tiles - 1 - tile_index;
    Unit result;
    result.batch = pair / heads;
    result.head = pair % heads;
    result.kv_head = result.head / kv_group;
    result.first_row = tile_index * block_m;
    result.kv_tiles = tiles_seen(result.first_row, block_m);
    return result;
  }
};

}  // namespace wgmma_path


__device__ __forceinline__ void attention_path(int sequence, int keys, float scale, const Element*, const Element*,
                                               const Element*, Element* o, float* lse, const TensorMap& q_map,
                                               const TensorMap& k_map, const TensorMap& v_map) {
  using namespace wgmma_path;
  extern __shared__ unsigned char attention_shared[];
  // wgmma and TMA derive the 128-byte swizzle from address bits: every tile starts on a 1024-byte boundary
  // (SHARED_BYTES has 1024 bytes of slack for this).
  const unsigned q_tile = (shared_address(attention_shared) + swizzle_atom_bytes - 1) & ~(swizzle_atom_bytes - 1u);
  const unsigned stages_base = q_tile + q_bytes;
  const unsigned barriers_base = stages_base + stages * stage_bytes;
  const unsigned q_full = barriers_base;
  const unsigned q_empty = barriers_base + 8u;
  const auto k_full = [&](int stage) { return barriers_base + 8u * (2 + stage); };
  const auto v_full = [&](int stage) { return barriers_base + 8u * (2 + stages + stage); };
  const auto empty = [&](int stage) { return barriers_base + 8u * (2 + 2 * stages + stage); };

  const Schedule schedule(sequence, keys);
  const int cached = schedule.cached;
  const int warpgroup = threadIdx.x / warpgroup_threads;

  if (threadIdx.x == 0) {
    barrier_init(q_full, 1);
    barrier_init(q_empty, consumers * 4);  // one arrival per consumer warp once its last S = Q K^T is done
    for (int stage = 0; stage < stages; ++stage) {
      barrier_init(k_full(stage), 1);
      barrier_init(v_full(stage), 1);
      // One arrival per consumer warp of every block of the cluster: K and V arrive in every block from each
      // block's share of the copies, so a stage may be refilled only once all of them have read it.
      barrier_init(empty(stage), consumers * 4 * kv_share);
    }
    barrier_init_fence();
  }
  // With a cluster, no block's copies or arrivals may reach another block's barriers before it has initialised them.
  if constexpr (kv_share > 1) {
    cluster_sync<kv_share>();
  } else {
    __syncthreads();
  }

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(producer_registers));
    if (threadIdx.x == 0) {
      int ring = 0;  // K / V tiles loaded so far: stage ring % stages, phase ring / stages % 2
      int round = 0;  // units started
      for (int unit = schedule.first_unit; unit < schedule.unit_count; unit += schedule.unit_step, ++round) {
        const Unit work = schedule.unit_at(unit);
        // The next Q overwrites the last: wait until every consumer's last score product has read it.
        if (round > 0) barrier_wait(q_empty, (round - 1) % 2);
        barrier_arrive_expect_bytes(q_full, q_bytes);  // the whole box, rows past the end zero-filled included
#pragma unroll
        for (int chunk = 0; chunk < chunks; ++chunk) {
          copy_rows(q_tile + chunk * q_box_bytes, q_map, q_full, chunk * box_columns, work.first_row, work.head,
                    work.batch);
        }
        for (int tile = 0; tile < work.kv_tiles; ++tile, ++ring) {
          const int stage = ring % stages;
          barrier_wait(empty(stage), (ring / stages % 2) ^ 1);
          // This block's share of the tile's rows (all of them without a cluster); the whole tile arrives in every
          // block of the cluster, the other shares from the other blocks' copies.
          const unsigned k_tile = stages_base + stage * stage_bytes + schedule.rank * kv_share_rows * swizzle_bytes;
          const unsigned v_tile = k_tile + kv_tile_bytes;
          const int key_row = tile * block_n + schedule.rank * kv_share_rows;
          barrier_arrive_expect_bytes(k_full(stage), kv_tile_bytes);
#pragma unroll
          for (int chunk = 0; chunk < chunks; ++chunk) {
            copy_shared_rows(k_tile + chunk * kv_box_bytes, k_map, k_full(stage), chunk * box_columns, key_row,
                             work.kv_head, work.batch);
          }
          barrier_arrive_expect_bytes(v_full(stage), kv_tile_bytes);
#pragma unroll
          for (int chunk = 0; chunk < chunks; ++chunk) {
            copy_shared_rows(v_tile + chunk * kv_box_bytes, v_map, v_full(stage), chunk * box_columns, key_row,
                             work.kv_head, work.batch);
          }
        }
      }
    }
    // A block leaves only once no other block of its cluster can still arrive on its barriers.
    cluster_sync<kv_share>();
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(consumer_registers));
  const int consumer = warpgroup - 1;
  const int thread = threadIdx.x % warpgroup_threads;
  const int lane = thread % 32;
  const float scale_log2 = scale * 1.4426950408889634f;
  const unsigned q_slice = q_tile + consumer * instruction_m * swizzle_bytes;

  // S = Q K^T for the K of one stage: Q's 64 rows of this consumer (K-major, 16 columns = 32 bytes per step along a
  // swizzled row, a new box every 4 steps) against K's block_n rows, read K-major too (no transpose).
  const auto issue_scores = [&](float (&scores)[score_count], int stage) {
    const unsigned k_tile = stages_base + stage * stage_bytes;
#pragma unroll
    for (int step = 0; step < qk_steps; ++step) {
      const unsigned column_bytes = step % 4 * instruction_k * 2;
      const unsigned long long a = matrix_descriptor(q_slice + step / 4 * q_box_bytes + column_bytes, 16,
                                                     swizzle_atom_bytes);
      const unsigned long long b = matrix_descriptor(k_tile + step / 4 * kv_box_bytes + column_bytes, 16,
                                                     swizzle_atom_bytes);
      Wgmma16<block_n>::shared_a<0>(scores, a, b, step > 0);
    }
  };
  // O += P V for the V of one stage: 16 keys (16 rows of V, two swizzle atoms) per step; V's 64-column boxes are
  // the N-major operand's chunks, kv_box_bytes apart.
  const auto issue_output = [&](float (&output)[output_count], const unsigned (&p)[p_steps][4], int stage) {
    const unsigned v_tile = stages_base + stage * stage_bytes + kv_tile_bytes;
#pragma unroll
    for (int step = 0; step < p_steps; ++step) {
      const unsigned long long b = matrix_descriptor(v_tile + step * instruction_k * swizzle_bytes, kv_box_bytes,
                                                     swizzle_atom_bytes);
      Wgmma16<compute_dim>::register_a<1>(output, p[step], b, 1);
    }
  };
  const auto release = [&](unsigned barrier) {
    if (lane == 0) barrier_arrive(barrier);
  };
  // A stage is this warp's to release in every block of the cluster (lane r arrives in block r).
  const auto release_stage = [&](int stage) {
    if constexpr (kv_share > 1) {
      if (lane < kv_share) barrier_arrive_in_block(empty(stage), lane);
    } else {
      release(empty(stage));
    }
  };

  // Turns (AT_PINGPONG): per unit, one for tile 0's scores, one per later tile of the block for both its products
  // (an empty turn for a tile this consumer skips), one for the last output product: kv_tiles + 1 for every
  // consumer. The last consumer opens consumer 0's first turn and, to leave no arrival pending at exit, does not
  // pass on its very last turn.
  bool last_turn = false;
  const auto take_turn = [&] {
    if (pingpong) wait_turn(consumer);
  };
  const auto end_turn = [&] {
    if (pingpong && !(consumer == consumers - 1 && last_turn)) pass_turn(consumer);
  };
  if (pingpong && consumer == consumers - 1) pass_turn(consumer);

  int ring = 0;   // K / V tiles consumed so far, as the producer counts them
  int round = 0;  // units started
  for (int unit = schedule.first_unit; unit < schedule.unit_count; unit += schedule.unit_step, ++round) {
    const Unit work = schedule.unit_at(unit);
    const bool last_unit = unit + schedule.unit_step >= schedule.unit_count;
    const int consumer_first_row = work.first_row + consumer * instruction_m;
    // The tiles this consumer's rows see (one where they all lie past the sequence: a tile must be computed for the
    // pipeline's shape, and none is stored); the block's later tiles are released untouched.
    const int kv_tiles = consumer_first_row >= sequence ? 1 : schedule.tiles_seen(consumer_first_row, instruction_m);
    const int row0 = consumer_first_row + thread / 32 * 16 + lane / 4;  // the thread's first row
    int key_end[2];  // keys each of the thread's two rows sees
#pragma unroll
    for (int half = 0; half < 2; ++half) key_end[half] = causal ? min(keys, row0 + half * 8 + cached + 1) : keys;
    // Tiles reaching past the last key, or (causal) past the consumer's first row's last key, are masked.
    const auto masked = [&](int tile) {
      const int tile_end = (tile + 1) * block_n;
      return tile_end > keys || (causal && tile_end > consumer_first_row + cached + 1);
    };
    const auto stage_of = [&](int tile) { return (ring + tile) % stages; };
    const auto phase_of = [&](int tile) { return static_cast<unsigned>((ring + tile) / stages % 2); };
    // The block's tiles past this consumer's last, in order: once the producer has loaded each (its stage's previous
    // use is then over), this consumer's part of the stage's release, and with turns an empty turn, so every
    // consumer takes as many. Each tile's release comes before its turn: a later tile's load, which the other
    // consumers' turns wait for, needs this consumer's release of the tile `stages` before it.
    const auto release_skipped = [&](int block_tiles, int own_tiles, bool final_unit) {
      for (int tile = own_tiles; tile < block_tiles; ++tile) {
        barrier_wait(k_full(stage_of(tile)), phase_of(tile));
        release_stage(stage_of(tile));
        last_turn = final_unit && tile == block_tiles - 1;
        take_turn();
        end_turn();
      }
    };

    float output[output_count];
#pragma unroll
    for (int index = 0; index < output_count; ++index) output[index] = 0.0f;
    RowState state;
    unsigned p[p_steps][4];
    float correction[2];
    barrier_wait(q_full, round % 2);

    if constexpr (!overlap) {
      float scores[score_count];
      for (int tile = 0; tile < kv_tiles; ++tile) {
        const int stage = stage_of(tile);
        barrier_wait(k_full(stage), phase_of(tile));
        wgmma_fence();
        issue_scores(scores, stage);
        wgmma_commit();
        wgmma_wait<0>();
        accumulators_ready(scores);
        if (tile == kv_tiles - 1) release(q_empty);
        online_softmax(scores, state, scale_log2, masked(tile), key_end, tile * block_n, correction);
        rescale_output(output, correction);
        pack_probabilities(scores, p);
        barrier_wait(v_full(stage), phase_of(tile));
        wgmma_fence();
        issue_output(output, p, stage);
        wgmma_commit();
        wgmma_wait<0>();
        accumulators_ready(output);
        release_stage(stage);
      }
    } else {
      // Tile 0's scores alone, then per tile j >= 1: issue S_j and O += P_{j-1} V_{j-1}, wait for S_j, softmax of
      // S_j, wait for the output product (only then may O be rescaled and P overwritten), rescale O, pack P_j.
      float scores[score_count];
      barrier_wait(k_full(stage_of(0)), phase_of(0));
      take_turn();
      wgmma_fence();
      issue_scores(scores, stage_of(0));
      wgmma_commit();
      end_turn();
      wgmma_wait<0>();
      accumulators_ready(scores);
      if (kv_tiles == 1) release(q_empty);
      online_softmax(scores, state, scale_log2, masked(0), key_end, 0, correction);
      pack_probabilities(scores, p);
      for (int tile = 1; tile < kv_tiles; ++tile) {
        const int stage = stage_of(tile);
        const int previous = stage_of(tile - 1);
        barrier_wait(k_full(stage), phase_of(tile));
        barrier_wait(v_full(previous), phase_of(tile - 1));
        take_turn();
        wgmma_fence();
        issue_scores(scores, stage);
        wgmma_commit();
        issue_output(output, p, previous);
        wgmma_commit();
        end_turn();
        wgmma_wait<1>();
        accumulators_ready(scores);
        if (tile == kv_tiles - 1) release(q_empty);
        online_softmax(scores, state, scale_log2, masked(tile), key_end, tile * block_n, correction);
        wgmma_wait<0>();
        accumulators_ready(output);
        release_stage(previous);
        rescale_output(output, correction);
        pack_probabilities(scores, p);
      }
      const int last = stage_of(kv_tiles - 1);
      barrier_wait(v_full(last), phase_of(kv_tiles - 1));
      last_turn = last_unit && kv_tiles == work.kv_tiles;
      take_turn();
      wgmma_fence();
      issue_output(output, p, last);
      wgmma_commit();
      end_turn();
      wgmma_wait<0>();
      accumulators_ready(output);
      release_stage(last);
      // With turns, the tiles skipped before the stores: the other consumers' next turns wait for these.
      if (pingpong) release_skipped(work.kv_tiles, kv_tiles, last_unit);
    }

    // Each row's sum over its four threads, then O / sum into the output rows, two elements per store; rows past
    // the sequence are not stored.
    float total[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      total[half] = state.sum[half];
      total[half] += __shfl_xor_sync(0xffffffffu, total[half], 1);
      total[half] += __shfl_xor_sync(0xffffffffu, total[half], 2);
      // The log-sum-exp of the row's scaled scores: the maximum and the sum are in powers of two.
      const int row = row0 + half * 8;
      if (lse != nullptr && lane % 4 == 0 && row < sequence) {
        lse[(static_cast<long long>(work.batch) * heads + work.head) * sequence + row] =
            (state.max[half] + __log2f(total[half])) * 0.6931471805599453f;
      }
      total[half] = 1.0f / total[half];
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = row0 + half * 8;
      if (row >= sequence) continue;
      Element* const out_row = o + row_offset(work.batch, work.head, row, heads, sequence, o_row_stride) + lane % 4 * 2;
#pragma unroll
      for (int chunk = 0; chunk < stored_chunks; ++chunk) {
        *reinterpret_cast<unsigned*>(out_row + chunk * 8) =
            pack_two(output[chunk * 4 + half * 2] * total[half], output[chunk * 4 + half * 2 + 1] * total[half]);
      }
    }

    if (!pingpong) release_skipped(work.kv_tiles, kv_tiles, last_unit);
    ring += work.kv_tiles;
  }
  cluster_sync<kv_share>();
}
