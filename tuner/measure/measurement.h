#pragma once
// How a configuration is measured, and the statistics reported for it: the one home of the rules. Pure functions,
// so the stopping rule, the statistics and the clock policy are tested without a GPU; the loops that apply them
// on the device live beside this file (kernel_timer.h).
//
// Timing. Each sample is timed with CUDA events around the launch, after a warm-up. A kernel shorter than
// batch_threshold_us is timed as a batch of back-to-back launches per sample, divided by the batch size: a single
// event pair around a few microseconds of work measures mostly launch latency and event resolution (~0.5 us), and
// a batch measures the kernel's throughput, which is what a tuned kernel inside an application sees.
// In cold mode every sample is one launch preceded, outside the timed region, by a write over a buffer twice the
// L2 size, so each launch starts with its data out of L2.
//
// Clock policy. Kernels are measured as an application runs them: at the clocks the GPU chooses, in steady state
// under the board's power cap (held clocks need root and are not what users get). A power-cap throttle is part of
// that state; a thermal or hardware slowdown is not, and rows measured during one are flagged (clock_flag). The final round
// (tuner/session/final_round.h) measures the top configurations, the default and the baseline interleaved, so
// all of them see the same state.
//
// Energy. NVML's energy counter advances in steps (about every 100 ms on the H200), so a window shorter than a few
// steps reads 0 or one step (coefficient of variation 0.3-3 over 10-50 ms windows; probes/energy_probe.cu). The
// energy loop keeps the GPU busy with the configuration, waits for a step, and measures the mean power over
// energy_periods whole steps; energy per launch is that power times the measured time per launch (static power
// included, as an application pays it).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuner/record/evaluation.h"

namespace kernlathe {

// Whether a configuration's energy is measured. `automatic`: when the objective needs it, and in the final round.
enum class EnergyMeasurement { off, automatic, always };

struct MeasurementSettings {
  // Warm-up (see warmup_duration_ms): the full length after the GPU idled, a short one while it is busy.
  double warmup_ms = 20;
  double busy_warmup_ms = 2;
  double idle_gap_ms = 100;
  int min_samples = 10;
  int max_samples = 200;
  double min_seconds = 0;    // sampling time every configuration gets at least (warm-up excluded)
  double max_seconds = 1.0;  // cap on the sampling time of one configuration (warm-up excluded)
  double target_relative_spread = 0.02;
  bool cold = false;
  EnergyMeasurement energy = EnergyMeasurement::automatic;
  int energy_periods = 2;    // whole energy-counter periods per energy figure
  int guaranteed_samples = 1;  // taken even past max_seconds (streamed passes: 3, so a median is a middle pass)

  // Streamed workloads time whole passes over a dataset (tens of milliseconds each): the same rule with fewer
  // samples and a shorter cap.
  static MeasurementSettings streamed_passes();
};

// A setting given on the command line replaces the default of both kinds of workload.
struct MeasurementOverrides {
  std::optional<double> warmup_ms;
  std::optional<double> busy_warmup_ms;
  std::optional<int> min_samples;
  std::optional<int> max_samples;
  std::optional<double> min_seconds;
  std::optional<double> max_seconds;
  std::optional<double> target_relative_spread;
  std::optional<bool> cold;
  std::optional<EnergyMeasurement> energy;
  std::optional<int> energy_periods;
};
MeasurementSettings apply(MeasurementSettings settings, const MeasurementOverrides& overrides);

// Throws std::invalid_argument with the reason when the settings cannot be followed (a minimum
// above its maximum, a non-positive count): the CLI turns it into exit 2.
void check_settings(const MeasurementSettings& settings);

// Median, min, max, (p75 - p25) / median, count, and a 95% interval of the median from order statistics
// (distribution-free; with fewer than 6 samples no pair of order statistics reaches 95%, and the interval is
// [min, max]). Percentiles interpolate linearly between order statistics. Empty input gives all zeros.
TimeStatistics summarise(std::vector<double> samples_ms);

// The stopping rule: stop at max_samples; or once elapsed_seconds reaches max_seconds with at least
// guaranteed_samples; otherwise continue until min_samples and min_seconds are both reached and the relative spread
// is at most the target.
bool measurement_complete(const std::vector<double>& samples_ms, double elapsed_seconds,
                          const MeasurementSettings& settings);

// Warm-up before a configuration's samples, for a configuration whose timing starts idle_ms after the end of the
// previous timed work on this GPU (infinity for the first). The warm-up brings the clocks out of their idle state
// and pays the kernel's first-launch costs (module load, instruction cache). After an idle gap of idle_gap_ms or
// more it lasts warmup_ms; when the previous configuration kept the GPU busy until just before, the clocks are
// already up and min(busy_warmup_ms, warmup_ms) is enough for the rest. Either lasts at least
// min_warmup_launches launches (one when the warm-up is 0). benchmarks/warmup_bench.sh measures both on the GPU.
double warmup_duration_ms(const MeasurementSettings& settings, double idle_ms);
inline constexpr int min_warmup_launches = 2;

// Burst figures: a timing that starts after the GPU rested this long, with nothing else on it. Measured on an H200
// (results/timing_study/2026-11-29-h200-gaps): at 8192 x 28672 x 4096 bf16 the same cuBLAS call took 2.80 ms timed
// right after other work and 2.43 ms after a rest of 100 ms (2.45 after 20 ms, 2.42 after 500 ms): the power
// limiter lowers the clocks within about 50 ms of continuous load (4096^3: 0.176 ms for the first 40 ms, 0.193 ms
// after 120 ms). The final round rests before every measurement (Measurer::rest), and kernlathe::time_launches
// before its timing, so both report burst figures whatever ran before them; docs/measurement.md has the analysis.
inline constexpr double burst_rest_ms = 100;
// A burst timing (after the rest) is short: two warm-up launches (the clocks are up after a rest of 100 ms: the
// first launches after a 1 s rest ran as fast as any), then samples for at most burst_sampling_seconds, at least
// burst_guaranteed_samples of them. A longer one reaches the limiter: at 8192 x 28672 x 4096 a 20 ms warm-up and
// ten samples of 2.5 ms gave round figures spread over 2.53-2.91 ms (results/timing_study/2026-11-29-h200-burst).
inline constexpr double burst_sampling_seconds = 0.025;
inline constexpr int burst_guaranteed_samples = 5;
// Sustained figures: the kernel back to back for sustained_seconds, in windows of about sustained_window_ms, the
// time per launch of the windows in the second half. A loop of one kernel runs at this figure; at the H200's power
// limit it is 13-20% over the burst figure for a bf16 GEMM (docs/measurement.md). The final round's winner and the
// baseline get one each, reported beside the burst figures, which rank.
inline constexpr double sustained_seconds = 0.5;
inline constexpr double sustained_window_ms = 10;
// How a timing runs: `usual` (candidates, the baseline at setup) or `burst` (the final round and
// kernlathe::time_launches, after a rest).
enum class TimingKind { usual, burst };
// The settings a burst timing samples with: settings' rule, its sampling capped as above.
MeasurementSettings burst_settings(MeasurementSettings settings);

// Kernels whose single launch is shorter than this are timed in batches.
inline constexpr double batch_threshold_us = 20;
// Launches per sample for a kernel estimated at kernel_us per launch: enough to fill ~2.5x the threshold, at most
// 256, and 1 in cold mode (a batch would run all but its first launch with warm caches).
int launches_per_sample(double kernel_us, bool cold);

// The clock policy's flag of a row is clock_policy_flag() in tuner/record/evaluation.h, beside the fields it reads.

}  // namespace kernlathe
