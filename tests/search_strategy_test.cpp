#include "tuner/search/strategy.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "tuner/record/csv_record.h"
#include "tuner/search/permutation.h"

namespace kernlathe {
namespace {

Parameter integer_parameter(const std::string& name, std::vector<std::int64_t> values) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::integer;
  for (std::int64_t value : values) parameter.values.emplace_back(value);
  parameter.default_value = parameter.values.front();
  return parameter;
}

std::vector<std::int64_t> range(std::int64_t count) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(count));
  std::iota(values.begin(), values.end(), 1);
  return values;
}

// 8 x 8 with A * B <= 16: 34 of 64 combinations are valid, so invalid ones would show up.
Space constrained_space() {
  Space space;
  space.name = "constrained";
  space.parameters = {integer_parameter("A", range(8)), integer_parameter("B", range(8))};
  space.constraints = {Constraint{Expression::parse("A * B <= 16")}};
  return space;
}

std::vector<Configuration> drain(Strategy& strategy, std::size_t batch) {
  std::vector<Configuration> proposed;
  while (true) {
    std::vector<Configuration> proposals = strategy.ask(batch);
    if (proposals.empty()) break;
    EXPECT_LE(proposals.size(), batch);
    for (Configuration& configuration : proposals) {
      Evaluation evaluation;
      evaluation.configuration = configuration;
      strategy.tell(evaluation);
      proposed.push_back(std::move(configuration));
    }
  }
  return proposed;
}

TEST(Strategy, EveryStrategyProposesCanonicalConfigurationsOnceInAConditionalSpace) {
  // B matters only when A > 4 (held at 1 otherwise): 4 + 4 * 8 = 36 configurations.
  Space space;
  space.parameters = {integer_parameter("A", range(8)), integer_parameter("B", range(8))};
  space.parameters[1].relevant_when = Expression::parse("A > 4");
  SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 36u);
  for (const std::string& name : strategy_names()) {
    std::unique_ptr<Strategy> strategy = make_strategy(name, enumerator, 3);
    std::set<std::uint64_t> seen;
    for (std::size_t step = 0; step < 36; ++step) {
      std::vector<Configuration> proposals = strategy->ask(1);
      ASSERT_EQ(proposals.size(), 1u) << name << " step " << step;
      const Configuration& configuration = proposals.front();
      EXPECT_EQ(enumerator.canonical(configuration), configuration) << name;
      EXPECT_TRUE(seen.insert(*enumerator.index_of(configuration)).second) << name;
      Evaluation evaluation;
      evaluation.configuration = configuration;
      const auto a = std::get<std::int64_t>(configuration[0]), b = std::get<std::int64_t>(configuration[1]);
      evaluation.time.median_ms = 1.0 + static_cast<double>((a - 6) * (a - 6) + (b - 3) * (b - 3));
      strategy->tell(evaluation);
    }
    EXPECT_TRUE(strategy->ask(1).empty()) << name;
  }
}

TEST(Strategy, NamesAndUnknownNameError) {
  EXPECT_EQ(strategy_names(), (std::vector<std::string>{"exhaustive", "random", "local", "annealing", "genetic",
                                                        "differential-evolution", "bayesian", "surrogate",
                                                        "portfolio"}));
  Space space = constrained_space();
  SpaceEnumerator enumerator(space, {});
  EXPECT_EQ(make_strategy("exhaustive", enumerator, 1)->name(), "exhaustive");
  EXPECT_EQ(make_strategy("random", enumerator, 1)->name(), "random");
  try {
    make_strategy("randon", enumerator, 1);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("'randon'"), std::string::npos) << message;
    EXPECT_NE(message.find("did you mean 'random'"), std::string::npos) << message;
    EXPECT_NE(message.find("exhaustive, random"), std::string::npos) << message;
  }
}

TEST(Strategy, ExhaustiveProposesEveryIndexOnceInOrder) {
  Space space = constrained_space();
  SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 34u);
  std::unique_ptr<Strategy> strategy = make_strategy("exhaustive", enumerator, 7);
  std::vector<Configuration> proposed = drain(*strategy, 5);
  ASSERT_EQ(proposed.size(), 34u);
  for (std::uint64_t index = 0; index < proposed.size(); ++index) {
    EXPECT_EQ(proposed[index], enumerator.at(index)) << index;
  }
  EXPECT_TRUE(strategy->ask(3).empty());
}

TEST(Strategy, RandomProposesEveryValidConfigurationOnceAndOnlyValidOnes) {
  Space space = constrained_space();
  SpaceEnumerator enumerator(space, {});
  std::unique_ptr<Strategy> strategy = make_strategy("random", enumerator, 42);
  std::vector<Configuration> proposed = drain(*strategy, 4);
  ASSERT_EQ(proposed.size(), 34u);
  std::set<std::uint64_t> indices;
  for (const Configuration& configuration : proposed) {
    ASSERT_TRUE(enumerator.is_valid(configuration)) << to_string(space, configuration);
    std::int64_t a = std::get<std::int64_t>(configuration[0]);
    std::int64_t b = std::get<std::int64_t>(configuration[1]);
    EXPECT_LE(a * b, 16);
    indices.insert(*enumerator.index_of(configuration));
  }
  EXPECT_EQ(indices.size(), 34u);
  EXPECT_EQ(*indices.rbegin(), 33u);
  // Not the exhaustive order.
  std::vector<Configuration> in_order;
  for (std::uint64_t index = 0; index < 34; ++index) in_order.push_back(enumerator.at(index));
  EXPECT_NE(proposed, in_order);
}

