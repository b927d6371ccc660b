#pragma once
// What the hardware says about a device, through the driver API (no context needed).

#include <array>
#include <cstdint>
#include <string>

#include "tuner/spec/model.h"

namespace kernlathe::gpu {

// Number of CUDA devices. Throws NoGpuError without a driver.
int device_count();

// model.h's DeviceProperties from cuDeviceGetAttribute, with from_hardware = true.
// Throws NoGpuError without a driver, without devices, or when index is out of range.
DeviceProperties query_device(int index);

// Everything a result file's header records about the device, beyond DeviceProperties.
struct DeviceInfo {
  DeviceProperties properties;
  std::string pci_bus_id;            // "0000:3B:00.0"
  std::string cuda_driver_version;   // CUDA version the driver supports: "13.0"
  std::string driver_version;        // display driver, from NVML: "580.159"; empty without NVML
  std::int64_t total_memory_bytes = 0;
};
DeviceInfo query_device_info(int index);

// Launch limits that DeviceProperties does not carry but a launch must respect.
struct LaunchLimits {
  std::array<std::int64_t, 3> max_block_dimensions{};
  std::array<std::int64_t, 3> max_grid_dimensions{};
};
LaunchLimits query_launch_limits(int index);

// "13.0" for 13000.
std::string cuda_version_string(int version);

}  // namespace kernlathe::gpu
