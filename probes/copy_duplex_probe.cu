// How fast can pinned host memory reach the GPU while results go back at the same time? The streamed examples
// copy every batch in and its result out, so their ceiling is the host-to-device rate under a concurrent
// device-to-host copy, not the one-way rate `tune run` reports. Prints both, median of 7 after 2 warm-ups.
// Build with CMake (-DKERNLATHE_BUILD_PROBES=ON; build/probes/copy_duplex_probe), or by hand from the repository
// root: nvcc -O2 -o /tmp/copy_duplex_probe probes/copy_duplex_probe.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t status = (call);                                                           \
    if (status != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status)); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main() {
  const size_t bytes = size_t{512} << 20;
  void *host_in = nullptr, *host_out = nullptr, *device_in = nullptr, *device_out = nullptr;
  CHECK(cudaMallocHost(&host_in, bytes));
  CHECK(cudaMallocHost(&host_out, bytes));
  CHECK(cudaMalloc(&device_in, bytes));
  CHECK(cudaMalloc(&device_out, bytes));
  cudaStream_t in_stream, out_stream;
  CHECK(cudaStreamCreateWithFlags(&in_stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&out_stream, cudaStreamNonBlocking));
  cudaEvent_t in_start, in_stop, out_start, out_stop;
  for (cudaEvent_t* event : {&in_start, &in_stop, &out_start, &out_stop}) CHECK(cudaEventCreate(event));

  auto median = [](std::vector<float> samples) {
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
  };
  for (int mode = 0; mode < 3; ++mode) {  // 0: in alone, 1: out alone, 2: both at once
    std::vector<float> in_ms, out_ms;
    for (int repeat = 0; repeat < 9; ++repeat) {
      if (mode != 1) {
        CHECK(cudaEventRecord(in_start, in_stream));
        CHECK(cudaMemcpyAsync(device_in, host_in, bytes, cudaMemcpyHostToDevice, in_stream));
        CHECK(cudaEventRecord(in_stop, in_stream));
      }
      if (mode != 0) {
        CHECK(cudaEventRecord(out_start, out_stream));
        CHECK(cudaMemcpyAsync(host_out, device_out, bytes, cudaMemcpyDeviceToHost, out_stream));
        CHECK(cudaEventRecord(out_stop, out_stream));
      }
      CHECK(cudaDeviceSynchronize());
      float elapsed = 0;
      if (repeat < 2) continue;
      if (mode != 1) {
        CHECK(cudaEventElapsedTime(&elapsed, in_start, in_stop));
        in_ms.push_back(elapsed);
      }
      if (mode != 0) {
        CHECK(cudaEventElapsedTime(&elapsed, out_start, out_stop));
        out_ms.push_back(elapsed);
      }
    }
    const char* names[] = {"host-to-device alone", "device-to-host alone", "both at once"};
    std::printf("%-22s", names[mode]);
    if (!in_ms.empty()) std::printf("  in %.1f GB/s", bytes / (median(in_ms) * 1e-3) / 1e9);
    if (!out_ms.empty()) std::printf("  out %.1f GB/s", bytes / (median(out_ms) * 1e-3) / 1e9);
    std::printf("\n");
  }
  return 0;
}
