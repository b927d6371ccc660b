#include "tuner/measure/ceilings.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <future>
#include <vector>

#include <fmt/format.h>

#include "tuner/gpu/cublas.h"
#include "tuner/gpu/driver_handles.h"
#include "tuner/loader/cuda_pipeline_device.h"
#include "tuner/measure/measurement.h"
#include "tuner/nvrtc/nvrtc_compiler.h"

namespace kernlathe {
namespace {

using gpu::cuda_driver;
using Clock = std::chrono::steady_clock;

// 16 independent chains per thread, 128 FMAs per loop trip: the loop's own two instructions cost 1.5% of issue
// slots (with 8 chains and one FMA each per trip, 20% went to the loop and the kernel reached 84% of the
// H200's 66.9 TFLOP/s; probes/energy_probe.cu).
constexpr const char* fma_source = R"(
extern "C" __global__ void fma_peak(float* out, int iterations) {
  float value[16];
#pragma unroll
  for (int chain = 0; chain < 16; ++chain) value[chain] = threadIdx.x * 1e-3f + chain;
  const float scale = 0.9999999f, shift = 1e-7f;
  for (int trip = 0; trip < iterations; ++trip) {
#pragma unroll
    for (int step = 0; step < 8; ++step) {
#pragma unroll
      for (int chain = 0; chain < 16; ++chain) value[chain] = fmaf(value[chain], scale, shift);
    }
  }
  float sum = 0;
#pragma unroll
  for (int chain = 0; chain < 16; ++chain) sum += value[chain];
  if (sum == 1.2345f) out[0] = sum;  // never true; keeps every chain live
}
)";
constexpr int fma_threads = 256;
constexpr int fma_blocks_per_sm = 8;
constexpr int fma_iterations = 2048;
constexpr double fma_flops_per_thread = fma_iterations * 8.0 * 16.0 * 2.0;

double elapsed_ms(const gpu::Event& start, const gpu::Event& stop) {
  const gpu::CudaDriver& cuda = cuda_driver();
  KERNLATHE_CUDA_CHECK(cuda.cuEventSynchronize(stop.get()));
  float milliseconds = 0;
  KERNLATHE_CUDA_CHECK(cuda.cuEventElapsedTime(&milliseconds, start.get(), stop.get()));
  return milliseconds;
}

double measure_fma_gflops(CUstream stream, const DeviceProperties& device, const std::vector<char>& cubin) {
  const gpu::CudaDriver& cuda = cuda_driver();
  CUmodule module = nullptr;
  KERNLATHE_CUDA_CHECK(cuda.cuModuleLoadData(&module, cubin.data()));
  gpu::LoadedModule loaded(module);
  CUfunction function = nullptr;
  KERNLATHE_CUDA_CHECK(cuda.cuModuleGetFunction(&function, module, "fma_peak"));
  gpu::DeviceBuffer out(sizeof(float));
  CUdeviceptr out_pointer = out.get();
  int iterations = fma_iterations;
  void* parameters[] = {&out_pointer, &iterations};
  const unsigned blocks = static_cast<unsigned>(std::max<std::int64_t>(device.sm_count, 1) * fma_blocks_per_sm);
  gpu::Event start = gpu::Event::create(), stop = gpu::Event::create();
  double fastest_ms = 0;
  for (int repetition = 0; repetition < 7; ++repetition) {  // the first two warm the clocks
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(start.get(), stream));
    KERNLATHE_CUDA_CHECK(cuda.cuLaunchKernel(function, blocks, 1, 1, fma_threads, 1, 1, 0, stream, parameters, nullptr));
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(stop.get(), stream));
    const double milliseconds = elapsed_ms(start, stop);
    if (repetition >= 2 && (fastest_ms == 0 || milliseconds < fastest_ms)) fastest_ms = milliseconds;
  }
  const double flops = fma_flops_per_thread * fma_threads * blocks;
  return fastest_ms > 0 ? flops / (fastest_ms * 1e-3) / 1e9 : 0;
}

