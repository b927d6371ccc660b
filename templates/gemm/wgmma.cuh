// GEMM on Hopper tensor cores: warpgroup wgmma.mma_async fed by TMA bulk tensor copies (sm_90a only).
//
// Shape of the kernel, the recipe public Hopper GEMMs reach cuBLAS with:
//   - Warpgroup 0 is the producer: one thread issues cp.async.bulk.tensor copies of A and B tiles into a ring of
//     WG_STAGES shared-memory stages; each copy completes on the stage's "full" mbarrier (transaction bytes).
//   - Warpgroups 1..WG_CONSUMERS are consumers: each waits on "full", issues wgmma on its WG_BM / WG_CONSUMERS rows of
//     the tile, and arrives on the stage's "empty" mbarrier once the tensor cores have read it, so the producer runs
//     up to WG_STAGES blocks of K ahead.
//   - setmaxnreg moves registers from the producer (which needs few) to the consumers' fp32 accumulators.
//   - WG_PINGPONG: instead of splitting each tile by rows, the consumers take whole tiles in turn (consumer 0 the
//     block's 1st, 3rd, ... tile), so one consumer's epilogue overlaps the other's wgmma and the tensor cores do not
//     wait for stores to C. Each stage is then read by one consumer only.
//   - Persistent: with WG_PERSISTENT the grid is one block per SM and each block walks tiles blockIdx.x,
//     blockIdx.x + gridDim.x, ...; the producer prefetches the next tile while the consumers store the last.
//     Tiles are numbered in groups of WG_GROUP_M tile rows so blocks running at once share A and B tiles in L2.
//
// Operand layouts (the tensor maps are encoded by the evaluation worker with 128-byte swizzle):
//   A (M x K, K contiguous): one box of WG_BK x WG_BM per stage; rows of 64 halves = 128 bytes, swizzled in
//     8-row (1024-byte) atoms, which is wgmma's K-major 128-byte-swizzle layout.
//   B (K x N, N contiguous): WG_BN / 64 boxes of 64 (N) x WG_BK (K) per stage; wgmma reads B "MN-major" through the
//     transpose bit, allowed for 16-bit inputs only. That is why tf32 (which would need a K-major B) is not offered.
// Shapes must be whole tiles: the space's constraints reject M % WG_BM, N % WG_BN or K % WG_BK != 0.
//
// Measured on the H200 with scripts/wgmma_probe.cu (C bit-identical to cuBLAS's at beta = 0; fraction of cuBLAS in the
// same run):
//   4096^3 f16: 128 x 256 cooperative, 4 stages 697 TFLOP/s = 91%; 128 x 128 ping-pong, 6 stages 709 = 93%
//   8192^3 f16: 96% and 97%; bf16: 91% and 93% at 4096^3, 96.5% and 92% at 8192^3.
// Not done: 2-block clusters with TMA multicast (they need a cluster launch) and an asynchronous TMA-store
// epilogue, the two pieces public kernels add to close the rest of the gap at 4096^3.
#pragma once

#if !defined(GEMM_INPUT_F16) && !defined(GEMM_INPUT_BF16)
#error "the wgmma path takes fp16 or bf16 inputs: tf32 wgmma needs a K-major B, and B is N-major here"
#endif

#if defined(GEMM_INPUT_F16)
#define WGMMA_INPUT_TYPES ".f16.f16"
#else
#define WGMMA_INPUT_TYPES ".bf16.bf16"
#endif

