#pragma once
// The result of evaluating one configuration. A failed configuration is a result with a status, never an
// exception: the run records it and goes on.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tuner/space/space.h"

namespace kernlathe {

enum class Status {
  ok,                  // compiled, ran, verified, timed
  compile_error,       // NVRTC rejected the instantiated source (message: first lines of the log)
  resources_exceeded,  // block size, registers or shared memory beyond the device's limits
  launch_error,        // the launch itself failed (cuLaunchKernel returned an error)
  wrong_result,        // verification against the reference failed (message: first mismatch)
  timeout,             // the kernel ran past the per-configuration timeout; the worker was killed
  crashed,             // illegal address or another error that poisoned the context, or the worker died
  invalid,             // replay only: the recorded data marks the configuration invalid
};

std::string_view status_name(Status status);
std::optional<Status> parse_status(std::string_view name);

struct TimeStatistics {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  double relative_spread = 0;  // (p75 - p25) / median
  int samples = 0;
  double low_ms = 0;   // 95% interval of the median (order statistics; min and max below 6 samples)
  double high_ms = 0;
};

// Streamed workloads only (KernelSpec::stream): where the end-to-end time of the median timed pass went. Stage
// times are the wall time during which some batch was in that stage (overlap across streams counted once).
struct StreamStages {
  double end_to_end_ms = 0;
  double host_read_ms = 0;  // summed over host workers
  double copy_in_ms = 0;    // host to device
  double kernel_ms = 0;
  double copy_out_ms = 0;   // device to host
  double gpu_idle_ms = 0;   // end-to-end time with no batch on the device
  double items_per_second = 0;
  double bytes_per_second = 0;  // input + output bytes per end-to-end second
  double input_gbps = 0;        // host-to-device bytes per end-to-end nanosecond: against the pinned H2D ceiling
};

// Where the evaluation worker spent one evaluation's wall time, stage by stage. Not recorded in the CSV: `tune run`
// sums them into its time profile (tuner/session/run_profile.h), so that a slow run shows which stage to look at.
struct WorkerStageTimes {
  double preparation_ms = 0;   // loading the cubin, resolving the kernel, occupancy
  double verification_ms = 0;  // restoring the buffers, the verification launch and the comparison
  double warmup_ms = 0;
  double sampling_ms = 0;
  double conditions_ms = 0;    // NVML clock, power and temperature reads
  double energy_ms = 0;
  double total_ms() const {
    return preparation_ms + verification_ms + warmup_ms + sampling_ms + conditions_ms + energy_ms;
  }
};

struct Evaluation {
  Configuration configuration;
  Status status = Status::ok;
  std::string message;
  TimeStatistics time;
  double compile_ms = 0;          // 0 when the cubin came from the cache
  bool cubin_cached = false;
  int registers = 0;              // per thread
  int static_shared_bytes = 0;
  std::int64_t dynamic_shared_bytes = 0;
  int threads_per_block = 0;
  double occupancy = 0;           // active warps per SM / max warps per SM, from the occupancy calculator
  int sm_clock_mhz = 0;           // 0 when NVML is not available
  std::uint64_t throttle_reasons = 0;
  double power_w = 0;             // board power read after timing; 0 when NVML is not available
  int temperature_c = 0;          // GPU temperature read after timing
  double energy_mj = 0;           // energy per launch in millijoules; 0 when not measured (tuner/measure/)
  double energy_window_ms = 0;    // the whole energy-counter periods it was measured over
  // What the search minimised, when the run's objective is not time (--objective energy: energy_mj; edp:
  // energy_mj * time.median_ms); 0 with the time objective, where the median time is the figure.
  double objective = 0;
  double max_error = 0;           // largest relative error seen during verification
  double timestamp = 0;           // seconds since the epoch when the evaluation finished
  // Which GPU measured it, as the run names its devices: the CUDA index ("0", "1") or, in a run over several
  // processes (tune run under mpirun), the rank too ("rank 2, gpu 0"); empty in records written before.
  std::string device;
  StreamStages stream;            // streamed specs; time then holds the end-to-end time of a whole pass
  WorkerStageTimes worker_stages;  // GPU evaluations only; not recorded

  bool ok() const { return status == Status::ok; }
};

// What a run minimises (`tune run --objective`): the median time, the energy per launch, or their product (the
// energy-delay product, which weighs both).
enum class Objective { time, energy, edp };
std::string_view objective_name(Objective objective);
std::optional<Objective> parse_objective(std::string_view text);

// The value for `objective` of an ok evaluation, 0 when it lacks the figure (no energy measured).
double objective_value(const Evaluation& evaluation, Objective objective);
// The figure a search ranks an evaluation by: its objective when set, else its median time.
inline double search_value(const Evaluation& evaluation) {
  return evaluation.objective > 0 ? evaluation.objective : evaluation.time.median_ms;
}

// NVML clock-event reasons (nvmlClocksEventReason*) outside the clock policy of tuner/measure/measurement.h:
// HW slowdown, SW thermal, HW thermal and power-brake slowdowns. A power-cap throttle (0x4) is inside it.
inline constexpr std::uint64_t reasons_outside_clock_policy = 0x8 | 0x20 | 0x40 | 0x80;
// "" inside the policy; otherwise the reasons by name, joined with '+' ("sw_thermal+hw_slowdown").
std::string clock_policy_flag(std::uint64_t throttle_reasons);

}  // namespace kernlathe
