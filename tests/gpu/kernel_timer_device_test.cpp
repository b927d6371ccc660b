// KernelTimer's burst and sustained timings (tuner/measure/kernel_timer.h) on a real GPU: a burst timing takes two
// warm-up launches and caps its sampling; a sustained timing keeps the GPU busy for its whole duration, in windows,
// and summarises the second half.
#include "tuner/measure/kernel_timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tuner/common/error.h"
#include "tuner/gpu/driver_handles.h"
#include "tuner/measure/measurement.h"

namespace kernlathe {
namespace {

class KernelTimerOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      const gpu::CudaDriver& cuda = gpu::cuda_driver();
      CUdevice device = 0;
      KERNLATHE_CUDA_CHECK(cuda.cuDeviceGet(&device, 0));
      KERNLATHE_CUDA_CHECK(cuda.cuDevicePrimaryCtxRetain(&context_, device));
      KERNLATHE_CUDA_CHECK(cuda.cuCtxSetCurrent(context_));
      KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
    } catch (const NoGpuError& error) {
      GTEST_SKIP() << "no GPU: " << error.what();
    }
    buffer_ = gpu::DeviceBuffer(std::size_t{256} << 20);
  }
  void TearDown() override {
    buffer_ = gpu::DeviceBuffer();
    if (stream_ != nullptr) gpu::cuda_driver().cuStreamDestroy(stream_);
  }

  // A 256 MiB memset: about a tenth of a millisecond.
  void launch() {
    ++launches_;
    KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuMemsetD32Async(buffer_.get(), 7, buffer_.bytes() / 4, stream_));
  }

  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  gpu::DeviceBuffer buffer_;
  int launches_ = 0;
};

TEST_F(KernelTimerOnDevice, ABurstTimingWarmsUpWithTwoLaunchesAndStopsSamplingAtItsCap) {
  MeasurementSettings settings;
  settings.target_relative_spread = 0;  // never settled: only the cap stops the sampling
  KernelTimer timer(stream_, settings, 0);
  std::string phase;
  const auto start = std::chrono::steady_clock::now();
  const TimeStatistics statistics = timer.time([&] { launch(); }, phase, TimingKind::burst);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(statistics.samples, burst_guaranteed_samples);
  EXPECT_EQ(launches_, min_warmup_launches + statistics.samples) << "one launch per sample of a 0.1 ms kernel";
  EXPECT_LT(seconds, 10 * burst_sampling_seconds) << "the usual rule would sample for a second";
  EXPECT_GT(statistics.median_ms, 0.01);
}

TEST_F(KernelTimerOnDevice, ASustainedTimingKeepsTheGpuBusyAndSummarisesTheSecondHalf) {
  KernelTimer timer(stream_, MeasurementSettings{}, 0);
  std::string phase;
  const auto start = std::chrono::steady_clock::now();
  const TimeStatistics sustained = timer.sustained([&] { launch(); }, 0.3, phase);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(phase, "sustained timing");
  EXPECT_GE(seconds, 0.3);
  EXPECT_LT(seconds, 0.6);
  // Windows of about 10 ms over the second half of 0.3 s: about 15 of them.
  EXPECT_GE(sustained.samples, 8);
  EXPECT_LE(sustained.samples, 30);
  // The GPU never waited for the host: the launches' GPU time fills the wall time.
  EXPECT_GT(launches_ * sustained.median_ms, 0.7 * seconds * 1000);
  // The same kernel timed as a burst agrees within the noise of a memset (no power limit at 0.1 ms per launch of a
  // memory-bound kernel is expected to move it by much; both are GPU time per launch).
  const TimeStatistics burst = timer.time([&] { launch(); }, phase, TimingKind::burst);
  EXPECT_NEAR(sustained.median_ms, burst.median_ms, 0.25 * burst.median_ms);
}

}  // namespace
}  // namespace kernlathe
