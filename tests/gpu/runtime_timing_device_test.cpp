// kernlathe::time_launches (include/kernlathe/timing.h) on a real GPU: the figure is the GPU's time per launch,
// not the host's (a host that sleeps before each launch does not show), short launches are batched, and the timing
// is a burst: a rest first, two warm-up launches, sampling capped (tuner/measure/measurement.h).
#include "kernlathe/timing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tuner/common/error.h"
#include "tuner/driver/cuda_driver.h"
#include "tuner/gpu/driver_handles.h"
#include "tuner/measure/measurement.h"

namespace kernlathe {
namespace {

TEST(RuntimeTimingOnDevice, TheFigureIsTheGpusTimeNotTheHosts) {
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  try {
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    CUdevice device = 0;
    KERNLATHE_CUDA_CHECK(cuda.cuDeviceGet(&device, 0));
    KERNLATHE_CUDA_CHECK(cuda.cuDevicePrimaryCtxRetain(&context, device));
    KERNLATHE_CUDA_CHECK(cuda.cuCtxSetCurrent(context));
    KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  } catch (const NoGpuError& error) {
    GTEST_SKIP() << "no GPU: " << error.what();
  }
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  {
    gpu::DeviceBuffer buffer(64 << 20);
    int launches = 0;
    // 64 MiB memset: tens of microseconds on the GPU, after 1 ms of host time per launch.
    const LaunchTiming timing = time_launches(reinterpret_cast<CUstream_st*>(stream), [&] {
      ++launches;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(buffer.get(), 5, buffer.bytes() / 4, stream));
    });
    EXPECT_TRUE(timing.gated);
    EXPECT_GE(timing.samples, burst_guaranteed_samples);  // a burst timing: sampling capped at 25 ms (the host sleeps)
    EXPECT_GT(timing.median_ms, 0);
    EXPECT_LT(timing.median_ms, 0.5) << "the host's millisecond per launch was timed";
    EXPECT_LE(timing.low_ms, timing.median_ms);
    EXPECT_GE(timing.high_ms, timing.median_ms);
    EXPECT_GT(launches, timing.samples);  // warm-up launches and batches
  }
  {
    // A launch of about a millisecond (2 GiB set, twice): one launch per sample, so the launches are the warm-up's
    // two and the samples; the call lasts at least the rest.
    gpu::DeviceBuffer buffer(std::size_t{2} << 30);
    int launches = 0;
    const auto start = std::chrono::steady_clock::now();
    const LaunchTiming timing = time_launches(reinterpret_cast<CUstream_st*>(stream), [&] {
      ++launches;
      for (int pass = 0; pass < 2; ++pass)
        KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(buffer.get(), 5, buffer.bytes() / 4, stream));
    });
    const double call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(timing.median_ms, 0.05);
    EXPECT_EQ(launches, min_warmup_launches + timing.samples);
    EXPECT_GE(timing.samples, burst_guaranteed_samples);
    EXPECT_GE(call_ms, burst_rest_ms);
    EXPECT_LE((timing.samples - 1) * timing.median_ms, 1000 * burst_sampling_seconds * 1.5)
        << timing.samples << " samples of " << timing.median_ms << " ms: sampled past the burst cap";
  }
  cuda.cuStreamDestroy(stream);
}

}  // namespace
}  // namespace kernlathe
