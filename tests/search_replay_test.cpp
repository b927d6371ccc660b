#include "tuner/search/replay.h"

#include <cstdlib>
#include <tuple>

#include <gtest/gtest.h>

#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"

namespace kernlathe {
namespace {

const std::filesystem::path recorded_csv = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests/data/record/saxpy_small.csv";

Parameter integer_parameter(const std::string& name, std::vector<std::int64_t> values) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::integer;
  for (std::int64_t value : values) parameter.values.emplace_back(value);
  parameter.default_value = parameter.values.front();
  return parameter;
}

// The space tests/data/record/saxpy_small.csv was recorded with: 16 of 18 combinations valid.
Space saxpy_space() {
  Space space;
  space.name = "saxpy_small";
  Parameter shared_memory;
  shared_memory.name = "USE_SHMEM";
  shared_memory.type = ParameterType::boolean;
  shared_memory.values = {Value{false}, Value{true}};
  shared_memory.default_value = Value{false};
  space.parameters = {integer_parameter("BLOCK", {64, 128, 256}), integer_parameter("VEC", {1, 2, 4}),
                      shared_memory};
  space.constraints = {Constraint{Expression::parse("BLOCK * VEC <= 512")}};
  return space;
}

Configuration configuration(std::int64_t block, std::int64_t vec, bool shared_memory) {
  return {Value{block}, Value{vec}, Value{shared_memory}};
}

TEST(ReplaySource, ReadsOneSpecVersionOrAll) {
  Space space = saxpy_space();
  ReplaySource source(recorded_csv, SpaceEnumerator(space, {}), "specA");
  EXPECT_EQ(source.size(), 16u);
  EXPECT_EQ(source.optimum_ms(), 0.0101);
  std::optional<Evaluation> failed = source.lookup(configuration(64, 4, true));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, Status::compile_error);
  EXPECT_EQ(failed->message, "instantiate.cu(12): error: expected a \";\", got \"}\"\nnote: 1 error");
  EXPECT_EQ(source.lookup(configuration(64, 1, false))->time.median_ms, 0.05);
  EXPECT_EQ(source.lookup(configuration(256, 4, false)), std::nullopt);

  // Without a hash the later row of the older kernel version wins for (64, 1, false).
  ReplaySource every_row(recorded_csv, SpaceEnumerator(space, {}), "");
  EXPECT_EQ(every_row.size(), 16u);
  EXPECT_EQ(every_row.optimum_ms(), 0.001);
  EXPECT_EQ(every_row.lookup(configuration(64, 1, false))->time.median_ms, 0.001);

  EXPECT_EQ(read_run_metadata(recorded_csv).at(0).arch, "sm_90");
}

TEST(ReplaySource, ARecordWrittenBeforeAParameterWasAddedIsReplayedWithItHeldAtItsDefault) {
  // The space grew an UNROLL parameter (default 2) after tests/data/record/saxpy_small.csv was written.
  Space grown = saxpy_space();
  Parameter unroll = integer_parameter("UNROLL", {1, 2, 4});
  unroll.default_value = Value{std::int64_t{2}};
  grown.parameters.push_back(unroll);
  const std::vector<std::string> missing = parameters_missing_from(recorded_csv, grown);
  EXPECT_EQ(missing, std::vector<std::string>{"UNROLL"});
  EXPECT_TRUE(parameters_missing_from(recorded_csv, saxpy_space()).empty());

  const SpaceEnumerator whole(grown, {});
  const SpaceEnumerator held(replay_space(grown, missing), {});
  EXPECT_EQ(whole.valid_count(), 48u);  // 16 valid combinations times 3 values of UNROLL
  EXPECT_EQ(held.valid_count(), 16u);
  for (std::uint64_t index = 0; index < held.valid_count(); ++index) EXPECT_EQ(held.at(index)[3], Value{std::int64_t{2}});
  ReplaySource source(recorded_csv, held, "specA");
  EXPECT_EQ(source.size(), 16u);
  EXPECT_EQ(source.optimum_ms(), 0.0101);
  EXPECT_EQ(source.lookup({Value{std::int64_t{64}}, Value{std::int64_t{1}}, Value{false}, Value{std::int64_t{2}}})
                ->time.median_ms,
            0.05);
  EXPECT_THROW(replay_space(grown, {"NO_SUCH"}), TunerError);
  // A space that lost a parameter the file has: not an earlier layout, an error naming both lists.
  Space fewer = saxpy_space();
  fewer.parameters.pop_back();
  EXPECT_THROW(parameters_missing_from(recorded_csv, fewer), InputError);
}

