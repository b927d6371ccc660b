// The launch gate (tuner/measure/launch_gate.h) on a real GPU: the host's time between the start event and the
// launch stays out of a gated sample and enters an ungated one, the longest batch of the measurement rule queues
// behind the gate without blocking, and the timer (tuner/measure/kernel_timer.h) uses it. Skips without a GPU.
#include "tuner/measure/launch_gate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "tuner/common/error.h"
#include "tuner/gpu/driver_handles.h"
#include "tuner/measure/kernel_timer.h"

namespace kernlathe {
namespace {

class LaunchGateOnDevice : public ::testing::Test {
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
    buffer_ = gpu::DeviceBuffer(1 << 20);
  }
  void TearDown() override {
    buffer_ = gpu::DeviceBuffer();
    if (stream_ != nullptr) gpu::cuda_driver().cuStreamDestroy(stream_);
  }

  // A short piece of GPU work (a 1 MiB memset: microseconds) after `host_ms` of host time.
  void slow_host_launch(double host_ms) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(host_ms));
    KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuMemsetD32Async(buffer_.get(), 7, buffer_.bytes() / 4, stream_));
  }

  // One sample as the timer takes it: start event, the launch, stop event; gated or not.
  double one_sample(LaunchGate& gate, bool gated, double host_ms) {
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    gpu::Event start = gpu::Event::create();
    gpu::Event stop = gpu::Event::create();
    {
      LaunchGate::Scope scope(gate, gated);
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(start.get(), stream_));
      slow_host_launch(host_ms);
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(stop.get(), stream_));
    }
    KERNLATHE_CUDA_CHECK(cuda.cuEventSynchronize(stop.get()));
    float elapsed = 0;
    KERNLATHE_CUDA_CHECK(cuda.cuEventElapsedTime(&elapsed, start.get(), stop.get()));
    return elapsed;
  }

  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  gpu::DeviceBuffer buffer_;
};

TEST_F(LaunchGateOnDevice, TheHostsTimeStaysOutOfAGatedSample) {
  LaunchGate gate(stream_);
  ASSERT_TRUE(gate.usable()) << "the driver refused a stream memory operation";
  const double ungated_ms = one_sample(gate, false, 5.0);
  const double gated_ms = one_sample(gate, true, 5.0);
  EXPECT_GE(ungated_ms, 4.5);  // the GPU reached the start event and waited for the host
  EXPECT_LT(gated_ms, 1.0);    // the memset alone: microseconds
}

TEST_F(LaunchGateOnDevice, TheLongestBatchQueuesBehindTheGateAndRuns) {
  LaunchGate gate(stream_);
  ASSERT_TRUE(gate.usable());
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  for (int repeat = 0; repeat < 3; ++repeat) {
    LaunchGate::Scope scope(gate, true);
    ASSERT_TRUE(scope.holding());
    for (int launch = 0; launch < LaunchGate::max_gated_launches; ++launch)
      KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(buffer_.get(), static_cast<unsigned>(launch), 1024, stream_));
    // Nothing ran yet: the stream waits for the flag, so an event queued after the launches is not reached.
    gpu::Event queued = gpu::Event::create();
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(queued.get(), stream_));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(cuda.cuEventQuery(queued.get()), CUDA_ERROR_NOT_READY);
  }
  KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream_));
  std::uint32_t first = 0;
  KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoH(&first, buffer_.get(), sizeof first));
  EXPECT_EQ(first, static_cast<std::uint32_t>(LaunchGate::max_gated_launches - 1));
}

TEST_F(LaunchGateOnDevice, TheTimerLeavesTheHostsCostOut) {
  MeasurementSettings settings;
  settings.warmup_ms = 1;
  settings.min_samples = 5;
  settings.max_samples = 5;
  KernelTimer timer(stream_, settings, 0);
  ASSERT_TRUE(timer.gated());
  std::string phase;
  const TimeStatistics statistics = timer.time([&] { slow_host_launch(2.0); }, phase);
  EXPECT_LT(statistics.median_ms, 0.5) << "2 ms of host time per launch entered the timed window";
}

TEST_F(LaunchGateOnDevice, AHostThatSynchronisesBehindTheGateIsLetGoByTheWatchdog) {
  LaunchGate gate(stream_);
  ASSERT_TRUE(gate.usable());
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  const auto start = std::chrono::steady_clock::now();
  {
    LaunchGate::Scope scope(gate, true);
    KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(buffer_.get(), 1, 1024, stream_));
    KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream_));  // would wait forever without the watchdog
  }
  const double waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(gate.fired());
  EXPECT_FALSE(gate.fired());  // reading clears it
  EXPECT_GE(waited_ms, static_cast<double>(LaunchGate::watchdog_ms.count()) * 0.9);
  EXPECT_LT(waited_ms, 5000.0);
}

TEST_F(LaunchGateOnDevice, TheTimerStopsGatingWhenALaunchSynchronises) {
  MeasurementSettings settings;
  settings.warmup_ms = 1;
  settings.min_samples = 5;
  settings.max_samples = 5;
  KernelTimer timer(stream_, settings, 0);
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  std::string phase;
  const TimeStatistics statistics = timer.time(
      [&] {
        KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(buffer_.get(), 3, buffer_.bytes() / 4, stream_));
        KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream_));
      },
      phase);
  EXPECT_FALSE(timer.gated());
  EXPECT_EQ(statistics.samples, 5);
  EXPECT_LT(statistics.median_ms, 0.5 * static_cast<double>(LaunchGate::watchdog_ms.count()))
      << "a sample that waited for the watchdog was kept";
}

}  // namespace
}  // namespace kernlathe
