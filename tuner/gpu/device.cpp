#include "tuner/gpu/device.h"

#include <fmt/format.h>

#include "tuner/driver/cuda_driver.h"
#include "tuner/gpu/nvml.h"

namespace kernlathe::gpu {
namespace {

CUdevice device_handle(int index) {
  const CudaDriver& cuda = cuda_driver();
  int count = 0;
  KERNLATHE_CUDA_CHECK(cuda.cuDeviceGetCount(&count));
  if (count == 0) throw NoGpuError("no CUDA device: the driver reports none");
  if (index < 0 || index >= count) {
    throw NoGpuError(fmt::format("no CUDA device {}: the driver reports {} (indices 0 to {})", index, count, count - 1));
  }
  CUdevice device = 0;
  KERNLATHE_CUDA_CHECK(cuda.cuDeviceGet(&device, index));
  return device;
}

std::int64_t attribute(CUdevice device, CUdevice_attribute which) {
  int value = 0;
  KERNLATHE_CUDA_CHECK(cuda_driver().cuDeviceGetAttribute(&value, which, device));
  return value;
}

}  // namespace

int device_count() {
  int count = 0;
  KERNLATHE_CUDA_CHECK(cuda_driver().cuDeviceGetCount(&count));
  return count;
}

DeviceProperties query_device(int index) {
  CUdevice device = device_handle(index);
  DeviceProperties properties;
  char name[256] = {};
  KERNLATHE_CUDA_CHECK(cuda_driver().cuDeviceGetName(name, sizeof name, device));
  properties.name = name;
  properties.arch_major = static_cast<int>(attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  properties.arch_minor = static_cast<int>(attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  properties.max_threads_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  // The opt-in maximum, not the 48 KiB default: kernels ask for more through cuFuncSetAttribute.
  properties.max_shared_memory_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  properties.max_shared_memory_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  properties.max_registers_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  properties.max_registers_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  properties.max_threads_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  properties.max_blocks_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  properties.sm_count = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  properties.warp_size = attribute(device, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  properties.l2_cache_bytes = attribute(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  properties.from_hardware = true;
  return properties;
}

DeviceInfo query_device_info(int index) {
  DeviceInfo info;
  info.properties = query_device(index);
  CUdevice device = device_handle(index);
  char bus_id[64] = {};
  KERNLATHE_CUDA_CHECK(cuda_driver().cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
  info.pci_bus_id = bus_id;
  info.cuda_driver_version = cuda_version_string(cuda_driver().version);
  info.driver_version = nvml_driver_version();
  std::size_t total = 0;
  KERNLATHE_CUDA_CHECK(cuda_driver().cuDeviceTotalMem(&total, device));
  info.total_memory_bytes = static_cast<std::int64_t>(total);
  return info;
}

LaunchLimits query_launch_limits(int index) {
  CUdevice device = device_handle(index);
  LaunchLimits limits;
  limits.max_block_dimensions = {attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                                 attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                                 attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
  limits.max_grid_dimensions = {attribute(device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                                attribute(device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                                attribute(device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
  return limits;
}

std::string cuda_version_string(int version) {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace kernlathe::gpu
