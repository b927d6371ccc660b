// Diagnostic probe: how NVML's energy counter and power reading behave while a kernel runs, to choose how the
// tuner measures energy per launch (issue 16). Prints the counter's update interval, idle and busy power, and the
// spread of energy per launch over windows of several lengths.
//
// Build with CMake (-DKERNLATHE_BUILD_PROBES=ON; build/probes/energy_probe), or by hand from the repository root:
//   nvcc -O2 -arch=sm_90 -o /tmp/energy_probe probes/energy_probe.cu -ldl && /tmp/energy_probe
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

using Clock = std::chrono::steady_clock;
using NvmlDevice = struct NvmlDeviceOpaque*;

static int (*nvml_init)();
static int (*nvml_handle)(unsigned, NvmlDevice*);
static int (*nvml_energy)(NvmlDevice, unsigned long long*);
static int (*nvml_power)(NvmlDevice, unsigned*);
static int (*nvml_clock)(NvmlDevice, int, unsigned*);
static NvmlDevice device;

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) out[i] = in[i];
}

__global__ void fma_kernel(float* out, int iterations) {
  float a = threadIdx.x, b = a + 1, c = a + 2, d = a + 3, e = a + 4, f = a + 5, g = a + 6, h = a + 7;
  const float x = 1.0000001f, y = 0.9999999f;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, x, y); b = fmaf(b, x, y); c = fmaf(c, x, y); d = fmaf(d, x, y);
    e = fmaf(e, x, y); f = fmaf(f, x, y); g = fmaf(g, x, y); h = fmaf(h, x, y);
  }
  if (a + b + c + d + e + f + g + h == 0.1234f) out[0] = a;
}

static double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

static unsigned long long energy_mj() {
  unsigned long long value = 0;
  nvml_energy(device, &value);
  return value;
}

int main() {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!library) { std::printf("no NVML\n"); return 1; }
  nvml_init = (int (*)())dlsym(library, "nvmlInit_v2");
  nvml_handle = (int (*)(unsigned, NvmlDevice*))dlsym(library, "nvmlDeviceGetHandleByIndex_v2");
  nvml_energy = (int (*)(NvmlDevice, unsigned long long*))dlsym(library, "nvmlDeviceGetTotalEnergyConsumption");
  nvml_power = (int (*)(NvmlDevice, unsigned*))dlsym(library, "nvmlDeviceGetPowerUsage");
  nvml_clock = (int (*)(NvmlDevice, int, unsigned*))dlsym(library, "nvmlDeviceGetClockInfo");
  nvml_init();
  nvml_handle(0, &device);

  const size_t n = size_t(1) << 26;  // 1 GiB of float4 per buffer
  float4 *in, *out;
  cudaMalloc(&in, n * sizeof(float4));
  cudaMalloc(&out, n * sizeof(float4));
  cudaMemset(in, 0, n * sizeof(float4));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);

  // 1. Update interval of the energy counter, idle and busy.
  for (int busy = 0; busy < 2; ++busy) {
    std::vector<double> changes;
    unsigned long long last = energy_mj(), first = last;
    unsigned power_sum = 0, power_count = 0;
    Clock::time_point begin = Clock::now();
    while (seconds_since(begin) < 2.0) {
      if (busy) {
        copy_kernel<<<132 * 8, 512>>>(in, out, n);
      }
      Clock::time_point poll_until = Clock::now() + std::chrono::microseconds(busy ? 2000 : 100);
      while (Clock::now() < poll_until) {
        unsigned long long value = energy_mj();
        if (value != last) { changes.push_back(seconds_since(begin)); last = value; }
      }
      unsigned power = 0;
      if (nvml_power(device, &power) == 0) { power_sum += power; ++power_count; }
      if (busy) cudaDeviceSynchronize();
    }
    std::vector<double> gaps;
    for (size_t i = 1; i < changes.size(); ++i) gaps.push_back(1e3 * (changes[i] - changes[i - 1]));
    std::sort(gaps.begin(), gaps.end());
    double median_gap = gaps.empty() ? 0 : gaps[gaps.size() / 2];
    std::printf("%s: %zu counter changes in 2 s, median gap %.3f ms (min %.3f, max %.3f); %.1f J; mean power reading %.1f W\n",
                busy ? "busy copy" : "idle", changes.size(), median_gap, gaps.empty() ? 0 : gaps.front(),
                gaps.empty() ? 0 : gaps.back(), (last - first) * 1e-3, power_count ? power_sum * 1e-3 / power_count : 0);
  }

  // 2. Energy per launch over windows of several lengths: 10 windows each, mean and coefficient of variation.
  for (int kind = 0; kind < 2; ++kind) {
    for (double window_ms : {5.0, 10.0, 25.0, 50.0, 100.0, 200.0, 400.0}) {
      std::vector<double> per_launch;
      std::vector<double> times;
      for (int repeat = 0; repeat < 10; ++repeat) {
        cudaDeviceSynchronize();
        unsigned long long e0 = energy_mj();
        Clock::time_point begin = Clock::now();
        int launches = 0;
        cudaEventRecord(start);
        while (seconds_since(begin) * 1e3 < window_ms) {
          if (kind == 0) copy_kernel<<<132 * 8, 512>>>(in, out, n / 16);
          else fma_kernel<<<132 * 8, 256>>>((float*)out, 4096);
          ++launches;
          if (launches % 8 == 0) cudaDeviceSynchronize();  // keep the queue short so wall time tracks GPU time
        }
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        unsigned long long e1 = energy_mj();
        per_launch.push_back((e1 - e0) * 1e-3 / launches);
        times.push_back(ms / launches);
      }
      double mean = 0, sq = 0;
      for (double v : per_launch) mean += v;
      mean /= per_launch.size();
      for (double v : per_launch) sq += (v - mean) * (v - mean);
      double cv = mean > 0 ? std::sqrt(sq / (per_launch.size() - 1)) / mean : 0;
      std::sort(times.begin(), times.end());
      unsigned clock = 0;
      nvml_clock(device, 1, &clock);
      std::printf("%s window %6.1f ms: energy/launch mean %.4f mJ, cv %.3f; time/launch %.4f ms; power %.0f W; SM %u MHz\n",
                  kind == 0 ? "copy 64 MiB" : "fma", window_ms, mean * 1e3, cv, times[times.size() / 2],
                  mean / (times[times.size() / 2] * 1e-3), clock);
    }
  }
  return 0;
}
