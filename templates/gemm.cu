// GEMM, C = alpha * A * B + beta * C, with A (m x k), B (k x n) and C (m x n) row-major and dense.
//
// One template, three paths chosen by the enumeration parameter PATH, so one spec lets the tuner compare them on
// the same problem:
//   simt      CUDA-core FMAs on register tiles staged through shared memory   (gemm/simt.cuh)
//   mma_sync  warp-level tensor-core mma.sync fed by cp.async pipelines       (gemm/mma_sync.cuh)
//   wgmma     Hopper warpgroup wgmma fed by TMA bulk tensor copies (sm_90a)   (gemm/wgmma.cuh)
// Each path header defines gemm_path() with the signature below; only the chosen one is compiled.
// The tensor maps describe A and B for TMA; the other paths ignore them. A spec may fuse an epilogue into the store
// of C (bias + GELU, bias + residual: gemm/epilogue.cuh), whose inputs come between b and c. The last two arguments
// are split-K's zeroed work buffers (gemm/common.cuh, SplitWorkspace), used by the wgmma path when WG_SPLIT_K > 1.
#include "gemm/common.cuh"
#include "gemm/epilogue.cuh"

#if PATH_simt
#include "gemm/simt.cuh"
#elif PATH_mma_sync
#include "gemm/mma_sync.cuh"
#elif PATH_wgmma
#include "gemm/wgmma.cuh"
#endif

// A path may ask for a thread-block cluster (wgmma with WG_CLUSTER > 1 multicasts B within it).
#ifndef GEMM_CLUSTER_DIMS
#define GEMM_CLUSTER_DIMS
#endif

extern "C" __global__ void GEMM_CLUSTER_DIMS __launch_bounds__(THREADS, BLOCKS_PER_SM)
    gemm(int m, int n, int k, float alpha, float beta, const Input* __restrict__ a, const Input* __restrict__ b,
         GEMM_EPILOGUE_PARAMETERS Output* __restrict__ c, const __grid_constant__ TensorMap a_map,
         const __grid_constant__ TensorMap b_map, float* __restrict__ split_partials,
         unsigned* __restrict__ split_counters) {
  gemm_path(m, n, k, alpha, beta, a, b, c, a_map, b_map, Epilogue GEMM_EPILOGUE_INPUTS,
            SplitWorkspace{split_partials, split_counters});
}
