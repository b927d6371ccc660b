#include "tuner/session/final_round.h"

#include <algorithm>

#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace kernlathe {

namespace {

// Two-sided 95% quantiles of Student's t for 1 to 10 degrees of freedom; beyond, the normal's 1.96 is within 12%.
double t_quantile_95(std::size_t degrees_of_freedom) {
  static const double quantiles[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228};
  if (degrees_of_freedom == 0) return 0;
  if (degrees_of_freedom <= 10) return quantiles[degrees_of_freedom - 1];
  return 1.96;
}

}  // namespace

std::pair<double, double> mean_and_half_width(const std::vector<double>& values) {
  const std::size_t n = values.size();
  if (n == 0) return {0, 0};
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(n);
  double squares = 0;
  for (double value : values) squares += (value - mean) * (value - mean);
  const double half_width =
      n > 1 ? t_quantile_95(n - 1) * std::sqrt(squares / static_cast<double>(n - 1)) / std::sqrt(static_cast<double>(n)) : 0;
  return {mean, half_width};
}

FinalFigures summarise_rounds(std::vector<double> round_ms) {
  FinalFigures figures;
  figures.round_ms = std::move(round_ms);
  if (figures.round_ms.empty()) return figures;
  figures.complete = true;
  const auto [mean, half_width] = mean_and_half_width(figures.round_ms);
  figures.mean_ms = mean;
  figures.low_ms = mean - half_width;
  figures.high_ms = mean + half_width;
  return figures;
}

bool faster_beyond_noise(const FinalFigures& a, const FinalFigures& b) {
  return a.complete && b.complete && a.high_ms < b.low_ms;
}

namespace {

// What the rounds measured so far, per candidate.
struct RoundRecord {
  explicit RoundRecord(std::size_t candidates) : round_ms(candidates), round_energy_mj(candidates), energy_asked(candidates), failures(candidates) {}
  std::vector<std::vector<double>> round_ms;
  std::vector<std::vector<double>> round_energy_mj;
  std::vector<std::size_t> energy_asked;  // rounds that asked for energy and measured the time
  std::vector<std::string> failures;
};

// One round: every candidate still in measured once, starting at round % n so that none is always first (after a
// pause) or last.
void measure_round(RoundRecord& record, int round, bool with_energy,
                   const std::function<Evaluation(std::size_t candidate, bool with_energy)>& measure,
                   const std::function<void(int round, std::size_t candidate)>& measured) {
  const std::size_t n = record.round_ms.size();
  for (std::size_t step = 0; step < n; ++step) {
    const std::size_t index = (static_cast<std::size_t>(round) + step) % n;
    if (!record.failures[index].empty()) continue;
    Evaluation evaluation = measure(index, with_energy);
    if (evaluation.ok() && evaluation.time.median_ms > 0) {
      record.round_ms[index].push_back(evaluation.time.median_ms);
      if (with_energy) ++record.energy_asked[index];
      if (evaluation.energy_mj > 0) record.round_energy_mj[index].push_back(evaluation.energy_mj);
    } else {
      record.failures[index] = fmt::format("round {}: {}{}", round + 1, status_name(evaluation.status),
                                           evaluation.message.empty() ? "" : ": " + evaluation.message);
    }
    if (measured) measured(round, index);
  }
}

// The figures of each candidate; energy only where every round that asked for it measured it.
std::vector<FinalFigures> summarise_record(const RoundRecord& record) {
  std::vector<FinalFigures> figures;
  for (std::size_t index = 0; index < record.round_ms.size(); ++index) {
    FinalFigures summary = summarise_rounds(record.round_ms[index]);
    if (record.energy_asked[index] > 0 && record.round_energy_mj[index].size() == record.energy_asked[index]) {
      const auto [mean, half_width] = mean_and_half_width(record.round_energy_mj[index]);
      summary.round_energy_mj = record.round_energy_mj[index];
      summary.energy_mj = mean;
      summary.energy_low_mj = mean - half_width;
      summary.energy_high_mj = mean + half_width;
    }
    if (!record.failures[index].empty()) {
      summary.complete = false;
      summary.failure = record.failures[index];
    }
    figures.push_back(std::move(summary));
  }
  return figures;
}

// The standard error of a candidate's mean, from its 95% half width and round count.
double standard_error(const FinalFigures& figures) {
  const std::size_t n = figures.round_ms.size();
  const double half_width = (figures.high_ms - figures.low_ms) / 2;
  return n > 1 ? half_width / t_quantile_95(n - 1) : 0;
}

}  // namespace

