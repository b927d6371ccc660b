// Standalone check of one GEMM configuration (simt or mma_sync path) against cuBLAS, outside the tuner: correctness
// and speed. The wgmma path has its own probe (wgmma_probe.cu), which encodes tensor maps.
//
// CMake with -DKERNLATHE_BUILD_PROBES=ON builds three configurations (probes/CMakeLists.txt): build/probes/
// gemm_probe_simt, gemm_probe_simt_async and gemm_probe_mma_sync_bf16. Another configuration is one binary by hand,
// from the repository root, as one command (every parameter of the path in spaces/gemm.yaml is a -D):
//   nvcc -O3 -std=c++17 -arch=sm_90a -Itemplates -DGEMM_INPUT_F32 -DPATH_simt=1 -DBM=128 -DBN=128 -DBK=8 -DWM=32
//        -DWN=64 -DTM=8 -DTN=8 -DSTAGES=2 -DSMEM_PAD=1 -DGROUP_M=8 -DBLOCKS_PER_SM=2 -DSIMT_COPY_registers=1
//        probes/gemm_probe.cu -lcublas -o probe
//   ./probe [m n k [repetitions [label]]]      (default 4096 4096 4096 20 config)
//
// The tuner defines every parameter and derived value of spaces/gemm.yaml; here the derived values the kernel
// reads are computed below from the parameters with the same formulas. Prints one line:
//   <label> m n k  ours <TFLOPS>  cublas <TFLOPS>  ratio <ours/cublas>  max_error <abs> (<worst relative>)  ok|WRONG
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#if defined(GEMM_INPUT_F16) || defined(GEMM_INPUT_BF16)
#define ELEMENT_BYTES_VALUE 2
#else
#define ELEMENT_BYTES_VALUE 4
#endif

#ifndef PATH_simt
#define PATH_simt 0
#endif
#ifndef PATH_mma_sync
#define PATH_mma_sync 0
#endif
#ifndef PATH_wgmma
#define PATH_wgmma 0
#endif

#if !PATH_wgmma
#define THREADS ((BM / WM) * (BN / WN) * 32)
#if PATH_mma_sync
#define PAD_A (SMEM_PAD ? 16 / ELEMENT_BYTES_VALUE : 0)
#define PAD_B (SMEM_PAD ? 8 : 0)
#define SHARED_BYTES (STAGES * (BM * (BK + PAD_A) + BK * (BN + PAD_B)) * ELEMENT_BYTES_VALUE)
#else
#define PAD_A (SMEM_PAD ? 4 : 0)
#define PAD_B 0
#if SIMT_COPY_async
#define SHARED_BYTES (STAGES * BK * (BM + PAD_A + BN) * 4)
#else
#define SHARED_BYTES (2 * BK * (BM + PAD_A + BN) * 4)
#endif
#endif
#endif

#include "../templates/gemm.cu"

#define CHECK_CUDA(call)                                                                                    \
  do {                                                                                                      \
    cudaError_t status_ = (call);                                                                           \
    if (status_ != cudaSuccess) {                                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status_));     \
      std::exit(1);                                                                                         \
    }                                                                                                       \
  } while (0)
#define CHECK_CUBLAS(call)                                                                                  \
  do {                                                                                                      \
    cublasStatus_t status_ = (call);                                                                        \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, int(status_));      \
      std::exit(1);                                                                                         \
    }                                                                                                       \
  } while (0)

