// Layer normalisation over each row of a rows x cols matrix, as a tunable template:
//   out[r][c] = (in[r][c] - mean_r) / sqrt(variance_r + epsilon) * gamma[c] + beta[c]
// Element type (input, gamma, beta, output): float, or __nv_bfloat16 when the spec compiles with -DLAYERNORM_BF16
// (statistics and arithmetic stay fp32).
// With -DLAYERNORM_RESIDUAL the row normalised is the sum of two matrices, computed in the same pass:
//   sum[r][c] = in[r][c] + residual[r][c]      (written out, rounded to the element type)
//   out[r][c] = layer normalisation of sum[r][c], as above
// the pre-norm transformer's residual add: the kernel reads in and residual once and writes sum and out once.
// With -DLAYERNORM_RMS the template computes RMSNorm (what Llama-family decoders use; issue 30) instead:
//   out[r][c] = in[r][c] / sqrt(mean over c' of in[r][c']^2 + epsilon) * gamma[c]
// no mean is subtracted and there is no beta (the kernel has no beta parameter). RMSNorm is layer normalisation
// minus two terms, so it is a mode of this template rather than a template of its own: the paths that make
// layernorm reach 93% of the copy ceiling (persistent blocks, staged prefetch, clusters, tickets) serve it
// unchanged, and a fix to them serves both. Its statistic is the one reduction of the sum of squares, so the
// space makes STATS irrelevant for it (spaces/layernorm.yaml, CENTRED = 0).
//
// Two paths, one file each, chosen by the PERSISTENT parameter:
//   layernorm/row_groups.cuh   one launch block (cluster) per group of rows
//   layernorm/persistent.cuh   a grid of resident blocks (clusters) looping over row groups, prefetching the next
// and what they share in layernorm/rows.cuh. Every parameter is a macro, so the template parameters carry k-prefixed
// names.
//   ROW_THREADS     threads of a block that share one row (32: a warp per row; more: warps combined in shared memory)
//   ROWS_PER_BLOCK  rows per thread block
//   VEC             elements per vector access
//   CLUSTER         blocks of a thread-block cluster that split each row into slices of cols / CLUSTER (sm_90;
//                   1: a row stays in one block); statistics meet in distributed shared memory (common/row_reduce.cuh)
//   CACHE_ROW       true: the slice is read once into registers (ROW_ITEMS vectors per thread), the minimum traffic;
//                   false: statistics from streaming passes, then a last pass re-reads the slice (usually from L2;
//                   with a residual the passes after the first read the stored sum)
//   SHARED_ROW      the slice is read once from memory into dynamic shared memory, then statistics and output come
//                   from there: the minimum traffic for slices too long for registers. Each thread reads back only
//                   the vectors it wrote, so no extra barrier is needed.
//   STATS           STATS_two_pass: the mean first, then the sum of squared deviations (robust; one more pass over
//                   the slice); STATS_sum_of_squares: sum and sum of squares in one reduction,
//                   variance = E[x^2] - mean^2 (loses accuracy when |mean| >> deviation)
//   UNROLL          passes over memory or shared memory: vectors each thread loads before using any of them, so
//                   several loads are in flight per thread
//   PERSISTENT      CACHE_ROW only: grid-stride blocks (clusters) that loop over row groups (layernorm/persistent.cuh)
//   AFFINE          PERSISTENT only: where gamma and beta live between rows: registers (loaded once), or L1/L2
//                   (read again for every row through the read-only cache)
//   STAGES          PERSISTENT only: 0, the next group's slice is prefetched into registers; 2 or more, slices
//                   are copied ahead into STAGES shared-memory buffers with cp.async (STAGES - 1 groups ahead)
//   COPY            STAGES >= 2: thread (every thread copies its vectors, cp.async) or bulk (one thread copies each
//                   row's slice with one TMA bulk copy completing on an mbarrier; sm_90)
//   STREAM          PERSISTENT only: matrix loads and stores carry the evict-first hint (ld/st .cs), so the
//                   input and output, each touched once, do not push gamma and beta out of the caches
// cols must be a multiple of CLUSTER * VEC. A cached slice need not be a multiple of ROW_THREADS * VEC: ROW_ITEMS
// is rounded up and the last item of a thread may lie past the slice (cols 4000, 14336; issue 30); such vectors
// are neither loaded nor stored and count as zero in the statistics. Only the last item can lie past it, so the
// check costs one comparison per row and thread.
#ifdef LAYERNORM_BF16
#include "common/element_16bit.cuh"
using Element = __nv_bfloat16;
#else
#include "common/element.cuh"
using Element = float;
#endif