namespace wgmma_path {

constexpr int block_m = WG_BM;
constexpr int block_n = WG_BN;
constexpr int block_k = WG_BK;
constexpr int stages = WG_STAGES;
constexpr int consumers = WG_CONSUMERS;
constexpr int warpgroup_threads = 128;
constexpr int instruction_m = 64;                       // wgmma rows per instruction
constexpr int instruction_k = 16;                       // wgmma depth for 16-bit inputs
constexpr int swizzle_bytes = 128;                      // one swizzled row: 64 halves
constexpr int swizzle_atom_bytes = 8 * swizzle_bytes;   // the 8-row period of the 128-byte swizzle
constexpr int element_bytes = 2;
constexpr int b_box_columns = swizzle_bytes / element_bytes;
constexpr bool pingpong = WG_PINGPONG;
constexpr int consumer_rows = pingpong ? block_m : block_m / consumers;  // rows of a tile one consumer computes
constexpr int stage_readers = pingpong ? 1 : consumers;                   // consumers that read each stage
constexpr int consumer_slices = consumer_rows / instruction_m;
constexpr int a_stage_bytes = block_m * block_k * element_bytes;
constexpr int b_box_bytes = block_k * b_box_columns * element_bytes;
constexpr int b_stage_bytes = block_k * block_n * element_bytes;
constexpr int stage_bytes = a_stage_bytes + b_stage_bytes;
// 40 registers are plenty for the one thread that issues copies; the consumers get the rest of the 64K-register file
// (384 threads: 128 * 40 + 256 * 232 = 64512; 256 threads: 128 * 40 + 128 * 240).
constexpr int producer_registers = 40;
constexpr int consumer_registers = consumers == 2 ? 232 : 240;

static_assert(block_k * element_bytes == swizzle_bytes, "a row of an A box must be exactly one 128-byte swizzle row");
static_assert(consumer_rows % instruction_m == 0, "each consumer owns whole 64-row wgmma slices");
static_assert(block_n % b_box_columns == 0, "B arrives in 64-column boxes");
static_assert(THREADS == warpgroup_threads * (1 + consumers), "one producer and WG_CONSUMERS consumer warpgroups");

// ------------------------------------------------------------------------------------------------ mbarriers
__device__ __forceinline__ void barrier_init(unsigned barrier, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(barrier), "r"(arrivals) : "memory");
}

// Arrives and announces how many bytes the copies completing on this barrier will deliver in the current phase.
__device__ __forceinline__ void barrier_arrive_expect_bytes(unsigned barrier, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier), "r"(bytes) : "memory");
}

__device__ __forceinline__ void barrier_arrive(unsigned barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(barrier) : "memory");
}

// Waits until the phase with the given parity has completed. Waiting on the parity before a barrier's first phase
// returns at once, which is how the producer finds every stage empty at the start.
__device__ __forceinline__ void barrier_wait(unsigned barrier, unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n}\n"
        : "=r"(done)
        : "r"(barrier), "r"(parity)
        : "memory");
  }
}

// ------------------------------------------------------------------------------------------------ TMA
__device__ __forceinline__ void copy_tile(unsigned destination, const TensorMap& map, unsigned barrier, int inner,
                                          int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          destination),
      "l"(reinterpret_cast<unsigned long long>(&map)), "r"(inner), "r"(outer), "r"(barrier)
      : "memory");
}

// ------------------------------------------------------------------------------------------------ wgmma
// Shared-memory matrix descriptor with 128-byte swizzle. K-major operands (A) use only the stride between 8-row
// groups; MN-major operands (B) also use the leading offset, the distance between 64-column chunks.
__device__ __forceinline__ unsigned long long matrix_descriptor(unsigned address, unsigned leading_bytes,
                                                                unsigned stride_bytes) {
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
         static_cast<unsigned long long>(leading_bytes >> 4) << 16 |
         static_cast<unsigned long long>(stride_bytes >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int pending> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(pending) : "memory");
}

// Keeps the compiler from moving reads of the accumulators above the wait that makes them valid.
template <int count> __device__ __forceinline__ void accumulators_ready(float (&accumulators)[count]) {
#pragma unroll
  for (int index = 0; index < count; ++index) asm volatile("" : "+f"(accumulators[index])::"memory");
}

// D (64 x N fp32, in registers) += A (64 x 16, shared, K-major) * B (16 x N, shared, N-major: transpose bit set).
// scale_d == 0 starts D from zero instead of accumulating.
template <int n> struct Wgmma;

template <> struct Wgmma<64> {
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[32], unsigned long long a_descriptor,
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32" WGMMA_INPUT_TYPES " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
        "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, accumulate, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d));
  }
};

template <> struct Wgmma<128> {
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[64], unsigned long long a_descriptor,
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32" WGMMA_INPUT_TYPES " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
        "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
        "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "
        "%60, %61, %62, %63"
        "}, %64, %65, accumulate, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d));
  }
};

