#include "tuner/gpu/nvml.h"

#include <dlfcn.h>


namespace kernlathe::gpu {
namespace {

// The few declarations of nvml.h that the tuner uses, with the types of the NVML ABI.
using NvmlReturn = int;  // nvmlReturn_t; NVML_SUCCESS = 0
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn nvml_success = 0;
constexpr int nvml_clock_sm = 1;  // NVML_CLOCK_SM

struct Nvml {
  NvmlReturn (*init)() = nullptr;  // nvmlInit_v2
  NvmlReturn (*device_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*throttle_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned int) = nullptr;
  NvmlReturn (*power_usage)(NvmlDevice, unsigned int*) = nullptr;            // milliwatts
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;       // sensor 0: the GPU die
  NvmlReturn (*energy)(NvmlDevice, unsigned long long*) = nullptr;           // millijoules
  bool ready = false;
};

// Loaded and initialised once; nvmlShutdown is left to process exit, since readings may come until then.
const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml library;
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return library;
    auto symbol = [handle](const char* name) { return dlsym(handle, name); };
    library.init = reinterpret_cast<decltype(library.init)>(symbol("nvmlInit_v2"));
    library.device_by_pci_bus_id =
        reinterpret_cast<decltype(library.device_by_pci_bus_id)>(symbol("nvmlDeviceGetHandleByPciBusId_v2"));
    library.clock_info = reinterpret_cast<decltype(library.clock_info)>(symbol("nvmlDeviceGetClockInfo"));
    // Renamed in NVML 12.2 ("clocks event reasons"); older drivers have only the throttle name. Same ABI.
    void* reasons = symbol("nvmlDeviceGetCurrentClocksEventReasons");
    if (reasons == nullptr) reasons = symbol("nvmlDeviceGetCurrentClocksThrottleReasons");
    library.throttle_reasons = reinterpret_cast<decltype(library.throttle_reasons)>(reasons);
    library.driver_version = reinterpret_cast<decltype(library.driver_version)>(symbol("nvmlSystemGetDriverVersion"));
    library.power_usage = reinterpret_cast<decltype(library.power_usage)>(symbol("nvmlDeviceGetPowerUsage"));
    library.temperature = reinterpret_cast<decltype(library.temperature)>(symbol("nvmlDeviceGetTemperature"));
    library.energy = reinterpret_cast<decltype(library.energy)>(symbol("nvmlDeviceGetTotalEnergyConsumption"));
    library.ready = library.init != nullptr && library.device_by_pci_bus_id != nullptr && library.init() == nvml_success;
    return library;
  }();
  return loaded;
}

// The NVML handle of a device, cached: the lookup by bus id costs more than a reading.
NvmlDevice device_handle(const std::string& pci_bus_id) {
  const Nvml& library = nvml();
  if (!library.ready) return nullptr;
  thread_local std::string cached_bus_id;
  thread_local NvmlDevice cached = nullptr;
  if (cached != nullptr && cached_bus_id == pci_bus_id) return cached;
  NvmlDevice device = nullptr;
  if (library.device_by_pci_bus_id(pci_bus_id.c_str(), &device) != nvml_success) return nullptr;
  cached_bus_id = pci_bus_id;
  cached = device;
  return device;
}

}  // namespace

ClockReading read_clocks(const std::string& pci_bus_id) {
  ClockReading reading;
  const Nvml& library = nvml();
  NvmlDevice device = device_handle(pci_bus_id);
  if (device == nullptr) return reading;
  unsigned int clock = 0;
  if (library.clock_info != nullptr && library.clock_info(device, nvml_clock_sm, &clock) == nvml_success) {
    reading.sm_clock_mhz = static_cast<int>(clock);
  }
  unsigned long long reasons = 0;
  if (library.throttle_reasons != nullptr && library.throttle_reasons(device, &reasons) == nvml_success) {
    reading.throttle_reasons = reasons;
  }
  return reading;
}

PowerReading read_power(const std::string& pci_bus_id) {
  PowerReading reading;
  const Nvml& library = nvml();
  NvmlDevice device = device_handle(pci_bus_id);
  if (device == nullptr) return reading;
  unsigned int milliwatts = 0;
  if (library.power_usage != nullptr && library.power_usage(device, &milliwatts) == nvml_success) {
    reading.power_w = milliwatts * 1e-3;
  }
  unsigned int celsius = 0;
  if (library.temperature != nullptr && library.temperature(device, 0, &celsius) == nvml_success) {
    reading.temperature_c = static_cast<int>(celsius);
  }
  return reading;
}

std::optional<std::uint64_t> read_energy_mj(const std::string& pci_bus_id) {
  const Nvml& library = nvml();
  NvmlDevice device = device_handle(pci_bus_id);
  unsigned long long millijoules = 0;
  if (device == nullptr || library.energy == nullptr || library.energy(device, &millijoules) != nvml_success) {
    return std::nullopt;
  }
  return millijoules;
}

std::string nvml_driver_version() {
  const Nvml& library = nvml();
  char text[96] = {};
  if (!library.ready || library.driver_version == nullptr) return {};
  if (library.driver_version(text, sizeof text) != nvml_success) return {};
  return text;
}

}  // namespace kernlathe::gpu
