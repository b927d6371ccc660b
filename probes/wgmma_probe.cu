// Standalone check of the wgmma GEMM path (templates/gemm/wgmma.cuh) on a Hopper GPU, outside the tuner:
// encodes the tensor maps the way the evaluation worker does, runs templates/gemm.cu's entry point on M x N x K,
// compares C with cuBLAS (cublasGemmEx, fp32 accumulation) and prints both speeds.
//
// Build: CMake with -DKERNLATHE_BUILD_PROBES=ON builds two configurations (probes/CMakeLists.txt):
// build/probes/wgmma_probe (the defaults below) and build/probes/wgmma_probe_bf16_cluster. Another configuration is
// one binary by hand, from the repository root (every -D has a default below), as one command:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Itemplates -DWG_BN=128 -DWG_PINGPONG=1
//        probes/wgmma_probe.cu -o wgmma_probe -lcuda -lcublas
// Run:  ./wgmma_probe [M N K [repetitions [alpha beta]]]      (default 4096 4096 4096 20 1 0)
// Output: one line `config ... max_error ... ok|WRONG ... wgmma_tflops ... cublas_tflops ... fraction ...`;
// the exit status is 1 when C differs from cuBLAS beyond the tolerance.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if !defined(GEMM_INPUT_F16) && !defined(GEMM_INPUT_BF16)
#define GEMM_INPUT_F16 1
#endif
#define PATH_wgmma 1
#ifndef WG_BM
#define WG_BM 128
#endif
#ifndef WG_BN
#define WG_BN 256
#endif
#ifndef WG_BK
#define WG_BK 64
#endif
#ifndef WG_STAGES
#define WG_STAGES 4
#endif
#ifndef WG_CONSUMERS
#define WG_CONSUMERS 2
#endif
#ifndef WG_GROUP_M
#define WG_GROUP_M 8
#endif
#ifndef WG_PINGPONG
#define WG_PINGPONG 0
#endif
#ifndef WG_PERSISTENT
#define WG_PERSISTENT 1
#endif
#ifndef WG_CLUSTER
#define WG_CLUSTER 1
#endif
#define WG_SPREAD 0  // the tf32 fragment gather only; this probe takes 16-bit inputs
// The same expressions as the wgmma block of spaces/gemm.yaml.
#define THREADS (128 * (1 + WG_CONSUMERS))
#define BLOCKS_PER_SM 1
#define SHARED_BYTES (WG_STAGES * (WG_BM + WG_BN) * WG_BK * 2 + 1024 + (2 * WG_STAGES + WG_CONSUMERS) * 8)

#include "gemm.cu"

// The second of the space's cluster constraints: B's 128-byte boxes split evenly among a cluster's blocks.
static_assert(WG_BN * 2 / 128 % WG_CLUSTER == 0, "WG_BN / 64 boxes of B must divide among WG_CLUSTER blocks");

namespace {

void check_cuda(cudaError_t status, const char* call, int line) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "line %d: %s: %s\n", line, call, cudaGetErrorString(status));
  std::exit(2);
}
void check_driver(CUresult status, const char* call, int line) {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(status, &name);
  std::fprintf(stderr, "line %d: %s: %s\n", line, call, name ? name : "?");
  std::exit(2);
}
void check_cublas(cublasStatus_t status, const char* call, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "line %d: %s: cuBLAS status %d\n", line, call, static_cast<int>(status));
  std::exit(2);
}
#define CUDA_CHECK(call) check_cuda((call), #call, __LINE__)
#define DRIVER_CHECK(call) check_driver((call), #call, __LINE__)
#define CUBLAS_CHECK(call) check_cublas((call), #call, __LINE__)

#if defined(GEMM_INPUT_F16)
constexpr CUtensorMapDataType map_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
constexpr cudaDataType_t blas_type = CUDA_R_16F;
const char* type_name = "f16";
#else
constexpr CUtensorMapDataType map_type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
constexpr cudaDataType_t blas_type = CUDA_R_16BF;
const char* type_name = "bf16";
#endif