template <> struct Wgmma<256> {
  static __device__ __forceinline__ void multiply_accumulate(float (&d)[128], unsigned long long a_descriptor,
                                                            unsigned long long b_descriptor, int scale_d) {
    asm volatile(
        "{\n.reg .pred accumulate;\nsetp.ne.b32 accumulate, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32" WGMMA_INPUT_TYPES " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
        "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
        "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "
        "%60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, "
        "%72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, "
        "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
        "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, "
        "%120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, accumulate, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
          "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
          "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
          "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
          "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
          "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),
          "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]),
          "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]),
          "+f"(d[126]), "+f"(d[127])
        : "l"(a_descriptor), "l"(b_descriptor), "r"(scale_d));
  }
};

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

__device__ __forceinline__ void store_pair(Output* destination, float first, float second) {
#if defined(GEMM_INPUT_F16)
  *reinterpret_cast<__half2*>(destination) = __floats2half2_rn(first, second);
#else
  *reinterpret_cast<__nv_bfloat162*>(destination) = __floats2bfloat162_rn(first, second);
#endif
}

// alpha * D + beta * C into C. Register j * 4 + {0, 1} of the wgmma fragment holds row lane / 4 of the warp's 16
// rows, columns 8 j + 2 (lane % 4) + {0, 1}; registers j * 4 + {2, 3} the same columns 8 rows further down.
__device__ __forceinline__ void store_slice(const float (&accumulators)[block_n / 2], int row_base, int column_base,
                                            int n, float alpha, float beta, Output* c) {
  const int thread = threadIdx.x % warpgroup_threads;
  const int row = row_base + thread / 32 * 16 + thread % 32 / 4;
  const int column = column_base + thread % 4 * 2;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    Output* row_start = c + static_cast<long long>(row + half * 8) * n + column;
#pragma unroll
    for (int chunk = 0; chunk < block_n / 8; ++chunk) {
      float first = alpha * accumulators[chunk * 4 + half * 2];
      float second = alpha * accumulators[chunk * 4 + half * 2 + 1];
      if (beta != 0.0f) {
        first += beta * to_float(row_start[chunk * 8]);
        second += beta * to_float(row_start[chunk * 8 + 1]);
      }
      store_pair(row_start + chunk * 8, first, second);
    }
  }
}

}  // namespace wgmma_path

