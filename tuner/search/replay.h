#pragma once
// Recorded measurements standing in for the GPU: strategies and the run loop are exercised on any machine,
// and strategies are compared on real data (evaluations needed to come within 5% of the optimum).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tuner/record/evaluation.h"
#include "tuner/search/stop_condition.h"
#include "tuner/search/strategy.h"

namespace kernlathe {

// Seconds a recorded evaluation took on the machine that recorded it: compile time plus every timed sample.
double simulated_seconds(const Evaluation& evaluation);

// The space a replay of a record searches: space with each named parameter held at its default (a constraint
// NAME == default). A record written before a parameter was added measured its default only, and a replay over the
// grown space would spend its budget on configurations no row covers.
Space replay_space(Space space, const std::vector<std::string>& held_at_default);

class ReplaySource {
 public:
  // Reads csv (record_columns(space) header). hash selects the rows of one spec version; empty takes every row.
  // When a configuration was recorded twice, the later row wins (a re-measurement after a resume). Rows are keyed
  // by canonical form (SpaceEnumerator::canonical): rows recorded before a parameter became conditional, that differ
  // only in values that no longer matter, are one configuration, and the fastest of them (an ok row before any
  // failure) stands for it.
  ReplaySource(const std::filesystem::path& csv, const SpaceEnumerator& space, std::string hash);
  // Evaluations already in memory (a T4 file, a test's landscape); a configuration given twice keeps the later one.
  explicit ReplaySource(std::vector<Evaluation> evaluations);
  // The same, keyed by canonical form and folded as rows read from a CSV are (a recording read for a report).
  ReplaySource(std::vector<Evaluation> evaluations, const SpaceEnumerator& space);

  // The recorded evaluation, its configuration being the one asked for; nullopt when not recorded.
  std::optional<Evaluation> lookup(const Configuration& configuration) const;
  // What a replay measures: the recorded evaluation, or one with status `invalid` ("not in the recorded data")
  // when the configuration was never recorded.
  Evaluation evaluate(const Configuration& configuration) const;
  std::size_t size() const { return evaluations_.size(); }  // distinct configurations
  // The fastest recorded verified median; +infinity when no recorded row is ok.
  double optimum_ms() const { return optimum_ms_; }

 private:
  std::unordered_map<std::string, Evaluation> evaluations_;
  double optimum_ms_;

  void find_optimum();
  // Adds rows (in record order, later repeats of a configuration already dropped) under their canonical forms.
  void add_canonical(std::vector<Evaluation> rows, const SpaceEnumerator& space);
};

struct ReplayResult {
  std::optional<double> best_time_ms;  // nullopt when no evaluation was ok
  std::optional<Configuration> best_configuration;
  std::uint64_t evaluations = 0;        // configurations proposed and evaluated, missing ones included
  std::uint64_t missing = 0;            // proposed but not in the recorded data (told status invalid)
  std::optional<std::uint64_t> evaluations_to_within_5_percent;   // 1-based count at which best <= 1.05 optimum
  std::optional<std::uint64_t> evaluations_to_within_10_percent;
  double simulated_seconds = 0;  // recorded compile time plus median * samples of every evaluation
  std::string stop_reason;       // the stop tracker's reason, or "strategy exhausted"
};

// The ask/tell loop against recorded data, asking batch configurations at a time. Time limits run on a
// simulated clock (simulated_seconds) so results do not depend on the machine replaying them.
ReplayResult replay_search(Strategy& strategy, const ReplaySource& source, const StopCondition& stop,
                           std::size_t batch);

}  // namespace kernlathe
