// The portfolio of model proposals and local moves: every valid configuration once whatever the batch, the settings
// it takes by name, and a narrow optimum it finds where random search does not.
#include "tuner/search/portfolio.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tuner/record/csv_record.h"
#include "tuner/search/benchmark.h"
#include "tuner/search/strategy.h"

namespace kernlathe {
namespace {

Parameter integer_parameter(const std::string& name, std::int64_t count) {
  Parameter parameter;
  parameter.name = name;
  for (std::int64_t value = 1; value <= count; ++value) parameter.values.emplace_back(value);
  parameter.default_value = parameter.values.front();
  return parameter;
}

// Two paths: X and Y matter to path 1, Z to path 2 (a conditional space as spaces/gemm.yaml is).
Space two_path_space() {
  Space space;
  space.parameters = {integer_parameter("PATH", 2), integer_parameter("X", 6), integer_parameter("Y", 6),
                      integer_parameter("Z", 8)};
  space.parameters[1].relevant_when = Expression::parse("PATH == 1");
  space.parameters[2].relevant_when = Expression::parse("PATH == 1");
  space.parameters[3].relevant_when = Expression::parse("PATH == 2");
  space.constraints = {Constraint{Expression::parse("X * Y <= 24")}};
  return space;
}

double time_of(const Configuration& configuration) {
  const auto value = [&](std::size_t p) { return static_cast<double>(std::get<std::int64_t>(configuration[p])); };
  // Path 1 is a broad bowl around (4, 5) at 1.5 ms; path 2 holds the optimum, 1 ms at Z = 7.
  if (value(0) == 1) return 1.5 + 0.1 * (value(1) - 4) * (value(1) - 4) + 0.1 * (value(2) - 5) * (value(2) - 5);
  return 1.0 + 0.3 * std::abs(value(3) - 7);
}

TEST(PortfolioStrategy, ProposesEveryValidConfigurationOnceWhateverTheBatch) {
  SpaceEnumerator space(two_path_space(), {});
  ASSERT_EQ(space.valid_count(), 32u + 8u);  // 32 (X, Y) pairs with X * Y <= 24, 8 values of Z
  for (std::size_t batch : {1u, 4u}) {
    PortfolioStrategy strategy(space, 3);
    std::set<std::uint64_t> seen;
    while (true) {
      std::vector<Configuration> proposals = strategy.ask(batch);
      if (proposals.empty()) break;
      EXPECT_LE(proposals.size(), batch);
      for (const Configuration& configuration : proposals) {
        EXPECT_EQ(space.canonical(configuration), configuration);
        std::optional<std::uint64_t> index = space.index_of(configuration);
        ASSERT_TRUE(index.has_value());
        EXPECT_TRUE(seen.insert(*index).second) << to_string(space.space(), configuration);
        Evaluation evaluation;
        evaluation.configuration = configuration;
        evaluation.time.median_ms = time_of(configuration);
        strategy.tell(evaluation);
      }
    }
    EXPECT_EQ(seen.size(), space.valid_count()) << "batch " << batch;
  }
}

// With several lanes many proposals are out at once and their results come later, in any order: the portfolio
// answers every request with something new until the space is spent, even while nothing is told (each part then
// keeps suggesting what the other, or an earlier batch, already holds). An empty answer ends a run.
TEST(PortfolioStrategy, AnswersUntilTheSpaceIsSpentWhileResultsAreOutstanding) {
  SpaceEnumerator space(two_path_space(), {});
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    PortfolioStrategy strategy(space, seed);
    std::vector<Configuration> outstanding;
    std::set<std::uint64_t> seen;
    // Three results told, then eight requests answered with none told, then all told: as lanes of different speeds
    // with the strategy behind them.
    for (int round = 0; seen.size() < space.valid_count() && round < 100; ++round) {
      for (int request = 0; request < 8; ++request) {
        std::vector<Configuration> proposals = strategy.ask(1);
        if (proposals.empty()) break;
        ASSERT_TRUE(seen.insert(*space.index_of(proposals.front())).second) << "seed " << seed;
        outstanding.push_back(proposals.front());
      }
      for (const Configuration& configuration : outstanding) {
        Evaluation evaluation;
        evaluation.configuration = configuration;
        evaluation.time.median_ms = time_of(configuration);
        strategy.tell(evaluation);
      }
      outstanding.clear();
    }
    EXPECT_EQ(seen.size(), space.valid_count()) << "seed " << seed;
    EXPECT_TRUE(strategy.ask(1).empty());
  }
}

TEST(PortfolioStrategy, SettingsAreTakenByNameAndChecked) {
  SpaceEnumerator space(two_path_space(), {});
  EXPECT_EQ(make_strategy("portfolio", space, 1)->name(), "portfolio");
  EXPECT_EQ(make_strategy("portfolio:model_share=0.25", space, 1)->name(), "portfolio");
  EXPECT_EQ(make_strategy("portfolio:model_share=0.5,local_learns_from_model=0,model_first=30", space, 1)->name(),
            "portfolio");
  EXPECT_EQ(default_strategy_name(), "portfolio");
  EXPECT_EQ(make_strategy("portfolio:refit_growth=0.25", space, 1)->name(), "portfolio");
  for (const char* wrong : {"portfolio:model_share=1.5", "portfolio:share=0.5", "portfolio:model_share=x",
                            "portfolio:model_first=2.5", "portfolio:local_learns_from_model=2",
                            "portfolio:refit_growth=-1", "local:model_share=0.5"}) {
    try {
      make_strategy(wrong, space, 1);
      ADD_FAILURE() << wrong << ": expected an InputError";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(wrong), std::string::npos) << error.what();
    }
  }
}