// Host-to-device and device-to-host copies of 256 MiB each, issued together on two streams; the best of 5 of the
// wall time over both directions' bytes. `pinned` holds 512 MiB of pinned memory: the upload comes from its first
// half, the download goes to its second.
double measure_pinned_duplex_gbps(std::byte* pinned) {
  const gpu::CudaDriver& cuda = cuda_driver();
  constexpr std::size_t bytes = std::size_t{256} << 20;
  std::byte* upload = pinned;
  std::byte* download = pinned + bytes;
  gpu::DeviceBuffer upload_target(bytes), download_source(bytes);
  CUstream in = nullptr, out = nullptr;
  KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&in, CU_STREAM_NON_BLOCKING));
  KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&out, CU_STREAM_NON_BLOCKING));
  double best_gbps = 0;
  for (int repetition = 0; repetition < 5; ++repetition) {
    const Clock::time_point start = Clock::now();
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyHtoDAsync(upload_target.get(), upload, bytes, in));
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoHAsync(download, download_source.get(), bytes, out));
    KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(in));
    KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(out));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (seconds > 0) best_gbps = std::max(best_gbps, 2.0 * static_cast<double>(bytes) / seconds / 1e9);
  }
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuStreamDestroy(in));
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuStreamDestroy(out));
  return best_gbps;
}

// cuBLAS bf16 GEMM at 8192^3, fp32 accumulation, bf16 output; the best of 5 after 2 warm-up calls.
double measure_tensor_gflops(CUstream stream, std::string& source) {
  const gpu::CudaDriver& cuda = cuda_driver();
  constexpr std::int64_t size = 8192;
  const std::size_t matrix_bytes = static_cast<std::size_t>(size * size) * 2;
  gpu::DeviceBuffer a(matrix_bytes), b(matrix_bytes), c(matrix_bytes);
  KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8Async(a.get(), 0x3c, matrix_bytes, stream));  // small finite bf16 values
  KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8Async(b.get(), 0x3c, matrix_bytes, stream));
  gpu::Cublas cublas(stream);
  gpu::GemmProblem problem;
  problem.compute = "bf16";
  problem.input = Dtype::bf16;
  problem.output = Dtype::bf16;
  problem.m = problem.n = problem.k = size;
  problem.a = a.get();
  problem.b = b.get();
  problem.c = c.get();
  gpu::Event start = gpu::Event::create(), stop = gpu::Event::create();
  double fastest_ms = 0;
  for (int repetition = 0; repetition < 7; ++repetition) {
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(start.get(), stream));
    cublas.gemm(problem);
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(stop.get(), stream));
    const double milliseconds = elapsed_ms(start, stop);
    if (repetition >= 2 && (fastest_ms == 0 || milliseconds < fastest_ms)) fastest_ms = milliseconds;
  }
  source = fmt::format("{} bf16 {}^3", cublas.version(), size);
  const double flops = 2.0 * static_cast<double>(size) * size * size;
  return fastest_ms > 0 ? flops / (fastest_ms * 1e-3) / 1e9 : 0;
}

double number_or_zero(const std::map<std::string, std::string>& extra, const std::string& key) {
  auto found = extra.find(key);
  if (found == extra.end()) return 0;
  double value = 0;
  const std::string& text = found->second;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() ? value : 0;
}

}  // namespace

std::map<std::string, std::string> ceiling_metadata(const Ceilings& ceilings) {
  std::map<std::string, std::string> extra;
  auto put = [&](const char* key, double value) {
    if (value > 0) extra[key] = fmt::format("{:.1f}", value);
  };
  put("ceiling_copy_gbps", ceilings.copy_gbps);
  put("ceiling_pinned_h2d_gbps", ceilings.pinned_h2d_gbps);
  put("ceiling_pinned_duplex_gbps", ceilings.pinned_duplex_gbps);
  put("ceiling_fma_gflops", ceilings.fma_gflops);
  put("ceiling_tensor_gflops", ceilings.tensor_gflops);
  if (!ceilings.tensor_source.empty()) extra["ceiling_tensor_source"] = ceilings.tensor_source;
  return extra;
}

Ceilings ceilings_from_metadata(const std::map<std::string, std::string>& extra) {
  Ceilings ceilings;
  ceilings.copy_gbps = number_or_zero(extra, "ceiling_copy_gbps");
  ceilings.pinned_h2d_gbps = number_or_zero(extra, "ceiling_pinned_h2d_gbps");
  ceilings.pinned_duplex_gbps = number_or_zero(extra, "ceiling_pinned_duplex_gbps");
  ceilings.fma_gflops = number_or_zero(extra, "ceiling_fma_gflops");
  ceilings.tensor_gflops = number_or_zero(extra, "ceiling_tensor_gflops");
  if (auto found = extra.find("ceiling_tensor_source"); found != extra.end()) ceilings.tensor_source = found->second;
  return ceilings;
}

