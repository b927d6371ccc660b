// Functional ANOVA on the random forest: exact shares on an additive grid, synthetic landscapes whose important
// parameters and interacting pair are known, bootstrap intervals, determinism, and what is left out.
#include "tuner/analysis/importance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace kernlathe {
namespace {

struct Landscape {
  std::vector<std::string> names;
  std::vector<std::vector<double>> features;
  std::vector<double> times;
};

// Every combination of `levels` values (0 .. levels-1) of `parameters` parameters, timed by log_time.
template <typename LogTime>
Landscape full_grid(int parameters, int levels, LogTime log_time) {
  Landscape landscape;
  for (int p = 0; p < parameters; ++p) landscape.names.push_back("P" + std::to_string(p));
  const int count = static_cast<int>(std::pow(levels, parameters));
  for (int index = 0; index < count; ++index) {
    std::vector<double> point;
    for (int p = 0, rest = index; p < parameters; ++p, rest /= levels) point.push_back(rest % levels);
    landscape.times.push_back(std::exp(log_time(point)));
    landscape.features.push_back(std::move(point));
  }
  return landscape;
}

const ParameterImportance& importance_of(const ImportanceResult& result, const std::string& name) {
  auto found = std::find_if(result.parameters.begin(), result.parameters.end(),
                            [&](const ParameterImportance& parameter) { return parameter.parameter == name; });
  EXPECT_NE(found, result.parameters.end()) << name;
  return *found;
}

TEST(FunctionalAnova, ExactSharesOfAnAdditiveFunctionOnItsGrid) {
  // f = x0 + 2 x1 on {0..3}^2, fitted exactly (every tree sees every point and may cut anywhere): Var(x0) = 1.25,
  // Var(2 x1) = 5, so the shares are 0.2 and 0.8 and the pair has none.
  std::vector<std::vector<double>> samples;
  std::vector<double> targets;
  for (int x0 = 0; x0 < 4; ++x0)
    for (int x1 = 0; x1 < 4; ++x1) {
      samples.push_back({static_cast<double>(x0), static_cast<double>(x1)});
      targets.push_back(x0 + 2.0 * x1);
    }
  ForestOptions options;
  options.trees = 3;
  options.minimum_leaf_size = 1;
  options.feature_fraction = 1.0;
  options.bootstrap = false;
  RegressionForest forest;
  std::mt19937_64 random(5);
  forest.fit(samples, targets, options, random);
  const VarianceDecomposition decomposition = decompose_forest(forest, {{0, 1, 2, 3}, {0, 1, 2, 3}}, 1);
  EXPECT_NEAR(decomposition.mean, 1.5 + 3.0, 1e-12);
  EXPECT_NEAR(decomposition.variance, 6.25, 1e-12);
  EXPECT_NEAR(decomposition.main[0], 0.2, 1e-12);
  EXPECT_NEAR(decomposition.main[1], 0.8, 1e-12);
  EXPECT_NEAR(decomposition.pair[0][1], 0.0, 1e-12);
}

TEST(FunctionalAnova, ExactShareOfAProductOnItsGrid) {
  // x0 * x1 with x0, x1 in {-1, 1} has no main effect at all: everything is the pair's.
  // A greedy tree finds no first cut in an exact XOR (neither half differs on average), so the forest is fitted to
  // a version tilted by a small main effect of x0, f = x0 * x1 + 0.1 x0, which the decomposition must find too.
  std::vector<std::vector<double>> samples = {{-1, -1}, {-1, 1}, {1, -1}, {1, 1}};
  std::vector<double> targets = {1 - 0.1, -1 - 0.1, -1 + 0.1, 1 + 0.1};
  ForestOptions options;
  options.trees = 1;
  options.minimum_leaf_size = 1;
  options.feature_fraction = 1.0;
  options.bootstrap = false;
  RegressionForest forest;
  std::mt19937_64 random(5);
  forest.fit(samples, targets, options, random);
  const VarianceDecomposition decomposition = decompose_forest(forest, {{-1, 1}, {-1, 1}}, 1);
  EXPECT_NEAR(decomposition.variance, 1.01, 1e-12);
  EXPECT_NEAR(decomposition.main[0], 0.01 / 1.01, 1e-12);
  EXPECT_NEAR(decomposition.main[1], 0.0, 1e-12);
  EXPECT_NEAR(decomposition.pair[0][1], 1.0 / 1.01, 1e-12);
}

TEST(ParameterImportance, TwoOfEightParametersMatterAndRankFirst) {
  // 1500 configurations drawn from {0..3}^8 with 2% noise; only P2 and P5 change the time.
  Landscape landscape;
  for (int p = 0; p < 8; ++p) landscape.names.push_back("P" + std::to_string(p));
  std::mt19937_64 random(11);
  std::normal_distribution<double> noise(0, 0.02);
  for (int i = 0; i < 1500; ++i) {
    std::vector<double> point;
    for (int p = 0; p < 8; ++p) point.push_back(static_cast<double>(random() % 4));
    landscape.times.push_back(std::exp(0.5 * point[2] + 0.9 * (point[5] == 1 ? 1.0 : 0.0) + noise(random)));
    landscape.features.push_back(std::move(point));
  }
  ImportanceOptions options;
  options.resamples = 16;
  const ImportanceResult result = analyse_importance(landscape.names, landscape.features, landscape.times, options);
  ASSERT_TRUE(result.not_computed.empty()) << result.not_computed;
  ASSERT_EQ(result.parameters.size(), 8u);
  EXPECT_EQ(result.interactions.size(), 28u);  // every pair
  EXPECT_EQ(result.resamples, 16);
  EXPECT_EQ(result.samples, 1500u);
  std::vector<std::string> top = {result.parameters[0].parameter, result.parameters[1].parameter};
  std::sort(top.begin(), top.end());
  EXPECT_EQ(top, (std::vector<std::string>{"P2", "P5"}));
  double noise_high = 0;
  for (std::size_t i = 2; i < result.parameters.size(); ++i) {
    EXPECT_LT(result.parameters[i].main_effect.mean, 0.01) << result.parameters[i].parameter;
    noise_high = std::max(noise_high, result.parameters[i].main_effect.high);
  }
  // Clearly above: each of the two intervals lies far above every other parameter's interval.
  for (const char* name : {"P2", "P5"}) {
    const ParameterImportance& parameter = importance_of(result, name);
    EXPECT_GT(parameter.main_effect.low, 0.15) << name;
    EXPECT_GT(parameter.main_effect.low, 10 * noise_high) << name;
    EXPECT_LE(parameter.main_effect.low, parameter.main_effect.mean);
    EXPECT_LE(parameter.main_effect.mean, parameter.main_effect.high);
  }
  // Var(0.5 P2) = 0.3125 and Var(0.9 [P5 == 1]) = 0.1519 over the product: shares 0.67 and 0.33 of what the two
  // explain together (the noise adds little).
  EXPECT_NEAR(importance_of(result, "P2").main_effect.mean, 0.67, 0.05);
  EXPECT_NEAR(importance_of(result, "P5").main_effect.mean, 0.33, 0.05);
  EXPECT_GT(result.explained.mean, 0.95);
}

TEST(ParameterImportance, InteractingPairIsTheStrongestInteraction) {
  // log time = 0.2 P0 + 0.2 P1 + 0.6 (P0 - 1.5)(P1 - 1.5) + 0.5 P3 on {0..3}^5: P3 has a large main effect and no
  // interaction, P0 and P1 interact.
  const Landscape landscape = full_grid(5, 4, [](const std::vector<double>& x) {
    return 0.2 * x[0] + 0.2 * x[1] + 0.6 * (x[0] - 1.5) * (x[1] - 1.5) + 0.5 * x[3];
  });
  ImportanceOptions options;
  options.resamples = 12;
  const ImportanceResult result = analyse_importance(landscape.names, landscape.features, landscape.times, options);
  ASSERT_GE(result.interactions.size(), 2u);
  EXPECT_EQ(result.interactions[0].first, "P0");
  EXPECT_EQ(result.interactions[0].second, "P1");
  // On the grid the terms are orthogonal: Var(0.6 (P0-1.5)(P1-1.5)) = 0.36 * 1.25^2 = 0.5625 of a total
  // 2 * 0.04 * 1.25 + 0.5625 + 0.25 * 1.25 = 0.975, a share of 0.577; every other pair has none.
  EXPECT_NEAR(result.interactions[0].share.mean, 0.577, 0.08);
  EXPECT_GT(result.interactions[0].share.low, 10 * result.interactions[1].share.high);
  EXPECT_EQ(result.parameters[0].parameter, "P3");
  EXPECT_NEAR(result.parameters[0].main_effect.mean, 0.3125 / 0.975, 0.05);
}

TEST(ParameterImportance, XorPatternShowsAsInteraction) {
  // Time doubles where exactly one of P1 >= 2 and P4 >= 2 holds; P0 adds a small main effect.
  const Landscape landscape = full_grid(6, 4, [](const std::vector<double>& x) {
    return std::log(2.0) * ((x[1] >= 2) != (x[4] >= 2) ? 1 : 0) + 0.05 * x[0];
  });
  ImportanceOptions options;
  options.resamples = 12;
  const ImportanceResult result = analyse_importance(landscape.names, landscape.features, landscape.times, options);
  ASSERT_FALSE(result.interactions.empty());
  EXPECT_EQ(result.interactions[0].first, "P1");
  EXPECT_EQ(result.interactions[0].second, "P4");
  EXPECT_GT(result.interactions[0].share.mean, 0.8);
  EXPECT_GT(result.interactions[0].share.mean, 20 * result.interactions[1].share.mean);
}

TEST(ParameterImportance, SameSeedSameFiguresWhateverTheThreads) {
  const Landscape landscape = full_grid(3, 4, [](const std::vector<double>& x) { return 0.3 * x[0] + 0.1 * x[1] * x[2]; });
  ImportanceOptions one_thread;
  one_thread.resamples = 6;
  one_thread.threads = 1;
  ImportanceOptions three_threads = one_thread;
  three_threads.threads = 3;
  const ImportanceResult first = analyse_importance(landscape.names, landscape.features, landscape.times, one_thread);
  const ImportanceResult second = analyse_importance(landscape.names, landscape.features, landscape.times, three_threads);
  ASSERT_EQ(first.parameters.size(), second.parameters.size());
  for (std::size_t i = 0; i < first.parameters.size(); ++i) {
    EXPECT_EQ(first.parameters[i].parameter, second.parameters[i].parameter);
    EXPECT_EQ(first.parameters[i].main_effect.mean, second.parameters[i].main_effect.mean);
    EXPECT_EQ(first.parameters[i].main_effect.low, second.parameters[i].main_effect.low);
  }
  ImportanceOptions other_seed = one_thread;
  other_seed.seed = 2;
  const ImportanceResult third = analyse_importance(landscape.names, landscape.features, landscape.times, other_seed);
  EXPECT_NE(first.parameters[0].main_effect.low, third.parameters[0].main_effect.low);
}

TEST(ParameterImportance, ConstantParametersAndTooFewConfigurationsAreSaidSo) {
  Landscape landscape = full_grid(2, 3, [](const std::vector<double>& x) { return x[0]; });
  for (auto& point : landscape.features) point.push_back(7);  // P2 takes one value only
  landscape.names.push_back("P2");
  ImportanceOptions options;
  options.resamples = 4;
  const ImportanceResult result = analyse_importance(landscape.names, landscape.features, landscape.times, options);
  EXPECT_EQ(result.constant_parameters, std::vector<std::string>{"P2"});
  EXPECT_EQ(result.parameters.size(), 2u);
  EXPECT_EQ(result.parameters[0].parameter, "P0");

  landscape.features.resize(5);
  landscape.times.resize(5);
  const ImportanceResult few = analyse_importance(landscape.names, landscape.features, landscape.times, options);
  EXPECT_TRUE(few.parameters.empty());
  EXPECT_NE(few.not_computed.find("5 valid configurations"), std::string::npos) << few.not_computed;
}

}  // namespace
}  // namespace kernlathe