// Uniform in [-1, 1) from a hash of the index, so no host-side generation of 64 M values is needed.
__global__ void fill_random(Input* data, size_t count, unsigned seed) {
  for (size_t index = blockIdx.x * (size_t)blockDim.x + threadIdx.x; index < count;
       index += (size_t)gridDim.x * blockDim.x) {
    unsigned hash = (unsigned)index * 2654435761u ^ seed * 2246822519u;
    hash ^= hash >> 15;
    hash *= 2246822519u;
    hash ^= hash >> 13;
    hash *= 3266489917u;
    hash ^= hash >> 16;
    data[index] = from_float<Input>((hash >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

__global__ void compare(const Output* ours, const Output* reference, size_t count, float* worst_absolute,
                        float* worst_relative) {
  float absolute = 0, relative = 0;
  for (size_t index = blockIdx.x * (size_t)blockDim.x + threadIdx.x; index < count;
       index += (size_t)gridDim.x * blockDim.x) {
    float expected = to_float(reference[index]), difference = fabsf(to_float(ours[index]) - expected);
    if (!(difference <= absolute)) absolute = isnan(difference) ? INFINITY : difference;
    relative = fmaxf(relative, difference / fmaxf(fabsf(expected), 1.0f));
  }
  atomicMax(reinterpret_cast<int*>(worst_absolute), __float_as_int(absolute));
  atomicMax(reinterpret_cast<int*>(worst_relative), __float_as_int(relative));
}

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int n = argc > 2 ? std::atoi(argv[2]) : 4096;
  const int k = argc > 3 ? std::atoi(argv[3]) : 4096;
  const int repetitions = argc > 4 ? std::atoi(argv[4]) : 20;
  const char* label = argc > 5 ? argv[5] : "config";
  const float alpha = 1.0f, beta = 0.0f;

  Input *a, *b;
  Output *c, *reference;
  CHECK_CUDA(cudaMalloc(&a, sizeof(Input) * m * (size_t)k));
  CHECK_CUDA(cudaMalloc(&b, sizeof(Input) * k * (size_t)n));
  CHECK_CUDA(cudaMalloc(&c, sizeof(Output) * m * (size_t)n));
  CHECK_CUDA(cudaMalloc(&reference, sizeof(Output) * m * (size_t)n));
  fill_random<<<1024, 256>>>(a, m * (size_t)k, 11);
  fill_random<<<1024, 256>>>(b, k * (size_t)n, 12);
  CHECK_CUDA(cudaMemset(c, 0xff, sizeof(Output) * m * (size_t)n));  // NaN: catches unwritten outputs

  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
#if defined(GEMM_INPUT_F16)
  const cudaDataType data_type = CUDA_R_16F;
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
#elif defined(GEMM_INPUT_BF16)
  const cudaDataType data_type = CUDA_R_16BF;
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
#elif defined(GEMM_INPUT_TF32)
  const cudaDataType data_type = CUDA_R_32F;
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F_FAST_TF32;
#else
  const cudaDataType data_type = CUDA_R_32F;
  const cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
#endif
  // Row-major C = A * B is column-major C^T = B^T * A^T: swap the operands, no transposes.
  auto run_cublas = [&] {
    CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, data_type, n, a, data_type, k,
                              &beta, reference, data_type, n, compute, CUBLAS_GEMM_DEFAULT));
  };

  TensorMap unused_map{};
  const int shared_bytes = SHARED_BYTES;
  CHECK_CUDA(cudaFuncSetAttribute(gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  const dim3 grid((m / BM) * (n / BN));
  auto run_ours = [&] {
    gemm<<<grid, THREADS, shared_bytes>>>(m, n, k, alpha, beta, a, b, c, unused_map, unused_map, nullptr, nullptr);
  };

  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  auto time_ms = [&](auto&& launch) {
    launch();
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaEventRecord(start));
    for (int repetition = 0; repetition < repetitions; ++repetition) launch();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float total = 0;
    CHECK_CUDA(cudaEventElapsedTime(&total, start, stop));
    return total / repetitions;
  };
  const double ours_ms = time_ms(run_ours);
  const double cublas_ms = time_ms(run_cublas);

  float* worst;
  CHECK_CUDA(cudaMalloc(&worst, 2 * sizeof(float)));
  CHECK_CUDA(cudaMemset(worst, 0, 2 * sizeof(float)));
  compare<<<1024, 256>>>(c, reference, m * (size_t)n, worst, worst + 1);
  float host_worst[2];
  CHECK_CUDA(cudaMemcpy(host_worst, worst, sizeof(host_worst), cudaMemcpyDeviceToHost));

  const double flops = 2.0 * m * n * (double)k;
  const double ours_tflops = flops / ours_ms / 1e9, cublas_tflops = flops / cublas_ms / 1e9;
#if defined(GEMM_INPUT_F32)
  const double allowed = 1e-3;
#elif defined(GEMM_INPUT_TF32)
  const double allowed = 0.23;
#else
  const double allowed = 0.02 * std::sqrt(k / 3.0);  // one 16-bit ulp of outputs ~sqrt(K / 3) in size, x 3
#endif
  std::printf("%-48s %5d %5d %5d  ours %6.1f  cublas %6.1f  ratio %5.3f  max_error %.3g (relative %.3g)  %s\n",
              label, m, n, k, ours_tflops, cublas_tflops, ours_tflops / cublas_tflops, host_worst[0], host_worst[1],
              host_worst[0] <= allowed ? "ok" : "WRONG");
  return 0;
}