double measure_copy_gbps(CUstream stream) {
  const gpu::CudaDriver& cuda = cuda_driver();
  std::size_t free_bytes = 0, total_bytes = 0;
  KERNLATHE_CUDA_CHECK(cuda.cuMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t bytes = std::min<std::size_t>(std::size_t{1} << 30, free_bytes / 4) & ~std::size_t{255};
  gpu::DeviceBuffer source(bytes), destination(bytes);
  KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8Async(source.get(), 0x5a, bytes, stream));
  gpu::Event start = gpu::Event::create(), stop = gpu::Event::create();
  std::vector<double> samples_ms;
  for (int copy = 0; copy < 11; ++copy) {
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(start.get(), stream));
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoDAsync(destination.get(), source.get(), bytes, stream));
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(stop.get(), stream));
    const double milliseconds = elapsed_ms(start, stop);
    if (copy >= 2) samples_ms.push_back(milliseconds);
  }
  const TimeStatistics statistics = summarise(samples_ms);
  return statistics.median_ms > 0 ? 2.0 * static_cast<double>(bytes) / (statistics.median_ms * 1e-3) / 1e9 : 0;
}

Ceilings measure_ceilings(CUstream stream, const DeviceProperties& device, const std::filesystem::path& cubin_cache,
                          std::vector<std::pair<std::string, double>>* parts) {
  const gpu::CudaDriver& cuda = cuda_driver();
  Ceilings ceilings;
  std::vector<std::string> failures;
  auto attempt = [&](const char* what, const auto& measure) {
    try {
      measure();
    } catch (const gpu::CudaError&) {
      throw;
    } catch (const std::exception& error) {
      failures.push_back(fmt::format("{}: {}", what, error.what()));
    }
  };
  Clock::time_point lap = Clock::now();
  auto part_done = [&](const char* name) {
    const Clock::time_point now = Clock::now();
    if (parts != nullptr) parts->emplace_back(name, std::chrono::duration<double>(now - lap).count());
    lap = now;
  };
  // NVRTC needs no context and the copies need no CPU: the FMA kernel compiles meanwhile.
  std::future<std::vector<char>> fma_cubin = std::async(std::launch::async, [&device, cubin_cache] {
    return compile_builtin_source_cached(fma_source, "tuner_fma_peak.cu", device.arch_major, device.arch_minor,
                                         "FMA ceiling kernel", cubin_cache)
        .cubin;
  });
  ceilings.copy_gbps = measure_copy_gbps(stream);
  part_done("copy");
  CUcontext context = nullptr;
  KERNLATHE_CUDA_CHECK(cuda.cuCtxGetCurrent(&context));
  {
    constexpr std::size_t pinned_bytes = std::size_t{512} << 20;  // as in the gpu.md ceiling table
    struct PinnedBuffer {
      void* pointer = nullptr;
      ~PinnedBuffer() {
        if (pointer != nullptr) KERNLATHE_CUDA_CHECK_NOTHROW(cuda_driver().cuMemFreeHost(pointer));
      }
    } pinned;
    KERNLATHE_CUDA_CHECK(cuda.cuMemHostAlloc(&pinned.pointer, pinned_bytes, 0));
    std::memset(pinned.pointer, 1, pinned_bytes);
    part_done("pin 512 MiB of host memory");
    ceilings.pinned_h2d_gbps = loader::measure_pinned_copy_in_gbps(context, static_cast<std::byte*>(pinned.pointer), pinned_bytes);
    part_done("pinned host-to-device");
    ceilings.pinned_duplex_gbps = measure_pinned_duplex_gbps(static_cast<std::byte*>(pinned.pointer));
    part_done("pinned both ways");
  }
  part_done("unpin");
  attempt("fma", [&] {
    const std::vector<char> cubin = fma_cubin.get();
    part_done("FMA kernel compile, beyond the copies");
    ceilings.fma_gflops = measure_fma_gflops(stream, device, cubin);
  });
  part_done("FMA");
  attempt("tensor", [&] { ceilings.tensor_gflops = measure_tensor_gflops(stream, ceilings.tensor_source); });
  part_done("tensor (cuBLAS)");
  for (const std::string& failure : failures) ceilings.failures += (ceilings.failures.empty() ? "" : "; ") + failure;
  return ceilings;
}

}  // namespace kernlathe
