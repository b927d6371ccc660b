// C = A * B in bf16 (fp32 accumulation) through kernlathe's runtime, checked against cuBLAS and timed beside it.
// Usage: kernlathe_gemm_example EXPORT_DIR [M N K [kn|nk]]   (EXPORT_DIR written by `tune export gemm_bf16 -o DIR`)
//   kn (the default): B is stored K x N, C = A B.  nk: B is stored N x K, C = A B^T, as nn.Linear holds its weight.
// Exits 0 when every element of C matches cuBLAS's within the spec's tolerance, 1 otherwise or on an error.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <kernlathe/runtime.h>
#include <kernlathe/timing.h>

#include "check_cuda.h"


#define CHECK_CUBLAS(call)                                                                   \
  do {                                                                                       \
    cublasStatus_t status = (call);                                                          \
    if (status != CUBLAS_STATUS_SUCCESS) {                                                   \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, status); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (false)

int main(int argc, char** argv) {
  const std::filesystem::path export_dir = argc > 1 ? argv[1] : "export";
  const std::int64_t m = argc > 4 ? std::atoll(argv[2]) : 4096;
  const std::int64_t n = argc > 4 ? std::atoll(argv[3]) : 4096;
  const std::int64_t k = argc > 4 ? std::atoll(argv[4]) : 4096;
  const bool b_stored_n_by_k = argc > 5 && std::strcmp(argv[5], "nk") == 0;
  if (argc > 5 && !b_stored_n_by_k && std::strcmp(argv[5], "kn") != 0) {
    std::fprintf(stderr, "layout '%s': kn (B stored K x N) or nk (B stored N x K)\n", argv[5]);
    return 2;
  }
  if (std::strcmp(kernlathe::version(), KERNLATHE_VERSION_STRING) != 0)
    std::fprintf(stderr, "built against kernlathe %s, running with %s\n", KERNLATHE_VERSION_STRING, kernlathe::version());

  try {
    CHECK_CUDA(cudaFree(nullptr));  // the CUDA runtime's context: the runtime library launches into it
    kernlathe::Runtime runtime(kernlathe::RuntimeOptions::from_export(export_dir));
    const kernlathe::Kernel& gemm =
        runtime.kernel("gemm_bf16", {{"M", m}, {"N", n}, {"K", k}, {"B_LAYOUT", b_stored_n_by_k ? 1 : 0}});
    std::printf("gemm_bf16 %lldx%lldx%lld %s: %s\n  %s\n  binary: %s (NVRTC %.1f ms, set-up %.1f ms)\n",
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                b_stored_n_by_k ? "nk" : "kn",
                kernlathe::rung_name(gemm.selection().rung), gemm.selection().reason.c_str(),
                kernlathe::binary_source_name(gemm.binary_source()), gemm.compile_ms(), gemm.load_ms());

    std::mt19937 random(7);
    std::uniform_real_distribution<float> uniform(-1, 1);
    std::vector<__nv_bfloat16> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
    for (auto& value : a) value = __float2bfloat16(uniform(random));
    for (auto& value : b) value = __float2bfloat16(uniform(random));
    __nv_bfloat16 *device_a = nullptr, *device_b = nullptr, *device_c = nullptr, *device_reference = nullptr;
    const std::size_t c_bytes = static_cast<std::size_t>(m * n) * sizeof(__nv_bfloat16);
    CHECK_CUDA(cudaMalloc(&device_a, a.size() * sizeof a[0]));
    CHECK_CUDA(cudaMalloc(&device_b, b.size() * sizeof b[0]));
    CHECK_CUDA(cudaMalloc(&device_c, c_bytes));
    CHECK_CUDA(cudaMalloc(&device_reference, c_bytes));
    CHECK_CUDA(cudaMemcpy(device_a, a.data(), a.size() * sizeof a[0], cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(device_b, b.data(), b.size() * sizeof b[0], cudaMemcpyHostToDevice));
    // All bits set is a NaN in bf16: an element the kernel never writes fails the check below.
    CHECK_CUDA(cudaMemset(device_c, 0xFF, c_bytes));

    // m, n, k, alpha (1) and beta (0) take the kernel's defaults for this problem; the tensor maps are the runtime's.
    kernlathe::BoundLaunch launch = gemm.bind(kernlathe::Arguments().set("a", device_a).set("b", device_b).set("c", device_c));
    cudaStream_t stream = nullptr;
    CHECK_CUDA(cudaStreamCreate(&stream));
    launch.launch(stream);

    // cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T. A row-major N x K B read
    // column-major is K x N, so C = A B^T takes it transposed (CUBLAS_OP_T, leading dimension K).
    cublasHandle_t handle = nullptr;
    CHECK_CUBLAS(cublasCreate(&handle));
    CHECK_CUBLAS(cublasSetStream(handle, stream));
    const float alpha = 1, beta = 0;
    auto cublas_gemm = [&] {
      CHECK_CUBLAS(cublasGemmEx(handle, b_stored_n_by_k ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                                static_cast<int>(m), static_cast<int>(k), &alpha, device_b, CUDA_R_16BF,
                                static_cast<int>(b_stored_n_by_k ? k : n), device_a, CUDA_R_16BF, static_cast<int>(k),
                                &beta, device_reference, CUDA_R_16BF, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    cublas_gemm();
    CHECK_CUDA(cudaStreamSynchronize(stream));

    std::vector<__nv_bfloat16> c(static_cast<std::size_t>(m * n)), reference(c.size());
    CHECK_CUDA(cudaMemcpy(c.data(), device_c, c_bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(reference.data(), device_reference, c_bytes, cudaMemcpyDeviceToHost));
    std::size_t wrong = 0;
    for (std::size_t index = 0; index < c.size(); ++index) {
      float got = __bfloat162float(c[index]), expected = __bfloat162float(reference[index]);
      // The spec's tolerance: one bf16 ulp of the output, plus fp32 summation-order differences near zero.
      if (!(std::fabs(got - expected) <= 2e-3f + 1.6e-2f * std::fabs(expected))) ++wrong;
    }
    std::printf("  %zu of %zu elements outside the tolerance of cuBLAS's result\n", wrong, c.size());

    // Timed as `tune`'s final round times (kernlathe/timing.h): each timing after a rest of the GPU (burst figures),
    // samples queued behind a launch gate, so cuBLAS's host-side algorithm choice is not timed; five interleaved
    // rounds, the median of each kernel's round figures.
    std::vector<double> ours_rounds, theirs_rounds;
    for (int round = 0; round < 5; ++round) {
      ours_rounds.push_back(kernlathe::time_launches(stream, [&] { launch.launch(stream); }).median_ms);
      theirs_rounds.push_back(kernlathe::time_launches(stream, cublas_gemm).median_ms);
      std::printf("  round %d: kernlathe %.4f ms, cuBLAS %.4f ms\n", round + 1, ours_rounds.back(), theirs_rounds.back());
    }
    const auto median_of = [](std::vector<double> values) {
      std::sort(values.begin(), values.end());
      return values[values.size() / 2];
    };
    const double ours = median_of(ours_rounds);
    const double theirs = median_of(theirs_rounds);
    double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    std::printf("  kernlathe %.4f ms (%.0f TFLOP/s), cuBLAS %.4f ms (%.0f TFLOP/s): %.1f%% of cuBLAS\n", ours,
                flops / ours / 1e9, theirs, flops / theirs / 1e9, 100 * theirs / ours);
    cublasDestroy(handle);
    cudaFree(device_a), cudaFree(device_b), cudaFree(device_c), cudaFree(device_reference);
    return wrong == 0 ? 0 : 1;
  } catch (const kernlathe::RuntimeError& error) {
    std::fprintf(stderr, "kernlathe: %s\n", error.what());
    return 1;
  }
}
