// kernlathe::time_launches (include/kernlathe/timing.h) where no NVIDIA driver is loaded: a RuntimeError that says
// so, never a figure. On a GPU the same function is tested by tests/gpu/runtime_timing_device_test.cpp.
#include "kernlathe/timing.h"

#include <gtest/gtest.h>

#include <string>

#include "tuner/common/error.h"
#include "tuner/driver/cuda_driver.h"

namespace kernlathe {
namespace {

TEST(RuntimeTiming, WithoutADriverItThrowsTheRuntimesErrorAndNeverLaunches) {
  try {
    gpu::cuda_driver();
    GTEST_SKIP() << "a driver is loaded here; the GPU test covers time_launches";
  } catch (const NoGpuError&) {
  }
  int launches = 0;
  try {
    time_launches(nullptr, [&] { ++launches; });
    FAIL() << "time_launches returned without a driver";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("driver"), std::string::npos) << error.what();
  }
  EXPECT_EQ(launches, 0);
}

}  // namespace
}  // namespace kernlathe
