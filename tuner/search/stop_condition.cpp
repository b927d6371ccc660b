#include "tuner/search/stop_condition.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace kernlathe {

void StopTracker::record(const Evaluation& evaluation, double elapsed_seconds) {
  ++evaluations_;
  advance_clock(elapsed_seconds);
  // A zero time is a measurement that did not happen, not an infinitely fast kernel. Patience counts evaluations
  // without a new best of what the run minimises (search_value); the time target reads the time.
  if (evaluation.ok() && evaluation.time.median_ms > 0 && (!best_time_ms_ || evaluation.time.median_ms < *best_time_ms_))
    best_time_ms_ = evaluation.time.median_ms;
  const bool improved = evaluation.ok() && search_value(evaluation) > 0 &&
                        (!best_objective_ || search_value(evaluation) < *best_objective_);
  if (improved) {
    best_objective_ = search_value(evaluation);
    since_improvement_ = 0;
  } else {
    ++since_improvement_;
  }
}

void StopTracker::advance_clock(double elapsed_seconds) { elapsed_seconds_ = std::max(elapsed_seconds_, elapsed_seconds); }

std::string StopTracker::reason() const {
  if (condition_.target_time_ms && best_time_ms_ && *best_time_ms_ <= *condition_.target_time_ms) {
    return fmt::format("target {} ms reached (best {} ms)", *condition_.target_time_ms, *best_time_ms_);
  }
  if (condition_.max_evaluations && evaluations_ >= *condition_.max_evaluations) {
    return fmt::format("evaluation budget of {} reached", *condition_.max_evaluations);
  }
  if (condition_.max_seconds && elapsed_seconds_ >= *condition_.max_seconds) {
    return fmt::format("time budget of {}s reached after {:.1f}s", *condition_.max_seconds, elapsed_seconds_);
  }
  if (condition_.patience && since_improvement_ >= *condition_.patience) {
    return fmt::format("no improvement in the last {} evaluations", since_improvement_);
  }
  return "";
}

std::optional<double> parse_duration(std::string_view text) {
  double total = 0;
  bool any = false;
  std::size_t position = 0;
  while (position < text.size()) {
    double amount = 0;
    const char* begin = text.data() + position;
    auto [end, error] = std::from_chars(begin, text.data() + text.size(), amount);
    if (error != std::errc() || !std::isfinite(amount) || amount < 0) return std::nullopt;
    position = static_cast<std::size_t>(end - text.data());
    std::size_t unit_start = position;
    while (position < text.size() && std::isalpha(static_cast<unsigned char>(text[position]))) ++position;
    std::string_view unit = text.substr(unit_start, position - unit_start);
    double scale = 0;
    if (unit.empty() || unit == "s") {
      scale = 1;
    } else if (unit == "ms") {
      scale = 1e-3;
    } else if (unit == "m" || unit == "min") {
      scale = 60;
    } else if (unit == "h") {
      scale = 3600;
    } else {
      return std::nullopt;
    }
    // A bare number is seconds only on its own: "1h30" is more likely a typo than 1 h 30 s.
    if (unit.empty() && any) return std::nullopt;
    if (unit.empty() && position < text.size()) return std::nullopt;
    total += amount * scale;
    any = true;
  }
  if (!any) return std::nullopt;
  return total;
}

}  // namespace kernlathe
