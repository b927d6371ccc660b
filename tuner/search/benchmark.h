#pragma once
// The strategy benchmark of `tune replay`: every strategy runs once per seed against recorded data, and the
// distribution over seeds of what it found is summarised per evaluation budget.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuner/search/replay.h"

namespace kernlathe {

struct BenchmarkRow {
  std::string strategy;
  std::uint64_t budget = 0;
  int seeds = 0;
  // best time found within the budget / optimum of the data; +infinity for a seed that found nothing ok.
  double median_best_over_optimum = 0;
  double lower_quartile_best_over_optimum = 0;
  double upper_quartile_best_over_optimum = 0;
  // Evaluations until the best came within 5% (10%) of the optimum; nullopt when the median seed did not get
  // there within the budget.
  std::optional<double> median_evaluations_to_within_5_percent;
  std::optional<double> median_evaluations_to_within_10_percent;
  double median_failures = 0;           // evaluations that failed (or were not recorded), median over seeds
  double median_simulated_seconds = 0;  // recorded compile + run time of the evaluations within the budget
};

// Seeds 1..seeds. Each (strategy, seed) runs once up to the largest budget, asking `batch` configurations at a
// time; a smaller budget reads the same run's first evaluations, which is exactly a run with that budget when
// batch is 1 (a strategy is deterministic for its seed). budgets must be positive. With transfers (a prior's
// configurations, tuner/search/prior.h), every strategy runs as a PriorStrategy over them.
std::vector<BenchmarkRow> run_benchmark(const SpaceEnumerator& space, const ReplaySource& source,
                                        const std::vector<std::string>& strategies, int seeds,
                                        const std::vector<std::uint64_t>& budgets, std::size_t batch = 1,
                                        const std::vector<Configuration>& transfers = {});

// Middle value of values (mean of the two middle ones for an even count; infinity stays infinity).
double median_of(std::vector<double> values);
// Linear interpolation between order statistics, fraction in [0, 1].
double quantile_of(std::vector<double> values, double fraction);

}  // namespace kernlathe
