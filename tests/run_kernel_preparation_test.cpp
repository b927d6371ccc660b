// Kernel preparation's checks that come before the driver (tuner/run/kernel_preparation.h); loading, resources
// and parameter layout are exercised on the GPU (tests/gpu/evaluator_device_test.cpp).
#include "tuner/run/kernel_preparation.h"

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

ConfigurationFailure failure_of(const KernelLaunch& launch) {
  WorkerSetup setup;
  std::vector<ArgumentBuffers> buffers;
  DeviceProperties properties;
  gpu::LaunchLimits limits;
  limits.max_grid_dimensions = {2147483647, 65535, 65535};
  limits.max_block_dimensions = {1024, 1024, 64};
  Evaluation evaluation;
  std::string phase;
  try {
    prepare_kernel(launch, PreparationContext{setup, buffers, properties, limits}, evaluation, phase);
  } catch (const ConfigurationFailure& failure) {
    return failure;
  }
  ADD_FAILURE() << "the launch was accepted";
  return {};
}

TEST(KernelPreparation, EmptyAndOversizedGridsFailTheConfigurationBeforeTheDriverIsNeeded) {
  KernelLaunch launch;
  launch.grid = {4, 0, 1};
  launch.block = {128, 1, 1};
  ConfigurationFailure empty = failure_of(launch);
  EXPECT_EQ(empty.status, Status::launch_error);
  EXPECT_EQ(empty.message, "grid (4, 0, 1) has a dimension below 1");

  launch.grid = {1, 70000, 1};
  ConfigurationFailure oversized = failure_of(launch);
  EXPECT_EQ(oversized.status, Status::launch_error);
  EXPECT_EQ(oversized.message, "grid (1, 70000, 1) exceeds the device's grid limits (2147483647, 65535, 65535)");

  launch.grid = {1, 1, 1};
  launch.block = {0, 1, 1};
  EXPECT_EQ(failure_of(launch).message, "block (0, 1, 1) has a dimension below 1");
}

TEST(KernelPreparation, DimensionsPrintAsATriple) {
  EXPECT_EQ(dimensions_text({1, 2, 3}), "(1, 2, 3)");
}

}  // namespace
}  // namespace kernlathe
