#include "tuner/search/benchmark.h"

#include "tuner/search/prior.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kernlathe {
namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

// What one seed's run gives at each evaluation count.
struct Trajectory {
  std::vector<double> best_ms;            // best ok time after evaluation i + 1 (infinity before any)
  std::vector<double> simulated_seconds;  // cumulative recorded compile + run time
  std::vector<std::uint64_t> failures;    // cumulative failed evaluations
};

Trajectory trace(Strategy& strategy, const ReplaySource& source, std::uint64_t budget, std::size_t batch) {
  Trajectory trajectory;
  double best = infinity;
  double seconds = 0;
  std::uint64_t failures = 0;
  while (trajectory.best_ms.size() < budget) {
    std::size_t wanted = static_cast<std::size_t>(std::min<std::uint64_t>(batch, budget - trajectory.best_ms.size()));
    std::vector<Configuration> proposals = strategy.ask(wanted);
    if (proposals.empty()) break;
    for (const Configuration& configuration : proposals) {
      Evaluation evaluation = source.evaluate(configuration);
      seconds += simulated_seconds(evaluation);
      if (evaluation.ok() && evaluation.time.median_ms > 0)
        best = std::min(best, evaluation.time.median_ms);
      else
        ++failures;
      strategy.tell(evaluation);
      trajectory.best_ms.push_back(best);
      trajectory.simulated_seconds.push_back(seconds);
      trajectory.failures.push_back(failures);
      if (trajectory.best_ms.size() >= budget) break;
    }
  }
  return trajectory;
}

// 1-based evaluation count at which best came within factor of optimum, within budget; infinity otherwise.
double evaluations_to_within(const Trajectory& trajectory, double threshold_ms, std::uint64_t budget) {
  std::size_t limit = std::min<std::size_t>(trajectory.best_ms.size(), static_cast<std::size_t>(budget));
  for (std::size_t i = 0; i < limit; ++i)
    if (trajectory.best_ms[i] <= threshold_ms) return static_cast<double>(i + 1);
  return infinity;
}

template <typename T>
T at_budget(const std::vector<T>& values, std::uint64_t budget, T empty) {
  if (values.empty()) return empty;
  return values[std::min<std::size_t>(values.size(), static_cast<std::size_t>(budget)) - 1];
}

std::optional<double> finite(double value) {
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

}  // namespace

double median_of(std::vector<double> values) {
  if (values.empty()) return infinity;
  std::sort(values.begin(), values.end());
  std::size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return 0.5 * (values[middle - 1] + values[middle]);
}

double quantile_of(std::vector<double> values, double fraction) {
  if (values.empty()) return infinity;
  std::sort(values.begin(), values.end());
  double position = fraction * static_cast<double>(values.size() - 1);
  std::size_t below = static_cast<std::size_t>(std::floor(position));
  std::size_t above = std::min(below + 1, values.size() - 1);
  double weight = position - static_cast<double>(below);
  if (weight == 0) return values[below];
  if (!std::isfinite(values[above])) return values[above];
  return values[below] + weight * (values[above] - values[below]);
}

std::vector<BenchmarkRow> run_benchmark(const SpaceEnumerator& space, const ReplaySource& source,
                                        const std::vector<std::string>& strategies, int seeds,
                                        const std::vector<std::uint64_t>& budgets, std::size_t batch,
                                        const std::vector<Configuration>& transfers) {
  const double optimum = source.optimum_ms();
  if (!std::isfinite(optimum)) throw InputError("the recorded data holds no successful evaluation to compare with");
  if (budgets.empty() || seeds < 1) throw InputError("the benchmark needs at least one budget and one seed");
  const std::uint64_t largest_budget = *std::max_element(budgets.begin(), budgets.end());
  std::vector<BenchmarkRow> rows;
  for (const std::string& name : strategies) {
    std::vector<Trajectory> runs;
    for (int seed = 1; seed <= seeds; ++seed) {
      std::unique_ptr<Strategy> strategy =
          make_strategy_with_prior(name, space, static_cast<std::uint64_t>(seed), transfers);
      runs.push_back(trace(*strategy, source, largest_budget, std::max<std::size_t>(batch, 1)));
    }
    for (std::uint64_t budget : budgets) {
      std::vector<double> ratios, to_5, to_10, failures, seconds;
      for (const Trajectory& run : runs) {
        ratios.push_back(at_budget(run.best_ms, budget, infinity) / optimum);
        to_5.push_back(evaluations_to_within(run, optimum * 1.05, budget));
        to_10.push_back(evaluations_to_within(run, optimum * 1.10, budget));
        failures.push_back(static_cast<double>(at_budget<std::uint64_t>(run.failures, budget, 0)));
        seconds.push_back(at_budget(run.simulated_seconds, budget, 0.0));
      }
      BenchmarkRow row;
      row.strategy = name;
      row.budget = budget;
      row.seeds = seeds;
      row.median_best_over_optimum = median_of(ratios);
      row.lower_quartile_best_over_optimum = quantile_of(ratios, 0.25);
      row.upper_quartile_best_over_optimum = quantile_of(ratios, 0.75);
      row.median_evaluations_to_within_5_percent = finite(median_of(to_5));
      row.median_evaluations_to_within_10_percent = finite(median_of(to_10));
      row.median_failures = median_of(failures);
      row.median_simulated_seconds = median_of(seconds);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace kernlathe