TEST(PortfolioStrategy, TheDefaultSettingsAreTheOnesCrossValidationChose) {
  SpaceEnumerator space(two_path_space(), {});
  // "portfolio" and its settings written out propose the same configurations for the same seed.
  std::unique_ptr<Strategy> plain = make_strategy("portfolio", space, 7);
  std::unique_ptr<Strategy> spelled =
      make_strategy("portfolio:model_share=0.25,local_learns_from_model=1,model_first=0", space, 7);
  std::unique_ptr<Strategy> other = make_strategy("portfolio:model_share=0.75", space, 7);
  bool differs = false;
  for (int step = 0; step < 30; ++step) {
    std::vector<Configuration> a = plain->ask(1), b = spelled->ask(1), c = other->ask(1);
    ASSERT_EQ(a, b) << "step " << step;
    differs = differs || a != c;
    for (Strategy* strategy : {plain.get(), spelled.get()}) {
      Evaluation evaluation;
      evaluation.configuration = a.front();
      evaluation.time.median_ms = time_of(a.front());
      strategy->tell(evaluation);
    }
    Evaluation evaluation;
    evaluation.configuration = c.front();
    evaluation.time.median_ms = time_of(c.front());
    other->tell(evaluation);
  }
  EXPECT_TRUE(differs);  // another share is another search
}

// The model refits when its results grew by 1/64; it proposes every fourth configuration, so for the first 256
// results it refits at each of its proposals, as refitting at every result does: the same search, step for step.
TEST(PortfolioStrategy, TheRefitScheduleChangesNothingInTheFirst256Results) {
  Space space;
  space.parameters = {integer_parameter("X", 8), integer_parameter("Y", 8), integer_parameter("Z", 8)};
  SpaceEnumerator enumerator(space, {});
  const auto time = [](const Configuration& configuration) {
    const auto value = [&](std::size_t p) { return static_cast<double>(std::get<std::int64_t>(configuration[p])); };
    return 1.0 + std::abs(value(0) - 3) * 0.2 + std::abs(value(1) - 6) * 0.1 + (value(2) == 5 ? 0.0 : 0.3);
  };
  std::unique_ptr<Strategy> scheduled = make_strategy("portfolio", enumerator, 5);
  std::unique_ptr<Strategy> every_result = make_strategy("portfolio:refit_growth=0", enumerator, 5);
  std::unique_ptr<Strategy> rarely = make_strategy("portfolio:refit_growth=1", enumerator, 5);
  bool rarely_differs = false;
  for (int step = 0; step < 256; ++step) {
    std::vector<Configuration> a = scheduled->ask(1), b = every_result->ask(1), c = rarely->ask(1);
    ASSERT_EQ(a, b) << "step " << step;
    rarely_differs = rarely_differs || a != c;
    for (auto& [strategy, proposal] : {std::pair{scheduled.get(), &a}, std::pair{every_result.get(), &b},
                                       std::pair{rarely.get(), &c}}) {
      Evaluation evaluation;
      evaluation.configuration = proposal->front();
      evaluation.time.median_ms = time(proposal->front());
      strategy->tell(evaluation);
    }
  }
  EXPECT_TRUE(rarely_differs);  // a model refitted only when its results doubled searches otherwise
}

TEST(PortfolioStrategy, FindsTheOptimumOnTheOtherPath) {
  SpaceEnumerator space(two_path_space(), {});
  std::vector<Evaluation> evaluations;
  for (std::uint64_t index = 0; index < space.valid_count(); ++index) {
    Evaluation evaluation;
    evaluation.configuration = space.at(index);
    evaluation.time.median_ms = time_of(evaluation.configuration);
    evaluation.time.samples = 1;
    evaluations.push_back(std::move(evaluation));
  }
  ReplaySource source(std::move(evaluations));
  const std::vector<BenchmarkRow> rows = run_benchmark(space, source, {"portfolio"}, 9, {20});
  ASSERT_EQ(rows.size(), 1u);
  // 8 of 40 configurations lie on path 2; every seed gets to its optimum within 20 evaluations.
  EXPECT_EQ(rows[0].upper_quartile_best_over_optimum, 1.0);
}

}  // namespace
}  // namespace kernlathe
