#pragma once
// When a search stops, kept apart from how it searches: any condition met stops the run.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tuner/record/evaluation.h"

namespace kernlathe {

struct StopCondition {
  std::optional<std::uint64_t> max_evaluations;  // evaluations of any status
  std::optional<double> max_seconds;             // wall-clock seconds since the search started
  std::optional<double> target_time_ms;          // stop once a verified configuration is at least this fast
  std::optional<std::uint64_t> patience;         // stop after this many evaluations without a new best
};

class StopTracker {
 public:
  explicit StopTracker(StopCondition condition) : condition_(condition) {}

  // One finished evaluation; elapsed_seconds is measured from the start of the search.
  void record(const Evaluation& evaluation, double elapsed_seconds);
  // For time limits while no evaluation finishes (a long compile): later values only move the clock forward.
  void advance_clock(double elapsed_seconds);

  bool should_stop() const { return !reason().empty(); }
  // Why the search should stop ("reached 100 evaluations"), or "" while it should go on.
  std::string reason() const;

  std::uint64_t evaluations() const { return evaluations_; }
  std::optional<double> best_time_ms() const { return best_time_ms_; }
  std::uint64_t evaluations_since_improvement() const { return since_improvement_; }
  double elapsed_seconds() const { return elapsed_seconds_; }

 private:
  StopCondition condition_;
  std::uint64_t evaluations_ = 0;
  std::uint64_t since_improvement_ = 0;
  std::optional<double> best_time_ms_;
  std::optional<double> best_objective_;  // the best search_value(): the time unless the run minimises energy
  double elapsed_seconds_ = 0;
};

// "90s", "5m", "1h", "250ms", "1h30m", "1.5h"; a bare number is seconds. Units: ms, s, m (or min), h.
// nullopt for anything else, including negative or empty text.
std::optional<double> parse_duration(std::string_view text);

}  // namespace kernlathe
