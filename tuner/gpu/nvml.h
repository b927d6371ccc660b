#pragma once
// Clock and throttle readings from NVML, loaded at run time like the driver API (nvml.h is not installed on every
// build machine, and libnvidia-ml is absent without the driver). Every function degrades silently: a reading
// that cannot be taken is 0 or empty, because clocks annotate a result and never decide one.

#include <cstdint>
#include <string>

namespace kernlathe::gpu {

struct ClockReading {
  int sm_clock_mhz = 0;              // current SM clock; 0 when NVML is absent
  std::uint64_t throttle_reasons = 0;  // nvmlClocksEventReason bit mask (0x1 = idle, 0x4 = SW power cap, ...)
};

// pci_bus_id as cuDeviceGetPCIBusId writes it ("0000:3B:00.0").
ClockReading read_clocks(const std::string& pci_bus_id);

// The display driver version ("580.159"); empty when NVML is absent.
std::string nvml_driver_version();

}  // namespace kernlathe::gpu
