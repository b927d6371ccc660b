// replay_search and the strategy benchmark on a 12-configuration landscape whose every number is known.
#include "tuner/search/benchmark.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kernlathe {
namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

Space grid_space() {
  Space space;
  for (const char* name : {"X", "Y"}) {
    Parameter parameter;
    parameter.name = name;
    for (std::int64_t value = 1; value <= (std::string(name) == "X" ? 4 : 3); ++value)
      parameter.values.emplace_back(value);
    parameter.default_value = parameter.values.front();
    space.parameters.push_back(parameter);
  }
  return space;
}

// Valid index i takes 12 - i ms (the exhaustive order keeps improving), compiles in 100 ms and was timed twice;
// index 5 failed to compile and index 11 was never recorded. Optimum: index 10, 2 ms.
ReplaySource grid_source(const SpaceEnumerator& space) {
  std::vector<Evaluation> evaluations;
  for (std::uint64_t index = 0; index < 11; ++index) {
    Evaluation evaluation;
    evaluation.configuration = space.at(index);
    evaluation.compile_ms = 100;
    if (index == 5) {
      evaluation.status = Status::compile_error;
    } else {
      evaluation.time.median_ms = 12.0 - static_cast<double>(index);
      evaluation.time.samples = 2;
    }
    evaluations.push_back(evaluation);
  }
  return ReplaySource(std::move(evaluations));
}

TEST(Replay, ExhaustiveOverARecordedLandscapeGivesExactNumbers) {
  Space space = grid_space();
  SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 12u);
  ReplaySource source = grid_source(enumerator);
  EXPECT_DOUBLE_EQ(source.optimum_ms(), 2.0);
  std::unique_ptr<Strategy> strategy = make_strategy("exhaustive", enumerator, 1);
  StopCondition stop;
  stop.max_evaluations = 20;
  ReplayResult result = replay_search(*strategy, source, stop, 4);
  EXPECT_EQ(result.evaluations, 12u);
  EXPECT_EQ(result.missing, 1u);
  ASSERT_TRUE(result.best_time_ms.has_value());
  EXPECT_DOUBLE_EQ(*result.best_time_ms, 2.0);
  EXPECT_EQ(*result.best_configuration, enumerator.at(10));
  EXPECT_EQ(result.evaluations_to_within_5_percent, 11u);
  EXPECT_EQ(result.evaluations_to_within_10_percent, 11u);
  // 11 compiles of 100 ms, plus 2 samples of 12, 11, ..., 2 ms without the failed 7 ms: 1.1 s + 0.14 s.
  EXPECT_NEAR(result.simulated_seconds, 1.24, 1e-12);
  EXPECT_EQ(result.stop_reason, "strategy exhausted");
}

TEST(Benchmark, RowsPerStrategyAndBudgetFromOneRunPerSeed) {
  Space space = grid_space();
  SpaceEnumerator enumerator(space, {});
  ReplaySource source = grid_source(enumerator);
  std::vector<BenchmarkRow> rows = run_benchmark(enumerator, source, {"exhaustive"}, 3, {5, 12});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].strategy, "exhaustive");
  EXPECT_EQ(rows[0].budget, 5u);
  EXPECT_EQ(rows[0].seeds, 3);
  EXPECT_DOUBLE_EQ(rows[0].median_best_over_optimum, 8.0 / 2.0);
  EXPECT_FALSE(rows[0].median_evaluations_to_within_5_percent.has_value());
  EXPECT_DOUBLE_EQ(rows[0].median_failures, 0);
  EXPECT_DOUBLE_EQ(rows[1].median_best_over_optimum, 1.0);
  EXPECT_EQ(rows[1].median_evaluations_to_within_5_percent, 11.0);
  EXPECT_EQ(rows[1].median_evaluations_to_within_10_percent, 11.0);
  EXPECT_DOUBLE_EQ(rows[1].median_failures, 2);  // the compile error and the unrecorded configuration
  EXPECT_NEAR(rows[1].median_simulated_seconds, 1.24, 1e-12);
}

TEST(Benchmark, NoSuccessfulRecordIsAnInputError) {
  Space space = grid_space();
  SpaceEnumerator enumerator(space, {});
  ReplaySource empty(std::vector<Evaluation>{});
  EXPECT_THROW(run_benchmark(enumerator, empty, {"random"}, 1, {5}), InputError);
}

TEST(Benchmark, MedianAndQuantilesKeepUnreachedSeedsAsInfinity) {
  EXPECT_EQ(median_of({3, 1, 2}), 2);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median_of({1, infinity, infinity}), infinity);
  EXPECT_EQ(median_of({1, 2, infinity}), 2);
  EXPECT_EQ(quantile_of({5, 1, 4, 2, 3}, 0.25), 2);
  EXPECT_EQ(quantile_of({1, 2, 3, 4}, 0.25), 1.75);
  EXPECT_EQ(quantile_of({1, 2, 3, infinity}, 0.75), infinity);
}

}  // namespace
}  // namespace kernlathe