// What the worker does for a `type: tensor_map` argument: rank 2, dims innermost first, packed row stride,
// 128-byte swizzle, L2 promotion 128 bytes, out-of-bounds elements read as zero.
TensorMap encode_map(const void* buffer, unsigned long long inner, unsigned long long outer, unsigned box_inner,
                     unsigned box_outer) {
  CUtensorMap map;
  cuuint64_t dims[2] = {inner, outer};
  cuuint64_t strides[1] = {inner * sizeof(Input)};
  cuuint32_t box[2] = {box_inner, box_outer};
  cuuint32_t element_strides[2] = {1, 1};
  DRIVER_CHECK(cuTensorMapEncodeTiled(&map, map_type, 2, const_cast<void*>(buffer), dims, strides, box,
                                      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  TensorMap result;
  static_assert(sizeof(result) == sizeof(map), "TensorMap restates CUtensorMap");
  std::memcpy(&result, &map, sizeof(map));
  return result;
}

std::vector<Input> random_matrix(std::size_t count, unsigned seed) {
  std::vector<Input> values(count);
  unsigned state = seed;
  for (auto& value : values) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<Input>(static_cast<float>(state >> 8) / 8388608.0f - 1.0f);
  }
  return values;
}

float host_float(Input value) { return static_cast<float>(value); }

}  // namespace

