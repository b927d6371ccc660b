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
//   gaps:    (with the argument `gaps` instead of SECONDS) rounds as a harness takes them: the host sleeps GAP ms,
//            launches for 2 ms untimed, then times 10 gated single launches; per GAP the median of 8 rounds' medians
//            and their range. Then `onset`: after a 1 s rest, 600 gated single launches, the median of each 50
//            with the time since the rest ended, to see how the figure moves as the GPU goes from idle to busy.
// Build (on the GPU host): nvcc -O2 -std=c++17 -arch=sm_90 timing_study.cu -lcublas -lcuda -o timing_study
// Usage: timing_study M N K [SECONDS | gaps]
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
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
  const bool gaps_mode = argc > 4 && std::strcmp(argv[4], "gaps") == 0;
  const double seconds = argc > 4 && !gaps_mode ? std::atof(argv[4]) : 10.0;
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
  auto gated_sample = [&] {
    *reinterpret_cast<volatile unsigned*>(flag_host) = 0;
    CHECK(cuStreamWaitValue32(stream, flag_device, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK(cudaEventRecord(start, stream));
    gemm();
    CHECK(cudaEventRecord(stop, stream));
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *reinterpret_cast<volatile unsigned*>(flag_host) = 1;
    return elapsed();
  };
  if (gaps_mode) {
    using Clock = std::chrono::steady_clock;
    std::printf("bf16 GEMM %d x %d x %d, cublasGemmEx: rounds after a host sleep of GAP ms\n", m, n, k);
    std::printf("  GAP ms   median of round medians   range\n");
    for (const int gap : {0, 1, 5, 20, 100, 500, 0}) {
      std::vector<double> rounds;
      for (int round = 0; round < 8; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(gap));
        const auto warm_start = Clock::now();
        while (std::chrono::duration<double, std::milli>(Clock::now() - warm_start).count() < 2) {
          gemm();
          CHECK(cudaStreamSynchronize(stream));
        }
        std::vector<double> round_samples;
        for (int s = 0; s < 10; ++s) round_samples.push_back(gated_sample());
        rounds.push_back(median(round_samples));
      }
      std::printf("  %6d   %9.4f ms            %.4f-%.4f\n", gap, median(rounds),
                  *std::min_element(rounds.begin(), rounds.end()), *std::max_element(rounds.begin(), rounds.end()));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::printf("onset after a 1 s rest: launches  ms since the rest  median ms of the 50\n");
    const auto onset = Clock::now();
    std::vector<double> group;
    for (int s = 1; s <= 600; ++s) {
      group.push_back(gated_sample());
      if (s % 50 == 0) {
        std::printf("  %4d  %8.1f  %9.4f\n", s, std::chrono::duration<double, std::milli>(Clock::now() - onset).count(),
                    median(group));
        group.clear();
      }
    }
    return 0;
  }
  std::vector<double> gated;
  for (int s = 0; s < samples; ++s) gated.push_back(gated_sample());
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