TEST(ReplaySearch, ExhaustiveFindsTheRecordedOptimum) {
  Space space = saxpy_space();
  SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 16u);
  ReplaySource source(recorded_csv, SpaceEnumerator(space, {}), "specA");
  std::unique_ptr<Strategy> strategy = make_strategy("exhaustive", enumerator, 1);
  ReplayResult result = replay_search(*strategy, source, StopCondition{}, 4);

  ASSERT_TRUE(result.best_time_ms);
  EXPECT_EQ(*result.best_time_ms, 0.0101);
  EXPECT_EQ(*result.best_configuration, configuration(128, 4, false));
  EXPECT_EQ(result.evaluations, 16u);
  EXPECT_EQ(result.missing, 0u);
  EXPECT_EQ(result.stop_reason, "strategy exhausted");

  // Where exhaustive order first reaches 10% (0.011 qualifies) and 5% (only the optimum) of the optimum.
  std::optional<std::uint64_t> within_5, within_10;
  for (std::uint64_t index = 0; index < 16; ++index) {
    Configuration candidate = enumerator.at(index);
    if (!within_10 && (candidate == configuration(128, 4, false) || candidate == configuration(128, 4, true))) {
      within_10 = index + 1;
    }
    if (!within_5 && candidate == configuration(128, 4, false)) within_5 = index + 1;
  }
  EXPECT_EQ(result.evaluations_to_within_5_percent, within_5);
  EXPECT_EQ(result.evaluations_to_within_10_percent, within_10);
  // compile_ms + median * samples summed over the 16 rows: 15 ok rows at 350.25 ms plus one failure at 412.5 ms.
  EXPECT_GT(result.simulated_seconds, (15 * 350.25 + 412.5) * 1e-3);
  EXPECT_LT(result.simulated_seconds, (15 * 350.25 + 412.5) * 1e-3 + 0.05);
}

TEST(ReplaySearch, StopConditionsEndTheLoop) {
  Space space = saxpy_space();
  SpaceEnumerator enumerator(space, {});
  ReplaySource source(recorded_csv, SpaceEnumerator(space, {}), "specA");

  StopCondition budget;
  budget.max_evaluations = 5;
  std::unique_ptr<Strategy> random = make_strategy("random", enumerator, 11);
  ReplayResult limited = replay_search(*random, source, budget, 4);
  EXPECT_EQ(limited.evaluations, 5u);
  EXPECT_EQ(limited.stop_reason, "evaluation budget of 5 reached");

  StopCondition target;
  target.target_time_ms = 0.0101;
  std::unique_ptr<Strategy> exhaustive = make_strategy("exhaustive", enumerator, 1);
  ReplayResult reached = replay_search(*exhaustive, source, target, 3);
  EXPECT_EQ(reached.best_time_ms, 0.0101);
  EXPECT_EQ(std::optional<std::uint64_t>(reached.evaluations), reached.evaluations_to_within_5_percent);
  EXPECT_LT(reached.evaluations, 16u);
}

TEST(ReplaySearch, RandomFindsTheOptimumWithinTheWholeSpaceForEverySeed) {
  Space space = saxpy_space();
  SpaceEnumerator enumerator(space, {});
  ReplaySource source(recorded_csv, SpaceEnumerator(space, {}), "specA");
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    std::unique_ptr<Strategy> strategy = make_strategy("random", enumerator, seed);
    ReplayResult result = replay_search(*strategy, source, StopCondition{}, 7);
    EXPECT_EQ(result.evaluations, 16u);
    EXPECT_EQ(result.best_time_ms, 0.0101);
    ASSERT_TRUE(result.evaluations_to_within_5_percent);
    EXPECT_GE(*result.evaluations_to_within_10_percent, 1u);
    EXPECT_LE(*result.evaluations_to_within_10_percent, *result.evaluations_to_within_5_percent);
  }
}

