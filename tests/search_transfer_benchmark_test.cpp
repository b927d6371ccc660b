#include "tuner/search/transfer_benchmark.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

Space line_space(std::int64_t count) {
  Parameter parameter;
  parameter.name = "X";
  parameter.type = ParameterType::integer;
  for (std::int64_t value = 0; value < count; ++value) parameter.values.emplace_back(value);
  parameter.default_value = parameter.values.front();
  Space space;
  space.parameters = {parameter};
  return space;
}

std::vector<Evaluation> line_recording(std::int64_t count, std::int64_t optimum, double scale) {
  std::vector<Evaluation> evaluations;
  for (std::int64_t value = 0; value < count; ++value) {
    Evaluation evaluation;
    evaluation.configuration = {Value{value}};
    evaluation.time.median_ms = scale * (1.0 + 0.1 * static_cast<double>(std::abs(value - optimum)));
    evaluations.push_back(std::move(evaluation));
  }
  return evaluations;
}

TEST(GeometricMean, OfRatiosAndInfinityWhenOneIsMissing) {
  EXPECT_NEAR(geometric_mean({1.0, 4.0}), 2.0, 1e-12);
  EXPECT_NEAR(geometric_mean({1.21, 1.0, 1.0}), std::pow(1.21, 1.0 / 3), 1e-12);
  EXPECT_TRUE(std::isinf(geometric_mean({1.0, std::numeric_limits<double>::infinity()})));
  EXPECT_TRUE(std::isinf(geometric_mean({})));
}

TEST(WorseBeyondNoise, NeedsADifferenceAboveTwiceTheStandardErrorAndOnePercent) {
  EXPECT_FALSE(worse_beyond_noise({1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}));
  EXPECT_TRUE(worse_beyond_noise({1.10, 1.10, 1.10}, {1.0, 1.0, 1.0}));
  EXPECT_FALSE(worse_beyond_noise({1.008, 1.008, 1.008}, {1.0, 1.0, 1.0}));  // below one percent
  EXPECT_TRUE(worse_beyond_noise({1.012, 1.012, 1.012}, {1.0, 1.0, 1.0}));
  // 1.2 on one seed of four, the others equal: within the noise of four seeds.
  EXPECT_FALSE(worse_beyond_noise({1.2, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}));
  EXPECT_FALSE(worse_beyond_noise({1.0, 1.0}, {1.5, 1.5}));  // better is never worse
}

TEST(BestOverOptimumCurve, IsTheRunningBestAndTheLastFigureStandsWhenTheSpaceRunsOut) {
  const Space space = line_space(4);
  const SpaceEnumerator enumerator(space, Constants{});
  const ReplaySource source(line_recording(4, 2, 1.0), enumerator);
  std::unique_ptr<Strategy> exhaustive = make_strategy("exhaustive", enumerator, 1);
  const std::vector<double> curve = best_over_optimum_curve(*exhaustive, source, 6);
  ASSERT_EQ(curve.size(), 6u);
  EXPECT_NEAR(curve[0], 1.2, 1e-12);  // X = 0
  EXPECT_NEAR(curve[1], 1.1, 1e-12);  // X = 1
  EXPECT_NEAR(curve[2], 1.0, 1e-12);  // X = 2
  EXPECT_NEAR(curve[5], 1.0, 1e-12);
}

TEST(TransferBenchmark, EachLandscapeIsTheTargetOnceWithTheOthersAsPrior) {
  const Space space = line_space(40);
  const SpaceEnumerator enumerator(space, Constants{});
  // Three GPUs with one optimum, X = 31: the prior's first transfer is the target's optimum.
  const std::vector<TransferLandscape> landscapes = {
      {"one", line_recording(40, 31, 1.0)}, {"two", line_recording(40, 31, 2.0)}, {"three", line_recording(40, 31, 0.5)}};
  const std::vector<TransferCase> cases = run_transfer_benchmark(enumerator, landscapes, "random", 3, {1, 5});
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[1].target, "two");
  for (const TransferCase& result : cases) {
    EXPECT_EQ(result.prior_sources, 2u);
    EXPECT_DOUBLE_EQ(result.top_transfer_over_optimum, 1.0);
    ASSERT_EQ(result.with_prior.size(), 2u);
    ASSERT_EQ(result.with_prior[0].size(), 3u);
    for (double ratio : result.with_prior[0]) EXPECT_DOUBLE_EQ(ratio, 1.0);
    EXPECT_GT(geometric_mean(result.without_prior[0]), 1.0);  // random's first pick is rarely X = 31
  }
}

TEST(TransferBenchmark, FirstSeedStartsTheSeedsElsewhere) {
  const Space space = line_space(40);
  const SpaceEnumerator enumerator(space, Constants{});
  // A prior whose optimum is elsewhere (X = 5 against 31), so the runs depend on the seed with the prior too.
  const std::vector<TransferLandscape> landscapes = {{"one", line_recording(40, 31, 1.0)},
                                                     {"two", line_recording(40, 5, 1.0)}};
  const std::vector<TransferCase> from_one = run_transfer_benchmark(enumerator, landscapes, "random", 4, {3, 10});
  const std::vector<TransferCase> from_three =
      run_transfer_benchmark(enumerator, landscapes, "random", 2, {3, 10}, PriorSettings{}, 3);
  ASSERT_EQ(from_three.size(), 2u);
  for (std::size_t target = 0; target < 2; ++target)
    for (std::size_t budget = 0; budget < 2; ++budget) {
      // Seeds 3 and 4 of the first run are the second run's two.
      ASSERT_EQ(from_three[target].with_prior[budget].size(), 2u);
      for (std::size_t seed = 0; seed < 2; ++seed) {
        EXPECT_EQ(from_three[target].with_prior[budget][seed], from_one[target].with_prior[budget][seed + 2]);
        EXPECT_EQ(from_three[target].without_prior[budget][seed], from_one[target].without_prior[budget][seed + 2]);
      }
    }
  EXPECT_NE(from_one[0].without_prior[0][0], from_one[0].without_prior[0][2]);  // the seeds do differ
}

}  // namespace
}  // namespace kernlathe
