// The random forest behind the surrogate strategy, the features it is given, and the strategy's batches.
#include "tuner/search/surrogate.h"

#include <gtest/gtest.h>

#include <set>

#include "tuner/record/csv_record.h"
#include "tuner/search/regression_forest.h"

namespace tuner {
namespace {

ForestOptions exact_options() {
  ForestOptions options;
  options.trees = 4;
  options.minimum_leaf_size = 1;
  options.feature_fraction = 1.0;
  options.bootstrap = false;
  return options;
}

TEST(RegressionForest, LearnsAStepOnTheFeatureThatCarriesIt) {
  // Target 1 below x0 = 5 and 3 above; x1 is noise that must not be split on when x0 explains everything.
  std::vector<std::vector<double>> samples;
  std::vector<double> targets;
  for (int x = 0; x < 10; ++x) {
    samples.push_back({static_cast<double>(x), static_cast<double>((x * 7) % 10)});
    targets.push_back(x < 5 ? 1.0 : 3.0);
  }
  RegressionForest forest;
  std::mt19937_64 random(1);
  forest.fit(samples, targets, exact_options(), random);
  EXPECT_EQ(forest.tree_count(), 4u);
  ForestPrediction low = forest.predict({2.0, 9.0});
  ForestPrediction high = forest.predict({8.5, 0.0});
  EXPECT_DOUBLE_EQ(low.mean, 1.0);
  EXPECT_DOUBLE_EQ(low.spread, 0.0);
  EXPECT_DOUBLE_EQ(high.mean, 3.0);
  // The cut lies halfway between the last low and the first high sample.
  EXPECT_DOUBLE_EQ(forest.predict({4.49, 0.0}).mean, 1.0);
  EXPECT_DOUBLE_EQ(forest.predict({4.51, 0.0}).mean, 3.0);
}

TEST(RegressionForest, MinimumLeafSizeAveragesAndBootstrapGivesSpread) {
  std::vector<std::vector<double>> samples = {{0}, {1}, {2}, {3}};
  std::vector<double> targets = {0, 10, 20, 30};
  ForestOptions options = exact_options();
  options.minimum_leaf_size = 2;
  RegressionForest forest;
  std::mt19937_64 random(1);
  forest.fit(samples, targets, options, random);
  // Leaves of two samples: {0, 10} and {20, 30}.
  EXPECT_DOUBLE_EQ(forest.predict({0}).mean, 5.0);
  EXPECT_DOUBLE_EQ(forest.predict({3}).mean, 25.0);

  options.bootstrap = true;
  options.minimum_leaf_size = 1;
  options.trees = 64;
  forest.fit(samples, targets, options, random);
  ForestPrediction between = forest.predict({1.5});
  EXPECT_GT(between.spread, 1.0);  // resamples disagree on where the cuts fall
  EXPECT_GT(between.mean, 5.0);
  EXPECT_LT(between.mean, 25.0);
}

TEST(RegressionForest, SameGeneratorStateSamePredictionsAndEmptyFitPredictsZero) {
  std::vector<std::vector<double>> samples;
  std::vector<double> targets;
  for (int i = 0; i < 40; ++i) {
    samples.push_back({static_cast<double>(i % 7), static_cast<double>(i % 5), static_cast<double>(i % 3)});
    targets.push_back(static_cast<double>((i % 7) * (i % 5)) + 0.1 * (i % 3));
  }
  ForestOptions options;
  RegressionForest first, second;
  std::mt19937_64 random_first(9), random_second(9);
  first.fit(samples, targets, options, random_first);
  second.fit(samples, targets, options, random_second);
  for (int i = 0; i < 10; ++i) {
    std::vector<double> point = {i * 0.7, i * 0.5, i * 0.3};
    EXPECT_EQ(first.predict(point).mean, second.predict(point).mean);
    EXPECT_EQ(first.predict(point).spread, second.predict(point).spread);
  }
  RegressionForest empty;
  std::mt19937_64 random(1);
  empty.fit({}, {}, options, random);
  EXPECT_EQ(empty.predict({1, 2, 3}).mean, 0.0);
  EXPECT_EQ(empty.predict({1, 2, 3}).spread, 0.0);
}

Parameter parameter_of(const std::string& name, std::vector<Value> values, ParameterType type) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = type;
  parameter.values = std::move(values);
  parameter.default_value = parameter.values.front();
  return parameter;
}

TEST(SurrogateStrategy, FeaturesAreValuesPowerOfTwoFlagsProductsAndDerivedValues) {
  Space space;
  space.parameters = {
      parameter_of("BLOCK", {Value{std::int64_t{16}}, Value{std::int64_t{32}}, Value{std::int64_t{48}}},
                   ParameterType::integer),
      parameter_of("ITEMS", {Value{std::int64_t{1}}, Value{std::int64_t{2}}}, ParameterType::integer),
      parameter_of("FIXED", {Value{std::int64_t{7}}}, ParameterType::integer),
      parameter_of("ORDER", {Value{std::string("row")}, Value{std::string("column")}}, ParameterType::enumeration),
      parameter_of("SHMEM", {Value{false}, Value{true}}, ParameterType::boolean),
  };
  space.derived = {DerivedValue{"HALF", Expression::parse("BLOCK // 2")}};
  SpaceEnumerator enumerator(space, {});
  SurrogateStrategy strategy(enumerator, 1);
  Configuration configuration = {Value{std::int64_t{48}}, Value{std::int64_t{2}}, Value{std::int64_t{7}},
                                 Value{std::string("column")}, Value{true}};
  // BLOCK, ITEMS, ORDER's position, SHMEM; BLOCK is a power of two (no: 48); ITEMS has only powers of two, so
  // no flag; BLOCK * ITEMS (FIXED has one value and is left out); derived HALF.
  EXPECT_EQ(strategy.features(configuration), (std::vector<double>{48, 2, 1, 1, 0, 96, 24}));
  configuration[0] = Value{std::int64_t{32}};
  EXPECT_EQ(strategy.features(configuration), (std::vector<double>{32, 2, 1, 1, 1, 64, 16}));
}

TEST(SurrogateStrategy, HonoursTheBatchSizeAskedFor) {
  Space space;
  std::vector<Value> values;
  for (std::int64_t v = 1; v <= 12; ++v) values.emplace_back(v);
  space.parameters = {parameter_of("X", values, ParameterType::integer),
                      parameter_of("Y", values, ParameterType::integer)};
  SpaceEnumerator enumerator(space, {});
  SurrogateStrategy strategy(enumerator, 5);
  std::set<std::string> seen;
  std::size_t total = 0;
  for (std::size_t batch : {3u, 8u, 1u, 16u, 5u, 80u}) {
    std::vector<Configuration> proposals = strategy.ask(batch);
    ASSERT_EQ(proposals.size(), batch);  // 144 valid configurations: never short before 113 proposals
    for (const Configuration& configuration : proposals) {
      EXPECT_TRUE(seen.insert(configuration_key(configuration)).second);
      Evaluation evaluation;
      evaluation.configuration = configuration;
      const double x = static_cast<double>(std::get<std::int64_t>(configuration[0]));
      const double y = static_cast<double>(std::get<std::int64_t>(configuration[1]));
      evaluation.time.median_ms = 1 + (x - 9) * (x - 9) + (y - 4) * (y - 4);
      strategy.tell(evaluation);
      ++total;
    }
  }
  EXPECT_EQ(total, 113u);
  EXPECT_EQ(strategy.ask(200).size(), 144u - 113u);
  EXPECT_TRUE(strategy.ask(1).empty());
}

}  // namespace
}  // namespace tuner
