#include "tuner/search/replay.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/record/csv_record.h"

namespace kernlathe {

namespace {

// Which of two rows of one canonical configuration stands for it: an ok row before a failure, then the faster.
bool stands_before(const Evaluation& candidate, const Evaluation& incumbent) {
  const bool candidate_ok = candidate.ok() && candidate.time.median_ms > 0;
  const bool incumbent_ok = incumbent.ok() && incumbent.time.median_ms > 0;
  if (candidate_ok != incumbent_ok) return candidate_ok;
  return candidate_ok && candidate.time.median_ms < incumbent.time.median_ms;
}

}  // namespace

Space replay_space(Space space, const std::vector<std::string>& held_at_default) {
  for (const std::string& name : held_at_default) {
    const auto parameter = std::find_if(space.parameters.begin(), space.parameters.end(),
                                        [&](const Parameter& candidate) { return candidate.name == name; });
    if (parameter == space.parameters.end())
      throw TunerError(fmt::format("replay_space: space '{}' has no parameter {}", space.name, name));
    const Value& value = parameter->default_value;
    const std::string literal = std::holds_alternative<std::string>(value)
                                    ? fmt::format("\"{}\"", std::get<std::string>(value))
                                    : expr::to_string(value);
    space.constraints.push_back(Constraint{Expression::parse(fmt::format("{} == {}", name, literal))});
  }
  return space;
}

ReplaySource::ReplaySource(const std::filesystem::path& csv, const SpaceEnumerator& space, std::string hash)
    : optimum_ms_(std::numeric_limits<double>::infinity()) {
  // First by configuration as written, the later row of one winning; then folded onto canonical forms.
  std::vector<Evaluation> rows;
  std::unordered_map<std::string, std::size_t> row_of;
  std::size_t recorded_rows = 0;
  for_each_record(csv, space.space(), [&](RecordedEvaluation&& record) {
    ++recorded_rows;
    if (!hash.empty() && record.hash != hash) return;
    auto [found, added] = row_of.try_emplace(configuration_key(record.evaluation.configuration), rows.size());
    if (added) {
      rows.push_back(std::move(record.evaluation));
    } else {
      rows[found->second] = std::move(record.evaluation);
    }
  });
  if (recorded_rows == 0)
    throw InputError(SourceLocation{csv.string(), 2}, "the record holds its header and no rows: nothing to replay");
  add_canonical(std::move(rows), space);
  find_optimum();
}

ReplaySource::ReplaySource(std::vector<Evaluation> evaluations, const SpaceEnumerator& space)
    : optimum_ms_(std::numeric_limits<double>::infinity()) {
  std::vector<Evaluation> rows;
  std::unordered_map<std::string, std::size_t> row_of;
  for (Evaluation& evaluation : evaluations) {
    auto [found, added] = row_of.try_emplace(configuration_key(evaluation.configuration), rows.size());
    if (added) {
      rows.push_back(std::move(evaluation));
    } else {
      rows[found->second] = std::move(evaluation);
    }
  }
  add_canonical(std::move(rows), space);
  find_optimum();
}

void ReplaySource::add_canonical(std::vector<Evaluation> rows, const SpaceEnumerator& space) {
  for (Evaluation& evaluation : rows) {
    if (space.has_conditions()) evaluation.configuration = space.canonical(std::move(evaluation.configuration));
    std::string key = configuration_key(evaluation.configuration);
    auto found = evaluations_.find(key);
    if (found == evaluations_.end()) {
      evaluations_.emplace(std::move(key), std::move(evaluation));
    } else if (stands_before(evaluation, found->second)) {
      found->second = std::move(evaluation);
    }
  }
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
