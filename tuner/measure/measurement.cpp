#include "tuner/measure/measurement.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace kernlathe {
namespace {

// Linear interpolation between order statistics of sorted data (the common "type 7" definition).
double percentile(const std::vector<double>& sorted, double fraction) {
  double position = fraction * static_cast<double>(sorted.size() - 1);
  auto lower = static_cast<std::size_t>(std::floor(position));
  std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  double weight = position - static_cast<double>(lower);
  return sorted[lower] + weight * (sorted[upper] - sorted[lower]);
}

// The largest k (1-based) with P(Binomial(n, 1/2) < k) <= 0.025: then [x_(k), x_(n+1-k)] covers the median with
// probability at least 95%. 0 when no such k exists (n < 6).
std::size_t median_interval_rank(std::size_t n) {
  double cumulative = 0;
  std::size_t rank = 0;
  for (std::size_t below = 0; below < n; ++below) {
    // P(B = below) through log-gamma: n up to thousands of samples stays accurate.
    const double log_probability = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(below) + 1) -
                                   std::lgamma(static_cast<double>(n - below) + 1) - static_cast<double>(n) * std::log(2.0);
    cumulative += std::exp(log_probability);
    if (cumulative > 0.025) break;
    rank = below + 1;
  }
  return rank;
}

}  // namespace

MeasurementSettings MeasurementSettings::streamed_passes() {
  MeasurementSettings settings;
  settings.warmup_ms = 0;  // the verified pass and the first timed pass warm the pipeline
  settings.min_samples = 3;
  settings.max_samples = 10;
  settings.max_seconds = 0.3;
  settings.guaranteed_samples = 3;  // a pass of the naive loader takes ~250 ms: the cap alone would stop at 2
  return settings;
}

MeasurementSettings apply(MeasurementSettings settings, const MeasurementOverrides& overrides) {
  if (overrides.warmup_ms) settings.warmup_ms = *overrides.warmup_ms;
  if (overrides.busy_warmup_ms) settings.busy_warmup_ms = *overrides.busy_warmup_ms;
  if (overrides.min_samples) settings.min_samples = *overrides.min_samples;
  if (overrides.max_samples) settings.max_samples = *overrides.max_samples;
  if (overrides.min_seconds) settings.min_seconds = *overrides.min_seconds;
  if (overrides.max_seconds) settings.max_seconds = *overrides.max_seconds;
  if (overrides.target_relative_spread) settings.target_relative_spread = *overrides.target_relative_spread;
  if (overrides.cold) settings.cold = *overrides.cold;
  if (overrides.energy) settings.energy = *overrides.energy;
  if (overrides.energy_periods) settings.energy_periods = *overrides.energy_periods;
  return settings;
}

void check_settings(const MeasurementSettings& settings) {
  auto fail = [](const std::string& why) { throw std::invalid_argument(why); };
  if (settings.min_samples < 1) fail(fmt::format("the minimum sample count is {}; it must be at least 1", settings.min_samples));
  if (settings.max_samples < settings.min_samples) {
    fail(fmt::format("the maximum sample count {} is below the minimum {}", settings.max_samples, settings.min_samples));
  }
  if (!(settings.max_seconds > 0)) fail(fmt::format("the maximum time per configuration is {} s; it must be positive", settings.max_seconds));
  if (settings.min_seconds < 0 || settings.min_seconds > settings.max_seconds) {
    fail(fmt::format("the minimum time per configuration {} s is not between 0 and the maximum {} s", settings.min_seconds,
                     settings.max_seconds));
  }
  if (!(settings.target_relative_spread >= 0)) {
    fail(fmt::format("the target relative spread {} is negative", settings.target_relative_spread));
  }
  if (settings.warmup_ms < 0) fail(fmt::format("the warm-up is {} ms; it cannot be negative", settings.warmup_ms));
  if (settings.busy_warmup_ms < 0)
    fail(fmt::format("the warm-up on a busy GPU is {} ms; it cannot be negative", settings.busy_warmup_ms));
  if (settings.idle_gap_ms < 0) fail(fmt::format("the idle gap is {} ms; it cannot be negative", settings.idle_gap_ms));
  if (settings.energy_periods < 1) fail(fmt::format("energy is measured over {} counter periods; at least 1 is needed", settings.energy_periods));
}

double warmup_duration_ms(const MeasurementSettings& settings, double idle_ms) {
  if (!(idle_ms < settings.idle_gap_ms)) return settings.warmup_ms;  // NaN and infinity: treated as idle
  return std::min(settings.busy_warmup_ms, settings.warmup_ms);
}

TimeStatistics summarise(std::vector<double> samples_ms) {
  TimeStatistics statistics;
  if (samples_ms.empty()) return statistics;
  std::sort(samples_ms.begin(), samples_ms.end());
  statistics.samples = static_cast<int>(samples_ms.size());
  statistics.min_ms = samples_ms.front();
  statistics.max_ms = samples_ms.back();
  statistics.median_ms = percentile(samples_ms, 0.5);
  double interquartile = percentile(samples_ms, 0.75) - percentile(samples_ms, 0.25);
  statistics.relative_spread = statistics.median_ms > 0 ? interquartile / statistics.median_ms : 0;
  const std::size_t rank = median_interval_rank(samples_ms.size());
  statistics.low_ms = rank == 0 ? statistics.min_ms : samples_ms[rank - 1];
  statistics.high_ms = rank == 0 ? statistics.max_ms : samples_ms[samples_ms.size() - rank];
  return statistics;
}

bool measurement_complete(const std::vector<double>& samples_ms, double elapsed_seconds,
                          const MeasurementSettings& settings) {
  auto count = static_cast<int>(samples_ms.size());
  if (count >= settings.max_samples) return true;
  if (count >= std::max(settings.guaranteed_samples, 1) && elapsed_seconds >= settings.max_seconds) return true;
  if (count < std::max(settings.min_samples, 1)) return false;
  if (elapsed_seconds < settings.min_seconds) return false;
  return summarise(samples_ms).relative_spread <= settings.target_relative_spread;
}

MeasurementSettings burst_settings(MeasurementSettings settings) {
  settings.max_seconds = std::min(settings.max_seconds, burst_sampling_seconds);
  settings.min_seconds = 0;
  settings.guaranteed_samples = std::max(settings.guaranteed_samples, burst_guaranteed_samples);
  return settings;
}

int launches_per_sample(double kernel_us, bool cold) {
  if (cold || kernel_us >= batch_threshold_us) return 1;
  double wanted = 2.5 * batch_threshold_us / std::max(kernel_us, 0.1);
  return static_cast<int>(std::clamp(std::ceil(wanted), 1.0, 256.0));
}

}  // namespace kernlathe