int main(int argc, char** argv) {
  const int m = argc > 3 ? std::atoi(argv[1]) : 4096;
  const int n = argc > 3 ? std::atoi(argv[2]) : 4096;
  const int k = argc > 3 ? std::atoi(argv[3]) : 4096;
  const int repetitions = argc > 4 ? std::atoi(argv[4]) : 20;
  const float alpha = argc > 6 ? std::strtof(argv[5], nullptr) : 1.0f;
  const float beta = argc > 6 ? std::strtof(argv[6], nullptr) : 0.0f;
  if (m % WG_BM != 0 || n % WG_BN != 0 || k % WG_BK != 0) {
    std::fprintf(stderr, "%d x %d x %d is not a whole number of %d x %d x %d tiles\n", m, n, k, WG_BM, WG_BN, WG_BK);
    return 2;
  }
  if (m / WG_BM % WG_CLUSTER != 0) {  // the first of the space's cluster constraints
    std::fprintf(stderr, "%d rows are not a whole number of clusters of %d tiles of %d rows\n", m, WG_CLUSTER, WG_BM);
    return 2;
  }
  DRIVER_CHECK(cuInit(0));
  cudaDeviceProp properties;
  CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));

  const std::vector<Input> host_a = random_matrix(static_cast<std::size_t>(m) * k, 11);
  const std::vector<Input> host_b = random_matrix(static_cast<std::size_t>(k) * n, 12);
  Input *a, *b, *c, *reference;
  const std::size_t c_bytes = static_cast<std::size_t>(m) * n * sizeof(Input);
  CUDA_CHECK(cudaMalloc(&a, host_a.size() * sizeof(Input)));
  CUDA_CHECK(cudaMalloc(&b, host_b.size() * sizeof(Input)));
  CUDA_CHECK(cudaMalloc(&c, c_bytes));
  CUDA_CHECK(cudaMalloc(&reference, c_bytes));
  CUDA_CHECK(cudaMemcpy(a, host_a.data(), host_a.size() * sizeof(Input), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b, host_b.data(), host_b.size() * sizeof(Input), cudaMemcpyHostToDevice));
  // C starts equal on both sides, so beta != 0 checks the epilogue's read of C.
  const std::vector<Input> host_c_start = random_matrix(static_cast<std::size_t>(m) * n, 13);
  CUDA_CHECK(cudaMemcpy(c, host_c_start.data(), c_bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(reference, host_c_start.data(), c_bytes, cudaMemcpyHostToDevice));

  const TensorMap a_map = encode_map(a, k, m, WG_BK, WG_BM);
  const TensorMap b_map = encode_map(b, n, k, 64, WG_BK);
  const int tiles = (m / WG_BM) * (n / WG_BN);
  // Whole clusters, as WG_GRID_X of spaces/gemm.yaml: the persistent grid rounds down to a multiple of WG_CLUSTER.
  const int grid = WG_PERSISTENT ? std::min(properties.multiProcessorCount, tiles) / WG_CLUSTER * WG_CLUSTER : tiles;
  CUDA_CHECK(cudaFuncSetAttribute(gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED_BYTES));
  auto run_kernel = [&] {
    gemm<<<grid, THREADS, SHARED_BYTES>>>(m, n, k, alpha, beta, a, b, c, a_map, b_map, nullptr, nullptr);
  };

  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  // cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T, i.e. the operands swapped.
  auto run_cublas = [&] {
    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, blas_type, n, a, blas_type, k,
                              &beta, reference, blas_type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };

  run_kernel();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  run_cublas();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<Input> host_c(static_cast<std::size_t>(m) * n), host_reference(host_c.size());
  CUDA_CHECK(cudaMemcpy(host_c.data(), c, c_bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(host_reference.data(), reference, c_bytes, cudaMemcpyDeviceToHost));
  double max_error = 0.0, max_reference = 0.0;
  std::size_t wrong = 0, first_wrong = host_c.size();
  for (std::size_t index = 0; index < host_c.size(); ++index) {
    const double expected = host_float(host_reference[index]);
    const double error = std::fabs(host_float(host_c[index]) - expected);
    max_error = std::max(max_error, error);
    max_reference = std::max(max_reference, std::fabs(expected));
    // Both sides round an fp32 sum to 16 bits: allow two units in the last place of bf16 plus summation order.
    if (!(error <= 0.05 + 0.02 * std::fabs(expected))) {
      if (wrong++ == 0) first_wrong = index;
    }
  }

  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  auto seconds_per_run = [&](auto&& launch) {
    for (int warm = 0; warm < 3; ++warm) launch();
    CUDA_CHECK(cudaEventRecord(start));
    for (int repetition = 0; repetition < repetitions; ++repetition) launch();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float milliseconds = 0;
    CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start, stop));
    return milliseconds / 1000.0 / repetitions;
  };
  const double operations = 2.0 * m * n * k;
  const double kernel_seconds = seconds_per_run(run_kernel);
  CUDA_CHECK(cudaGetLastError());
  const double cublas_seconds = seconds_per_run(run_cublas);
  const double kernel_tflops = operations / kernel_seconds / 1e12;
  const double cublas_tflops = operations / cublas_seconds / 1e12;
  std::printf("config %s BM=%d BN=%d STAGES=%d CONSUMERS=%d GROUP_M=%d PERSISTENT=%d PINGPONG=%d CLUSTER=%d "
              "size=%dx%dx%d ", type_name, WG_BM, WG_BN, WG_STAGES, WG_CONSUMERS, WG_GROUP_M, WG_PERSISTENT,
              WG_PINGPONG, WG_CLUSTER, m, n, k);
  std::printf("alpha=%g beta=%g ", alpha, beta);
  std::printf("max_error=%.4g (max |C|=%.4g) wrong=%zu %s wgmma_tflops=%.1f cublas_tflops=%.1f fraction=%.3f\n",
              max_error, max_reference, wrong, wrong ? "WRONG" : "ok", kernel_tflops, cublas_tflops,
              kernel_tflops / cublas_tflops);
  if (wrong) {
    std::printf("first wrong element: row %zu column %zu got %g expected %g\n", first_wrong / n, first_wrong % n,
                host_float(host_c[first_wrong]), host_float(host_reference[first_wrong]));
  }
  return wrong ? 1 : 0;
}
