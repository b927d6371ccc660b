// Why two harnesses disagree on cuBLAS: the same cublasGemmEx call (bf16 in, fp32 accumulate) timed five ways.
//   single:  one launch between two events, the host waits on the stop event before the next sample (the way
//            `tune` timed a 0.2 ms kernel until now: a batch of one);
//   gated:   the same, but the stream first waits on a host flag (cuStreamWaitValue32) that is released only after
//            the events and the launch are queued, so the host's cost of the call is outside the timed window;
//   batch:   20 launches back to back between two events after 5 warm-up launches (examples/gemm.cpp's way);
//   host:    the host time of one cublasGemmEx call (what the GPU waits for in `single`);
//   sustained: back-to-back launches for SECONDS, the time per launch in each half-second window, with the SM
//            clocks and power logged beside by `nvidia-smi --query-gpu=... -lms 500` (burst figures come from the
//            first window).
// Build (on the GPU host): nvcc -O2 -std=c++17 -arch=sm_90 timing_study.cu -lcublas -lcuda -o timing_study
// Usage: timing_study M N K [SECONDS]
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    auto status_ = (call);                                                                         \
    if (status_ != 0) {                                                                            \
      std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, int(status_));    \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

__global__ void fill(__nv_bfloat16* data, size_t count, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    data[i] = __float2bfloat16(float(x & 0xffff) / 65536.0f - 0.5f);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s M N K [SECONDS]\n", argv[0]);
    return 2;
  }
  const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  const double seconds = argc > 4 ? std::atof(argv[4]) : 10.0;
  __nv_bfloat16 *a, *b, *c;
  CHECK(cudaMalloc(&a, size_t(m) * k * 2));
  CHECK(cudaMalloc(&b, size_t(k) * n * 2));
  CHECK(cudaMalloc(&c, size_t(m) * n * 2));
  fill<<<1024, 256>>>(a, size_t(m) * k, 1);
  fill<<<1024, 256>>>(b, size_t(k) * n, 2);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle;
  CHECK(cublasCreate(&handle));
  CHECK(cublasSetStream(handle, stream));
  const float alpha = 1, beta = 0;
  // Row-major C = A B through column-major cuBLAS: C^T = B^T A^T.
  auto gemm = [&] {
    CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_16BF, n, a, CUDA_R_16BF, k, &beta, c,
                       CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  auto elapsed = [&] {
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    return double(ms);
  };
  const double flops = 2.0 * m * n * k;
  for (int i = 0; i < 20; ++i) gemm();
  CHECK(cudaStreamSynchronize(stream));

  auto report = [&](const char* how, double ms) {
    std::printf("%-10s %9.4f ms  %6.1f TFLOP/s\n", how, ms, flops / ms / 1e9);
  };
  const int samples = 50;
  // single
  std::vector<double> single;
  for (int s = 0; s < samples; ++s) {
    CHECK(cudaEventRecord(start, stream));
    gemm();
    CHECK(cudaEventRecord(stop, stream));
    single.push_back(elapsed());
  }
  // gated
  unsigned* flag_host = nullptr;
  CHECK(cudaHostAlloc(&flag_host, sizeof(unsigned), cudaHostAllocMapped));
  CUdeviceptr flag_device = 0;
  CHECK(cuMemHostGetDevicePointer(&flag_device, flag_host, 0));
  std::vector<double> gated;
  for (int s = 0; s < samples; ++s) {
    *reinterpret_cast<volatile unsigned*>(flag_host) = 0;
    CHECK(cuStreamWaitValue32(stream, flag_device, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK(cudaEventRecord(start, stream));
    gemm();
    CHECK(cudaEventRecord(stop, stream));
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *reinterpret_cast<volatile unsigned*>(flag_host) = 1;
    gated.push_back(elapsed());
  }
  // batch
  std::vector<double> batch;
  for (int s = 0; s < 10; ++s) {
    for (int i = 0; i < 5; ++i) gemm();
    CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < 20; ++i) gemm();
    CHECK(cudaEventRecord(stop, stream));
    batch.push_back(elapsed() / 20);
  }
  // host cost of one call
  std::vector<double> host;
  for (int s = 0; s < samples; ++s) {
    CHECK(cudaStreamSynchronize(stream));
    const auto t0 = std::chrono::steady_clock::now();
    gemm();
    const auto t1 = std::chrono::steady_clock::now();
    host.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  CHECK(cudaStreamSynchronize(stream));
  std::printf("bf16 GEMM %d x %d x %d, cublasGemmEx, median of samples\n", m, n, k);
  report("single", median(single));
  report("gated", median(gated));
  report("batch", median(batch));
  std::printf("%-10s %9.4f ms  (host time of one cublasGemmEx call, GPU idle before it)\n", "host", median(host));
  // sustained
  std::printf("sustained, back to back for %.0f s: window  ms/launch  TFLOP/s\n", seconds);
  const auto begin = std::chrono::steady_clock::now();
  int window = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() < seconds) {
    const int launches = std::max(1, int(0.5 / (median(batch) * 1e-3)));
    CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < launches; ++i) gemm();
    CHECK(cudaEventRecord(stop, stream));
    const double ms = elapsed() / launches;
    std::printf("  %2d  %9.4f  %6.1f\n", window++, ms, flops / ms / 1e9);
  }
  return 0;
}