TEST(Strategy, RandomIsDeterministicPerSeedAndIndependentOfBatchSize) {
  Space space = constrained_space();
  SpaceEnumerator enumerator(space, {});
  std::vector<Configuration> first = drain(*make_strategy("random", enumerator, 5), 3);
  std::vector<Configuration> again = drain(*make_strategy("random", enumerator, 5), 11);
  std::vector<Configuration> other_seed = drain(*make_strategy("random", enumerator, 6), 3);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other_seed);
  EXPECT_EQ(first.size(), other_seed.size());
}

// A resumed run tells the recorded results before asking; the index orders pass over them (issue item 4).
TEST(Strategy, IndexOrdersDoNotProposeWhatTheyWereToldBeforeAsking) {
  Space space = constrained_space();
  SpaceEnumerator enumerator(space, {});
  for (const char* name : {"exhaustive", "random"}) {
    std::unique_ptr<Strategy> strategy = make_strategy(name, enumerator, 3);
    std::set<std::uint64_t> told;
    for (std::uint64_t index = 0; index < 34; index += 3) {
      Evaluation recorded;
      recorded.configuration = enumerator.at(index);
      strategy->tell(recorded);
      told.insert(index);
    }
    ASSERT_EQ(told.size(), 12u);
    std::vector<Configuration> proposed = drain(*strategy, 5);
    EXPECT_EQ(proposed.size(), 22u) << name;
    std::set<std::uint64_t> indices;
    for (const Configuration& configuration : proposed) {
      std::uint64_t index = *enumerator.index_of(configuration);
      EXPECT_FALSE(told.contains(index)) << name << ": proposed recorded index " << index;
      indices.insert(index);
    }
    EXPECT_EQ(indices.size(), 22u) << name;
  }
  // Exhaustive keeps its order over what is left: 1, 2, 4, 5, 7, ...
  std::unique_ptr<Strategy> exhaustive = make_strategy("exhaustive", enumerator, 1);
  for (std::uint64_t index : {0u, 3u}) {
    Evaluation recorded;
    recorded.configuration = enumerator.at(index);
    exhaustive->tell(recorded);
  }
  std::vector<Configuration> first = exhaustive->ask(3);
  EXPECT_EQ(first, (std::vector<Configuration>{enumerator.at(1), enumerator.at(2), enumerator.at(4)}));
}

TEST(IndexPermutation, IsABijectionForAwkwardSizes) {
  for (std::uint64_t size : {1ULL, 2ULL, 3ULL, 5ULL, 17ULL, 64ULL, 1000ULL, 4097ULL}) {
    IndexPermutation permutation(size, 99);
    std::vector<std::uint64_t> values;
    for (std::uint64_t position = 0; position < size; ++position) values.push_back(permutation(position));
    std::sort(values.begin(), values.end());
    std::vector<std::uint64_t> expected(size);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(values, expected) << "size " << size;
  }
}

TEST(IndexPermutation, SpreadsEarlyPositionsOverTheWholeRange) {
  IndexPermutation permutation(1'000'000, 3);
  std::uint64_t in_upper_half = 0;
  for (std::uint64_t position = 0; position < 1000; ++position) in_upper_half += permutation(position) >= 500'000;
  // Uniform draws put about half in the upper half; an identity-like order puts none there.
  EXPECT_GT(in_upper_half, 400u);
  EXPECT_LT(in_upper_half, 600u);
}

TEST(Strategy, RandomOverTenMillionValidConfigurationsIsFastAndDistinct) {
  Space space;
  space.name = "large";
  for (const char* name : {"P1", "P2", "P3", "P4", "P5", "P6", "P7"}) {
    space.parameters.push_back(integer_parameter(name, range(10)));
  }
  SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 10'000'000u);

  auto started = std::chrono::steady_clock::now();
  std::unique_ptr<Strategy> strategy = make_strategy("random", enumerator, 2024);
  std::vector<Configuration> proposed;
  while (proposed.size() < 1000) {
    std::vector<Configuration> proposals = strategy->ask(100);
    ASSERT_EQ(proposals.size(), 100u);
    proposed.insert(proposed.end(), proposals.begin(), proposals.end());
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 2.0);

  std::set<std::string> keys;
  std::uint64_t high_indices = 0;
  for (const Configuration& configuration : proposed) {
    ASSERT_TRUE(enumerator.is_valid(configuration));
    keys.insert(configuration_key(configuration));
    high_indices += *enumerator.index_of(configuration) >= 5'000'000;
  }
  EXPECT_EQ(keys.size(), 1000u);
  EXPECT_GT(high_indices, 400u);
  EXPECT_LT(high_indices, 600u);
}

}  // namespace
}  // namespace kernlathe
