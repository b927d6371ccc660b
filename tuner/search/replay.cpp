#include "tuner/search/replay.h"

#include <algorithm>
#include <limits>

#include "tuner/record/csv_record.h"

namespace kernlathe {

ReplaySource::ReplaySource(const std::filesystem::path& csv, const Space& space, std::string hash)
    : optimum_ms_(std::numeric_limits<double>::infinity()) {
  for_each_record(csv, space, [&](RecordedEvaluation&& record) {
    if (!hash.empty() && record.hash != hash) return;
    std::string key = configuration_key(record.evaluation.configuration);
    evaluations_.insert_or_assign(std::move(key), std::move(record.evaluation));
  });
  find_optimum();
}

ReplaySource::ReplaySource(std::vector<Evaluation> evaluations) : optimum_ms_(std::numeric_limits<double>::infinity()) {
  for (Evaluation& evaluation : evaluations) {
    std::string key = configuration_key(evaluation.configuration);
    evaluations_.insert_or_assign(std::move(key), std::move(evaluation));
  }
  find_optimum();
}

void ReplaySource::find_optimum() {
  for (const auto& [key, evaluation] : evaluations_) {
    if (evaluation.ok() && evaluation.time.median_ms > 0) optimum_ms_ = std::min(optimum_ms_, evaluation.time.median_ms);
  }
}

double simulated_seconds(const Evaluation& evaluation) {
  return (evaluation.compile_ms + evaluation.time.median_ms * std::max(evaluation.time.samples, 1)) * 1e-3;
}

Evaluation ReplaySource::evaluate(const Configuration& configuration) const {
  if (std::optional<Evaluation> recorded = lookup(configuration)) return std::move(*recorded);
  Evaluation missing;
  missing.configuration = configuration;
  missing.status = Status::invalid;
  missing.message = "not in the recorded data";
  return missing;
}

std::optional<Evaluation> ReplaySource::lookup(const Configuration& configuration) const {
  auto found = evaluations_.find(configuration_key(configuration));
  if (found == evaluations_.end()) return std::nullopt;
  Evaluation evaluation = found->second;
  evaluation.configuration = configuration;
  return evaluation;
}

ReplayResult replay_search(Strategy& strategy, const ReplaySource& source, const StopCondition& stop,
                           std::size_t batch) {
  ReplayResult result;
  StopTracker tracker(stop);
  const double optimum = source.optimum_ms();
  batch = std::max<std::size_t>(batch, 1);
  while (!tracker.should_stop()) {
    std::vector<Configuration> proposals = strategy.ask(batch);
    if (proposals.empty()) {
      result.stop_reason = "strategy exhausted";
      break;
    }
    for (const Configuration& configuration : proposals) {
      const bool recorded = source.lookup(configuration).has_value();
      Evaluation evaluation = source.evaluate(configuration);
      if (!recorded) ++result.missing;
      ++result.evaluations;
      result.simulated_seconds += simulated_seconds(evaluation);
      strategy.tell(evaluation);
      tracker.record(evaluation, result.simulated_seconds);
      if (evaluation.ok() && evaluation.time.median_ms > 0 &&
          (!result.best_time_ms || evaluation.time.median_ms < *result.best_time_ms)) {
        result.best_time_ms = evaluation.time.median_ms;
        result.best_configuration = evaluation.configuration;
        if (!result.evaluations_to_within_5_percent && *result.best_time_ms <= optimum * 1.05) {
          result.evaluations_to_within_5_percent = result.evaluations;
        }
        if (!result.evaluations_to_within_10_percent && *result.best_time_ms <= optimum * 1.10) {
          result.evaluations_to_within_10_percent = result.evaluations;
        }
      }
      // Proposals left in the batch are dropped, as a run that stops mid-batch drops its queue.
      if (tracker.should_stop()) break;
    }
  }
  if (result.stop_reason.empty()) result.stop_reason = tracker.reason();
  return result;
}

}  // namespace kernlathe