// The residual add's extra matrices: an input after `input` and an output before `output` in the kernel's
// parameters; the paths take both pointers always, null without a residual.
#ifdef LAYERNORM_RESIDUAL
#define LAYERNORM_HAS_RESIDUAL true
#define LAYERNORM_RESIDUAL_PARAMETER const Element* __restrict__ residual,
#define LAYERNORM_SUM_PARAMETER Element* __restrict__ sum,
#else
#define LAYERNORM_HAS_RESIDUAL false
#define LAYERNORM_RESIDUAL_PARAMETER
#define LAYERNORM_SUM_PARAMETER
#endif

// RMSNorm has no shift (beta): the paths take a null pointer for it and never read it.
#ifdef LAYERNORM_RMS
#define LAYERNORM_CENTRED false
#define LAYERNORM_BETA_PARAMETER
#else
#define LAYERNORM_CENTRED true
#define LAYERNORM_BETA_PARAMETER const Element* __restrict__ beta,
#endif

// A template with clusters puts their size on the kernel; CLUSTER is a macro, like every parameter.
#if defined(CLUSTER) && CLUSTER > 1
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 900
#error "CLUSTER > 1 needs sm_90 or newer (thread-block clusters); the space's constraint should have excluded it"
#endif
#define ROW_CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define ROW_CLUSTER_DIMS
#endif

#include "layernorm/rows.cuh"
#include "layernorm/row_groups.cuh"
#include "layernorm/persistent.cuh"

template <int kRowThreads, int kRowsPerBlock, int kVec, bool kCacheRow, bool kTwoPass, int kRowItems, int kUnroll,
          bool kSharedRow, int kCluster, bool kPersistent, bool kAffineInRegisters, bool kStream, int kStages,
          bool kBulkCopy>
__global__ void __launch_bounds__(kRowThreads * kRowsPerBlock) ROW_CLUSTER_DIMS
    layernorm(int rows, int cols, float epsilon, const Element* __restrict__ input, LAYERNORM_RESIDUAL_PARAMETER
              const Element* __restrict__ gamma, LAYERNORM_BETA_PARAMETER LAYERNORM_SUM_PARAMETER
              Element* __restrict__ output, int* __restrict__ row_counters) {
#ifndef LAYERNORM_RESIDUAL
  const Element* residual = nullptr;
  Element* sum = nullptr;
#endif
#ifdef LAYERNORM_RMS
  const Element* beta = nullptr;
#endif
  // RMSNorm's one statistic is the sum of squares, whatever STATS says (the space holds STATS at its default).
  constexpr bool kTwoPassStatistics = kTwoPass && LAYERNORM_CENTRED;
  if constexpr (kPersistent) {
    layernorm_persistent<kRowThreads, kRowsPerBlock, kVec, kTwoPassStatistics, kRowItems, kCluster, kAffineInRegisters,
                         kStream, kStages, kBulkCopy, LAYERNORM_HAS_RESIDUAL, LAYERNORM_CENTRED>(
        rows, cols, epsilon, input, residual, gamma, beta, sum, output, row_counters);
  } else {
    layernorm_row_groups<kRowThreads, kRowsPerBlock, kVec, kCacheRow, kTwoPassStatistics, kRowItems, kUnroll,
                         kSharedRow, kCluster, LAYERNORM_HAS_RESIDUAL, LAYERNORM_CENTRED>(
        rows, cols, epsilon, input, residual, gamma, beta, sum, output);
  }
}