TEST(ReplaySource, RowsDifferingOnlyInIrrelevantValuesAreOneConfigurationAndTheFastestStands) {
  std::string pattern = (std::filesystem::temp_directory_path() / "replay_test_XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  std::filesystem::path directory = pattern;
  Space space = saxpy_space();
  {
    // Recorded before VEC was conditional: three rows of BLOCK=256 without shared memory, VEC 1, 2 and 4 (the
    // last one failed), and one with shared memory.
    RecordWriter writer(directory / "evaluations.csv", space, RunMetadata{});
    for (auto [vec, shared_memory, median_ms, ok] : {std::tuple{1, false, 0.30, true}, std::tuple{2, false, 0.20, true},
                                                     std::tuple{4, false, 0.0, false}, std::tuple{2, true, 0.50, true}}) {
      Evaluation evaluation;
      evaluation.configuration = configuration(64, vec, shared_memory);
      evaluation.status = ok ? Status::ok : Status::launch_error;
      evaluation.time.median_ms = median_ms;
      evaluation.time.samples = 10;
      writer.append(evaluation, "h");
    }
  }
  // Later VEC matters only to blocks of 128 threads or more; elsewhere VEC=1 (its default) stands for every VEC.
  Space later = space;
  later.parameters[1].relevant_when = Expression::parse("BLOCK >= 128");
  SpaceEnumerator enumerator(later, {});
  ReplaySource source(directory / "evaluations.csv", enumerator, "h");
  // BLOCK=64 makes VEC irrelevant: the four rows fold into (64, 1, false) and (64, 1, true).
  EXPECT_EQ(source.size(), 2u);
  EXPECT_EQ(source.lookup(configuration(64, 1, false))->time.median_ms, 0.20);  // the fastest of three rows
  EXPECT_EQ(source.lookup(configuration(64, 1, true))->time.median_ms, 0.50);
  EXPECT_EQ(source.optimum_ms(), 0.20);
  // Rows already in memory (a recording read for a report) fold the same way.
  std::vector<Evaluation> rows;
  for_each_record(directory / "evaluations.csv", space, [&](RecordedEvaluation&& record) {
    rows.push_back(std::move(record.evaluation));
  });
  ReplaySource in_memory(std::move(rows), enumerator);
  EXPECT_EQ(in_memory.size(), 2u);
  EXPECT_EQ(in_memory.lookup(configuration(64, 1, false))->time.median_ms, 0.20);
}

TEST(ReplaySearch, ConfigurationsMissingFromTheDataAreToldInvalid) {
  std::string pattern = (std::filesystem::temp_directory_path() / "replay_test_XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  std::filesystem::path directory = pattern;
  Space space = saxpy_space();
  {
    RecordWriter writer(directory / "evaluations.csv", space, RunMetadata{});
    Evaluation evaluation;
    evaluation.configuration = configuration(256, 2, true);
    evaluation.time.median_ms = 0.3;
    evaluation.time.samples = 10;
    writer.append(evaluation, "h");
  }
  ReplaySource source(directory / "evaluations.csv", SpaceEnumerator(space, {}), "h");

  class CountingStrategy final : public Strategy {
   public:
    explicit CountingStrategy(std::unique_ptr<Strategy> inner) : inner_(std::move(inner)) {}
    std::string name() const override { return "counting"; }
    std::vector<Configuration> ask(std::size_t count) override { return inner_->ask(count); }
    void tell(const Evaluation& evaluation) override {
      ++told[std::string(status_name(evaluation.status))];
      inner_->tell(evaluation);
    }
    std::map<std::string, int> told;

   private:
    std::unique_ptr<Strategy> inner_;
  };

  SpaceEnumerator enumerator(space, {});
  CountingStrategy strategy(make_strategy("exhaustive", enumerator, 1));
  ReplayResult result = replay_search(strategy, source, StopCondition{}, 16);
  EXPECT_EQ(result.evaluations, 16u);
  EXPECT_EQ(result.missing, 15u);
  EXPECT_EQ(strategy.told, (std::map<std::string, int>{{"invalid", 15}, {"ok", 1}}));
  EXPECT_EQ(result.best_time_ms, 0.3);
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace kernlathe
