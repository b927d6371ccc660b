#pragma once
// The device side of measurement: times a configuration's launches with CUDA events under the rule of
// measurement.h (warm-up, batches for short kernels, L2 flush in cold mode), and measures its energy per launch
// over whole periods of NVML's energy counter. The evaluation worker times kernels, the cuBLAS baseline and
// nothing else through here; the streamed passes use measurement_complete() directly, since a pass is timed on
// the host.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tuner/gpu/driver_handles.h"
#include "tuner/measure/launch_gate.h"
#include "tuner/measure/measurement.h"

namespace kernlathe {

struct EnergyFigures {
  double energy_per_launch_mj = 0;
  double average_power_w = 0;
  double window_ms = 0;  // from the first counter step to the last, while the GPU ran only this configuration
};

class KernelTimer {
 public:
  KernelTimer() = default;
  // Events are created in the current context; in cold mode a flush buffer twice l2_bytes is allocated.
  KernelTimer(CUstream stream, const MeasurementSettings& settings, std::size_t l2_bytes);

  // Warm-up (as long as warmup_duration_ms() says, from the time since this timer's previous timed work), then
  // samples of batches of launch_once() until the rule says stop. Each sample of up to
  // LaunchGate::max_gated_launches launches is queued behind a closed gate (launch_gate.h), so the host's cost of
  // launch_once() is not timed. `phase` names what is running, for the error
  // message of a failing launch.
  // TimingKind::burst (after a rest: tuner/measure/measurement.h): min_warmup_launches warm-up launches, and
  // sampling as burst_settings() says.
  TimeStatistics time(const std::function<void()>& launch_once, std::string& phase, TimingKind kind = TimingKind::usual);
  // The sustained figure (tuner/measure/measurement.h): launch_once() back to back for `seconds`, in windows of
  // about sustained_window_ms; the statistics of the windows' time per launch in the second half.
  TimeStatistics sustained(const std::function<void()>& launch_once, double seconds, std::string& phase);
  // Wall time of the last time() call's warm-up and sampling.
  double last_warmup_ms() const { return last_warmup_ms_; }
  double last_sampling_ms() const { return last_sampling_ms_; }

  // Keeps the GPU busy with launch_once() from one energy-counter step to settings.energy_periods steps later and
  // returns the mean power over that window times time_per_launch_ms. Nothing when the device has no energy
  // counter (no NVML, or a GPU older than Volta) or the counter does not step within a second.
  std::optional<EnergyFigures> energy(const std::function<void()>& launch_once, double time_per_launch_ms,
                                      const std::string& pci_bus_id, std::string& phase);

  const MeasurementSettings& settings() const { return settings_; }
  // Whether samples are queued behind the gate (false where the driver refuses stream memory operations).
  bool gated() const { return gate_ && gate_->usable(); }

 private:
  double elapsed_ms();  // between the two events, after the stop event completes

  CUstream stream_ = nullptr;
  MeasurementSettings settings_;
  gpu::Event start_;
  gpu::Event stop_;
  gpu::DeviceBuffer flush_buffer_;
  std::unique_ptr<LaunchGate> gate_ = std::make_unique<LaunchGate>();  // open until constructed with a stream; a pointer: the gate's watchdog thread holds its address
  std::optional<std::chrono::steady_clock::time_point> busy_until_;  // end of the previous timed work
  double last_warmup_ms_ = 0;
  double last_sampling_ms_ = 0;
};

}  // namespace kernlathe