std::vector<FinalFigures> run_final_round(std::size_t candidates, int rounds,
                                          const std::function<Evaluation(std::size_t candidate, bool with_energy)>& measure,
                                          const std::function<void(int round, std::size_t candidate)>& measured,
                                          int energy_rounds) {
  const int first_energy_round = rounds - std::clamp(energy_rounds, 0, rounds);
  RoundRecord record(candidates);
  for (int round = 0; round < rounds && candidates > 0; ++round)
    measure_round(record, round, round >= first_energy_round, measure, measured);
  return summarise_record(record);
}

void decide_final_round(const std::vector<FinalFigures>& figures, const FinalRoundPlan& plan, FinalRoundOutcome& outcome) {
  outcome.stopped_because.clear();
  outcome.leader = outcome.runner_up = -1;
  outcome.confidence = 0;
  outcome.worst_regret = 0;
  std::vector<int> contenders;
  for (std::size_t index = 0; index < figures.size(); ++index) {
    const bool contends = plan.contends.empty() || (index < plan.contends.size() && plan.contends[index]);
    if (contends && figures[index].complete) contenders.push_back(static_cast<int>(index));
  }
  std::stable_sort(contenders.begin(), contenders.end(),
                   [&](int a, int b) { return figures[static_cast<std::size_t>(a)].mean_ms < figures[static_cast<std::size_t>(b)].mean_ms; });
  if (contenders.empty()) return;
  outcome.leader = contenders.front();
  const FinalFigures& leader = figures[static_cast<std::size_t>(outcome.leader)];
  if (contenders.size() == 1) {
    outcome.confidence = 1;
    outcome.stopped_because = "single contender";
    return;
  }
  outcome.runner_up = contenders[1];
  const FinalFigures& runner_up = figures[static_cast<std::size_t>(outcome.runner_up)];
  const double spread = std::hypot(standard_error(leader), standard_error(runner_up));
  const double gap = runner_up.mean_ms - leader.mean_ms;
  outcome.confidence = spread > 0 ? 0.5 * std::erfc(-gap / spread / std::sqrt(2.0)) : (gap > 0 ? 1.0 : 0.5);
  bool all_separated = true;
  bool all_decided = true;
  for (std::size_t rank = 1; rank < contenders.size(); ++rank) {
    const FinalFigures& other = figures[static_cast<std::size_t>(contenders[rank])];
    const double regret = std::max(0.0, (leader.high_ms - other.low_ms) / leader.mean_ms);
    outcome.worst_regret = std::max(outcome.worst_regret, regret);
    const bool separated = faster_beyond_noise(leader, other);
    all_separated = all_separated && separated;
    all_decided = all_decided && (separated || regret <= plan.tolerance);
  }
  if (all_separated) outcome.stopped_because = "separated";
  else if (all_decided) outcome.stopped_because = "within tolerance";
}

FinalRoundOutcome run_final_round_sized(std::size_t candidates, const FinalRoundPlan& plan,
                                        const std::function<Evaluation(std::size_t candidate, bool with_energy)>& measure,
                                        const std::function<void(int round, std::size_t candidate)>& measured) {
  FinalRoundOutcome outcome;
  RoundRecord record(candidates);
  const int min_rounds = std::max(plan.min_rounds, 2);  // one round has no interval
  const int max_rounds = std::max(plan.max_rounds, min_rounds);
  for (int round = 0; round < max_rounds && candidates > 0; ++round) {
    measure_round(record, round, plan.energy_every_round, measure, measured);
    outcome.rounds = round + 1;
    if (outcome.rounds < min_rounds) continue;
    outcome.figures = summarise_record(record);
    decide_final_round(outcome.figures, plan, outcome);
    if (!outcome.stopped_because.empty()) return outcome;
  }
  outcome.figures = summarise_record(record);
  decide_final_round(outcome.figures, plan, outcome);
  if (outcome.stopped_because.empty()) outcome.stopped_because = "cap";
  return outcome;
}

}  // namespace kernlathe
