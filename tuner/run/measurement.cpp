#include "tuner/run/measurement.h"

#include <algorithm>
#include <cmath>

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

}  // namespace

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
  return statistics;
}

bool measurement_complete(const std::vector<double>& samples_ms, double elapsed_seconds,
                          const MeasurementSettings& settings) {
  auto count = static_cast<int>(samples_ms.size());
  if (count >= settings.max_samples) return true;
  if (count >= 1 && elapsed_seconds >= settings.max_seconds) return true;
  if (count < std::max(settings.min_samples, 1)) return false;
  return summarise(samples_ms).relative_spread <= settings.target_relative_spread;
}

int launches_per_sample(double kernel_us, bool cold) {
  if (cold || kernel_us >= batch_threshold_us) return 1;
  double wanted = 2.5 * batch_threshold_us / std::max(kernel_us, 0.1);
  return static_cast<int>(std::clamp(std::ceil(wanted), 1.0, 256.0));
}

}  // namespace kernlathe
