#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "tuner/driver/cuda_driver.h"
#include "tuner/gpu/device.h"
#include "tuner/gpu/nvml.h"

namespace kernlathe::gpu {
namespace {

bool driver_library_present() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library != nullptr) dlclose(library);
  return library != nullptr;
}

TEST(CudaDriver, WithoutDriverLoadingThrowsNoGpuErrorSayingSo) {
  if (driver_library_present()) GTEST_SKIP() << "this machine has libcuda.so.1; the no-driver path cannot be seen";
  try {
    cuda_driver();
    FAIL() << "loading the driver succeeded without libcuda.so.1";
  } catch (const NoGpuError& error) {
    EXPECT_NE(std::string(error.what()).find("no NVIDIA driver"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("libcuda.so.1"), std::string::npos) << error.what();
  }
  // A failed load is not cached as success: the second attempt fails the same way.
  EXPECT_THROW(cuda_driver(), NoGpuError);
  EXPECT_THROW(query_device(0), NoGpuError);
  EXPECT_THROW(device_count(), NoGpuError);
}

TEST(CudaDriver, DeviceIndexOutOfRangeIsNoGpuError) {
  if (!driver_library_present()) {
    EXPECT_THROW(query_device(-1), NoGpuError);  // no driver: NoGpuError as well
    return;
  }
  try {
    query_device(1000);
    FAIL() << "device 1000 exists";
  } catch (const NoGpuError& error) {
    EXPECT_NE(std::string(error.what()).find("1000"), std::string::npos) << error.what();
  }
}

CUresult failing_call(int) { return CUDA_ERROR_INVALID_VALUE; }

TEST(CudaDriver, CheckReportsLocationCallAndError) {
  try {
    KERNLATHE_CUDA_CHECK(failing_call(7));
    FAIL() << "no exception";
  } catch (const CudaError& error) {
    std::string message = error.what();
    EXPECT_EQ(error.result(), CUDA_ERROR_INVALID_VALUE);
    EXPECT_NE(message.find("gpu_driver_test.cpp:"), std::string::npos) << message;
    EXPECT_NE(message.find("failing_call(7) failed: "), std::string::npos) << message;
    // The driver names the error; without a driver the code is shown.
    std::string expected_name = driver_library_present() ? "CUDA_ERROR_INVALID_VALUE" : "CUresult 1";
    EXPECT_NE(message.find(expected_name), std::string::npos) << message;
  }
  EXPECT_NO_THROW(KERNLATHE_CUDA_CHECK(CUDA_SUCCESS));
  EXPECT_NO_THROW(KERNLATHE_CUDA_CHECK_NOTHROW(failing_call(8)));
}

TEST(CudaDriver, StickyErrorsAreTheContextPoisoningOnes) {
  EXPECT_TRUE(is_sticky_error(CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_TRUE(is_sticky_error(CUDA_ERROR_LAUNCH_FAILED));
  EXPECT_TRUE(is_sticky_error(CUDA_ERROR_MISALIGNED_ADDRESS));
  EXPECT_TRUE(is_sticky_error(CUDA_ERROR_ASSERT));
  EXPECT_FALSE(is_sticky_error(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  EXPECT_FALSE(is_sticky_error(CUDA_ERROR_INVALID_VALUE));
  EXPECT_FALSE(is_sticky_error(CUDA_ERROR_NOT_FOUND));
}

TEST(Nvml, AbsentLibraryGivesZeroReadingsSilently) {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library != nullptr) {
    dlclose(library);
    GTEST_SKIP() << "this machine has libnvidia-ml.so.1";
  }
  ClockReading reading = read_clocks("0000:00:00.0");
  EXPECT_EQ(reading.sm_clock_mhz, 0);
  EXPECT_EQ(reading.throttle_reasons, 0u);
  EXPECT_EQ(nvml_driver_version(), "");
}

TEST(Device, CudaVersionString) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
}

}  // namespace
}  // namespace kernlathe::gpu
