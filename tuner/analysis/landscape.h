#pragma once
// The shape of one recording's landscape, from the recorded times alone (no model): how many configurations
// were evaluated and failed, the best, median and worst time, how many valid configurations lie within 5% and 10%
// of the optimum (a flat top makes any search look good), and each parameter's main effect as the spread of the
// times recorded with each of its values.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tuner/analysis/recording.h"

namespace kernlathe {

// The times of the valid configurations that share one value of a parameter.
struct ValueEffect {
  Value value;
  std::size_t valid = 0;
  std::size_t failed = 0;
  double median_ms = 0;  // the next three are 0 when valid == 0
  double lower_quartile_ms = 0;
  double upper_quartile_ms = 0;
  double best_ms = 0;
};

struct MainEffect {
  std::string parameter;
  std::vector<ValueEffect> values;  // the parameter's values in declared order, those recorded at least once
};

struct LandscapeSummary {
  std::size_t evaluations = 0;  // distinct configurations recorded
  std::size_t valid = 0;        // ran correctly with a usable time
  std::size_t failed = 0;       // everything else
  std::vector<std::pair<Status, std::size_t>> failures_by_status;  // in the order of the Status enumeration
  double best_ms = 0;
  double median_ms = 0;
  double worst_ms = 0;
  Configuration best_configuration;
  std::size_t within_5_percent = 0;   // valid configurations with time <= 1.05 * best, the best included
  std::size_t within_10_percent = 0;  // time <= 1.10 * best
  double share_within_5_percent = 0;  // of the valid configurations
  double share_within_10_percent = 0;
  std::vector<MainEffect> main_effects;  // one per parameter with more than one recorded value
};

// The recording must hold a valid configuration (load_recordings makes sure of it); TunerError otherwise.
LandscapeSummary summarize_landscape(const Recording& recording);

}  // namespace kernlathe
