#include "tuner/analysis/landscape.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "tuner/search/benchmark.h"

namespace kernlathe {

LandscapeSummary summarize_landscape(const Recording& recording) {
  LandscapeSummary summary;
  summary.evaluations = recording.evaluations.size();
  std::vector<double> times;
  std::map<Status, std::size_t> failures;
  const Evaluation* best = nullptr;
  for (const Evaluation& evaluation : recording.evaluations) {
    if (!is_valid_measurement(evaluation)) {
      ++failures[evaluation.status];
      continue;
    }
    times.push_back(evaluation.time.median_ms);
    if (best == nullptr || evaluation.time.median_ms < best->time.median_ms) best = &evaluation;
  }
  if (best == nullptr)
    throw TunerError(fmt::format("{}: no valid configuration to summarize", recording.source.string()));
  summary.valid = times.size();
  summary.failed = summary.evaluations - summary.valid;
  summary.failures_by_status.assign(failures.begin(), failures.end());
  std::sort(times.begin(), times.end());
  summary.best_ms = times.front();
  summary.worst_ms = times.back();
  summary.median_ms = quantile_of(times, 0.5);
  summary.best_configuration = best->configuration;
  summary.within_5_percent = static_cast<std::size_t>(
      std::upper_bound(times.begin(), times.end(), summary.best_ms * 1.05) - times.begin());
  summary.within_10_percent = static_cast<std::size_t>(
      std::upper_bound(times.begin(), times.end(), summary.best_ms * 1.10) - times.begin());
  summary.share_within_5_percent = static_cast<double>(summary.within_5_percent) / static_cast<double>(summary.valid);
  summary.share_within_10_percent = static_cast<double>(summary.within_10_percent) / static_cast<double>(summary.valid);

  for (std::size_t p = 0; p < recording.parameters.size(); ++p) {
    const Parameter& parameter = recording.parameters[p];
    std::vector<std::vector<double>> times_by_value(parameter.values.size());
    std::vector<std::size_t> failed_by_value(parameter.values.size(), 0);
    std::vector<bool> seen(parameter.values.size(), false);
    for (const Evaluation& evaluation : recording.evaluations) {
      const auto index = static_cast<std::size_t>(
          std::find(parameter.values.begin(), parameter.values.end(), evaluation.configuration[p]) -
          parameter.values.begin());
      if (index >= parameter.values.size()) continue;  // load_recordings completes the values; cannot happen
      seen[index] = true;
      if (is_valid_measurement(evaluation)) {
        times_by_value[index].push_back(evaluation.time.median_ms);
      } else {
        ++failed_by_value[index];
      }
    }
    MainEffect effect{parameter.name, {}};
    for (std::size_t v = 0; v < parameter.values.size(); ++v) {
      if (!seen[v]) continue;
      std::vector<double>& value_times = times_by_value[v];
      std::sort(value_times.begin(), value_times.end());
      ValueEffect value{parameter.values[v], value_times.size(), failed_by_value[v]};
      if (!value_times.empty()) {
        value.median_ms = quantile_of(value_times, 0.5);
        value.lower_quartile_ms = quantile_of(value_times, 0.25);
        value.upper_quartile_ms = quantile_of(value_times, 0.75);
        value.best_ms = value_times.front();
      }
      effect.values.push_back(value);
    }
    if (effect.values.size() > 1) summary.main_effects.push_back(std::move(effect));
  }
  return summary;
}

}  // namespace kernlathe