__device__ __forceinline__ void gemm_path(int m, int n, int k, float alpha, float beta, const Input* /*a*/,
                                          const Input* /*b*/, Output* c, const TensorMap& a_map,
                                          const TensorMap& b_map) {
  using namespace wgmma_path;
  extern __shared__ unsigned char wgmma_shared[];
  // The 128-byte swizzle pattern repeats every 1024 bytes of shared address, and wgmma and TMA both derive it from
  // the address bits: every tile must start on a 1024-byte boundary (SHARED_BYTES has 1024 bytes of slack for this).
  const unsigned tiles_base = (shared_address(wgmma_shared) + swizzle_atom_bytes - 1) & ~(swizzle_atom_bytes - 1u);
  const unsigned barriers_base = tiles_base + stages * stage_bytes;
  const auto full_barrier = [&](int stage) { return barriers_base + 8u * stage; };
  const auto empty_barrier = [&](int stage) { return barriers_base + 8u * (stages + stage); };
  // Ping-pong: completes each time the given consumer has issued the wgmma of one of its tiles.
  const auto turn_barrier = [&](int consumer) { return barriers_base + 8u * (2 * stages + consumer); };

  const int tiles_m = m / block_m;
  const int tiles_n = n / block_n;
  const int tile_count = tiles_m * tiles_n;
  const int k_blocks = k / block_k;
  const int warpgroup = threadIdx.x / warpgroup_threads;

  if (threadIdx.x == 0) {
    for (int stage = 0; stage < stages; ++stage) {
      barrier_init(full_barrier(stage), 1);
      // One arrival per consumer warp: each warp knows only that its own wgmma reads are done.
      barrier_init(empty_barrier(stage), stage_readers * 4);
    }
    for (int consumer = 0; consumer < consumers; ++consumer) barrier_init(turn_barrier(consumer), 4);
    // Makes the initialised barriers visible to the copy engine before any copy completes on them.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(producer_registers));
    if (threadIdx.x != 0) return;
    int stage = 0;
    unsigned phase = 0;
    for (int tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
      int tile_row, tile_column;
      tile_position(tile, tiles_m, tiles_n, tile_row, tile_column);
      for (int k_block = 0; k_block < k_blocks; ++k_block) {
        barrier_wait(empty_barrier(stage), phase ^ 1);
        const unsigned a_tile = tiles_base + stage * stage_bytes;
        const unsigned b_tile = a_tile + a_stage_bytes;
        barrier_arrive_expect_bytes(full_barrier(stage), stage_bytes);
        copy_tile(a_tile, a_map, full_barrier(stage), k_block * block_k, tile_row * block_m);
#pragma unroll
        for (int box = 0; box < block_n / b_box_columns; ++box) {
          copy_tile(b_tile + box * b_box_bytes, b_map, full_barrier(stage),
                    tile_column * block_n + box * b_box_columns, k_block * block_k);
        }
        if (++stage == stages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(consumer_registers));
    const int consumer = warpgroup - 1;
    const bool signals_warp = threadIdx.x % 32 == 0;
    const int consumer_first_row = pingpong ? 0 : consumer * consumer_rows;  // within the tile
    float accumulators[consumer_slices][block_n / 2];
    // Stages are filled in the block's tile order; a ping-pong consumer skips the k_blocks stages of each tile that
    // belongs to the other consumer.
    const int first_tile = blockIdx.x + (pingpong ? consumer * gridDim.x : 0);
    const int tile_step = pingpong ? consumers * gridDim.x : gridDim.x;
    const int skipped_stages = pingpong ? (consumers - 1) * k_blocks : 0;
    int stage = pingpong ? consumer * k_blocks % stages : 0;
    unsigned phase = pingpong ? consumer * k_blocks / stages % 2 : 0;
    unsigned turn = 0;  // tiles this consumer has started
    for (int tile = first_tile; tile < tile_count; tile += tile_step) {
      int tile_row, tile_column;
      tile_position(tile, tiles_m, tiles_n, tile_row, tile_column);
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
      int previous_stage = -1;
      for (int k_block = 0; k_block < k_blocks; ++k_block) {
        barrier_wait(full_barrier(stage), phase);
        const unsigned a_tile = tiles_base + stage * stage_bytes + consumer_first_row * swizzle_bytes;
        const unsigned b_tile = tiles_base + stage * stage_bytes + a_stage_bytes;
        wgmma_fence();
#pragma unroll
        for (int step = 0; step < block_k / instruction_k; ++step) {
          // A: 16 K-elements are 32 bytes along the swizzled row. B: 16 K-rows are two whole swizzle atoms.
          const unsigned long long b_descriptor =
              matrix_descriptor(b_tile + step * instruction_k * swizzle_bytes, b_box_bytes, swizzle_atom_bytes);
#pragma unroll
          for (int slice = 0; slice < consumer_slices; ++slice) {
            const unsigned long long a_descriptor = matrix_descriptor(
                a_tile + slice * instruction_m * swizzle_bytes + step * instruction_k * element_bytes, 16,
                swizzle_atom_bytes);
            Wgmma<block_n>::multiply_accumulate(accumulators[slice], a_descriptor, b_descriptor,
                                                k_block > 0 || step > 0);
          }
        }
        wgmma_commit();
        // One group stays in flight: this block's wgmma overlaps the wait for the next stage, and the stage the
        // previous group read is handed back to the producer as soon as that group is done.
        wgmma_wait<1>();
        if (previous_stage >= 0 && signals_warp) barrier_arrive(empty_barrier(previous_stage));
        previous_stage = stage;
        if (++stage == stages) {
          stage = 0;
          phase ^= 1;
        }
      }
      if (pingpong && signals_warp) barrier_arrive(turn_barrier(consumer));
      ++turn;
      wgmma_wait<0>();
      if (previous_stage >= 0 && signals_warp) barrier_arrive(empty_barrier(previous_stage));
      if (pingpong) {
        const int position = stage + skipped_stages;
        phase ^= position / stages % 2;
        stage = position % stages;
      }
#pragma unroll
      for (int slice = 0; slice < consumer_slices; ++slice) {
        accumulators_ready(accumulators[slice]);
        store_slice(accumulators[slice], tile_row * block_m + consumer_first_row + slice * instruction_m,
                    tile_column * block_n, n, alpha, beta, c);
      }
    }
  }
}
