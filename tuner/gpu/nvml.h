#pragma once
// Clock and throttle readings from NVML, loaded at run time like the driver API (nvml.h is not installed on every
// build machine, and libnvidia-ml is absent without the driver). Every function degrades silently: a reading
// that cannot be taken is 0 or empty, because clocks annotate a result and never decide one.

#include <cstdint>
#include <optional>
#include <string>

namespace kernlathe::gpu {

struct ClockReading {
  int sm_clock_mhz = 0;              // current SM clock; 0 when NVML is absent
  std::uint64_t throttle_reasons = 0;  // nvmlClocksEventReason bit mask (0x1 = idle, 0x4 = SW power cap, ...)
};

// pci_bus_id as cuDeviceGetPCIBusId writes it ("0000:3B:00.0").
ClockReading read_clocks(const std::string& pci_bus_id);

// Board power and GPU temperature at the time of the call.
struct PowerReading {
  double power_w = 0;       // nvmlDeviceGetPowerUsage; 0 when NVML is absent
  int temperature_c = 0;    // nvmlDeviceGetTemperature (GPU die); 0 when absent
};
PowerReading read_power(const std::string& pci_bus_id);

// The board's energy counter since the driver loaded, in millijoules (nvmlDeviceGetTotalEnergyConsumption, Volta
// and later); nothing when NVML or the counter is absent. On the H200 it advances about every 100 ms
// (probes/energy_probe.cu), which is why energy is measured over whole counter periods (tuner/measure/).
std::optional<std::uint64_t> read_energy_mj(const std::string& pci_bus_id);

// The display driver version ("580.159"); empty when NVML is absent.
std::string nvml_driver_version();

}  // namespace kernlathe::gpu
