// The community T4 reader (with its T1 space), on a 12-result excerpt of convolution-A6000 (8 correct, 2 compile failures,
// 2 runtime failures; runtimes cut to 5 samples) and the full convolution T1 space, and on small files of each form
// under tests/data/t4 (a maximised score, recorded means against medians, seconds, the benchmark hub's layout).
#include "tuner/search/t4_dataset.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tuner/search/replay.h"

namespace kernlathe {
namespace {

const std::filesystem::path data_directory = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests/data/search";
const std::filesystem::path t4_directory = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests/data/t4";

template <typename Function>
std::string message_of(Function function) {
  try {
    function();
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

Configuration convolution(std::int64_t bx, std::int64_t by, std::int64_t tx, std::int64_t ty, std::int64_t read_only,
                          std::int64_t padding, std::int64_t shmem) {
  return {Value{bx}, Value{by}, Value{tx}, Value{ty}, Value{read_only}, Value{padding}, Value{shmem},
          Value{std::int64_t{1}}, Value{std::int64_t{15}}, Value{std::int64_t{15}}};
}

TEST(T4Dataset, T1SpaceHasTheTypedParametersAndPythonConstraints) {
  Space space = read_t1_space(data_directory / "convolution.T1.json");
  ASSERT_EQ(space.parameters.size(), 10u);
  EXPECT_EQ(space.parameters[0].name, "block_size_x");
  EXPECT_EQ(space.parameters[0].type, ParameterType::integer);
  EXPECT_EQ(space.parameters[0].values.size(), 16u);
  EXPECT_EQ(std::get<std::int64_t>(space.parameters[0].values.back()), 256);
  // The declared default, not the first value.
  EXPECT_EQ(std::get<std::int64_t>(space.parameters[1].default_value), 16);
  ASSERT_EQ(space.constraints.size(), 4u);
  EXPECT_EQ(space.constraints[0].expression.text(), "use_padding==0 or block_size_x % 32 != 0");
  // Counted independently (Python brute force over the product): 4362 valid, exactly the T4 files' result count.
  EXPECT_EQ(SpaceEnumerator(space, {}).valid_count(), 4362u);
}

TEST(T4Dataset, PythonExpressionSpaceOfTheShippedT1Benchmark) {
  // kernels/t1/convolution_2d.T1.json: Values as comprehensions and ranges, conditions with chained comparisons,
  // `not`, `//` and `%`. Counted independently (Python brute force over the 300 configurations of the product).
  Space space = read_t1_space(std::filesystem::path(KERNLATHE_SOURCE_DIR) / "kernels/t1/convolution_2d.T1.json");
  EXPECT_EQ(SpaceEnumerator(space, {}).valid_count(), 190u);
}

TEST(T4Dataset, ResultsGiveRecordedTimesCompileTimesAndFailures) {
  Space space = read_t1_space(data_directory / "convolution.T1.json");
  T4Results read = read_t4(data_directory / "convolution-excerpt.T4.json.gz", space);
  EXPECT_EQ(read.objective.name, "time");
  EXPECT_EQ(read.objective.direction, ObjectiveDirection::minimize);
  EXPECT_EQ(read.objective.direction_from, "a time objective");
  std::vector<Evaluation>& results = read.evaluations;
  ASSERT_EQ(results.size(), 12u);
  EXPECT_EQ(results[0].configuration, convolution(16, 1, 1, 1, 0, 0, 0));
  EXPECT_EQ(results[0].status, Status::ok);
  // The recorded "time" measurement (the publishing tool's mean-like statistic), not the median of the runtimes
  // 3.8171, 3.7627, 3.7614, 3.7602, 3.5669 (3.7614).
  EXPECT_DOUBLE_EQ(results[0].time.median_ms, 4.058558119864276);
  EXPECT_DOUBLE_EQ(results[0].time.min_ms, 3.566876484018263);
  EXPECT_EQ(results[0].time.samples, 5);
  EXPECT_DOUBLE_EQ(results[0].compile_ms, 1096.0545427181564);
  EXPECT_EQ(results[8].status, Status::compile_error);
  EXPECT_EQ(results[8].configuration, convolution(80, 8, 3, 4, 0, 1, 1));
  EXPECT_DOUBLE_EQ(results[8].compile_ms, 10730.176774784923);
  // Timed but marked as a runtime failure: a failure all the same.
  EXPECT_EQ(results[10].status, Status::launch_error);
  EXPECT_FALSE(results[10].ok());

  ReplaySource source(results);
  EXPECT_EQ(source.size(), 12u);
  EXPECT_DOUBLE_EQ(source.optimum_ms(), 2.134406078848772);  // result 7: 16 1 1 2 0 0 0
  EXPECT_DOUBLE_EQ(*read.objective.best_value, 2.134406078848772);
  EXPECT_FALSE(source.lookup(convolution(256, 4, 1, 1, 0, 0, 0)).has_value());
}

TEST(T4Dataset, MedianOfTheRuntimesOnRequest) {
  Space space = read_t1_space(data_directory / "convolution.T1.json");
  T4ReadOptions options;
  options.source = ObjectiveSource::median;
  std::vector<Evaluation> results = read_t4_results(data_directory / "convolution-excerpt.T4.json.gz", space, options);
  EXPECT_DOUBLE_EQ(results[0].time.median_ms, 3.761426227697981);
  EXPECT_DOUBLE_EQ(ReplaySource(results).optimum_ms(), 1.9989325690158581);
}

// runtimes-mean.T4.json records time = the mean of four runtimes per configuration: (32, 1) runs 1, 1, 1, 9 (mean 3,
// median 1), (32, 2) runs 2, 2, 2, 2, (64, 1) 2.5 four times, (64, 2) failed at run time.
TEST(T4Dataset, RecordedMeanAndMedianDisagreeOnTheOptimum) {
  Space space = read_t1_space(t4_directory / "runtimes.T1.json");
  const Configuration first{Value{std::int64_t{32}}, Value{std::int64_t{1}}};
  const Configuration second{Value{std::int64_t{32}}, Value{std::int64_t{2}}};
  std::vector<Evaluation> recorded = read_t4_results(t4_directory / "runtimes-mean.T4.json", space);
  ASSERT_EQ(recorded.size(), 4u);
  EXPECT_DOUBLE_EQ(recorded[0].time.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(recorded[0].time.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(recorded[0].time.max_ms, 9.0);
  EXPECT_EQ(recorded[3].status, Status::launch_error);
  ReplaySource by_mean(recorded);
  EXPECT_DOUBLE_EQ(by_mean.optimum_ms(), 2.0);
  EXPECT_DOUBLE_EQ(by_mean.lookup(second)->time.median_ms, 2.0);

  T4ReadOptions median;
  median.source = ObjectiveSource::median;
  ReplaySource by_median(read_t4_results(t4_directory / "runtimes-mean.T4.json", space, median));
  EXPECT_DOUBLE_EQ(by_median.optimum_ms(), 1.0);
  EXPECT_DOUBLE_EQ(by_median.lookup(first)->time.median_ms, 1.0);

  // The same results in seconds: converted to milliseconds.
  std::vector<Evaluation> seconds = read_t4_results(t4_directory / "runtimes-seconds.T4.json", space);
  EXPECT_DOUBLE_EQ(seconds[0].time.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(seconds[0].compile_ms, 25500.0);
}

// score-*.T4.json: a hyperparameter-style objective "score" over popsize x c1; the highest, 0.9, is (20, 1.0) and
// the lowest, 0.2, is (10, 1.0).
TEST(T4Dataset, ScoreObjectiveIsMaximisedWhenTheFileSaysSo) {
  Space space = read_t1_space(t4_directory / "score.T1.json");
  T4Results read = read_t4(t4_directory / "score-declared.T4.json", space);
  EXPECT_EQ(read.objective.name, "score");
  EXPECT_EQ(read.objective.direction, ObjectiveDirection::maximize);
  EXPECT_EQ(read.objective.direction_from, "the file's metadata");
  EXPECT_FALSE(read.objective.is_time);
  EXPECT_DOUBLE_EQ(*read.objective.best_value, 0.9);
  ASSERT_EQ(read.evaluations.size(), 6u);
  EXPECT_EQ(read.evaluations[2].configuration, (Configuration{Value{std::int64_t{20}}, Value{std::string("1.0")}}));
  // Replayed as a cost to minimise: 1 / score, so best/optimum is optimum score / best score.
  EXPECT_DOUBLE_EQ(read.evaluations[2].time.median_ms, 1.0 / 0.9);
  ReplaySource source(read.evaluations);
  EXPECT_DOUBLE_EQ(source.optimum_ms(), 1.0 / 0.9);

  // The caller's direction wins over the file's.
  T4ReadOptions minimise;
  minimise.direction = ObjectiveDirection::minimize;
  T4Results minimised = read_t4(t4_directory / "score-declared.T4.json", space, minimise);
  EXPECT_EQ(minimised.objective.direction_from, "the caller");
  EXPECT_DOUBLE_EQ(*minimised.objective.best_value, 0.2);
  EXPECT_DOUBLE_EQ(ReplaySource(minimised.evaluations).optimum_ms(), 0.2);
}

TEST(T4Dataset, AnObjectiveThatIsNotUsableIsAnErrorNamingTheFile) {
  Space space = read_t1_space(t4_directory / "score.T1.json");
  const std::string undeclared = message_of([&] { read_t4(t4_directory / "score-undeclared.T4.json", space); });
  EXPECT_NE(undeclared.find("score-undeclared.T4.json"), std::string::npos) << undeclared;
  EXPECT_NE(undeclared.find("the objective is 'score'"), std::string::npos) << undeclared;
  EXPECT_NE(undeclared.find("--t4-direction maximize"), std::string::npos) << undeclared;
  T4ReadOptions maximise;
  maximise.direction = ObjectiveDirection::maximize;
  EXPECT_DOUBLE_EQ(*read_t4(t4_directory / "score-undeclared.T4.json", space, maximise).objective.best_value, 0.9);

  const std::string negative = message_of([&] { read_t4(t4_directory / "score-negative.T4.json", space); });
  EXPECT_NE(negative.find("score-negative.T4.json: results[3] records objective 'score' = -0.429"), std::string::npos)
      << negative;
  T4ReadOptions median;
  median.source = ObjectiveSource::median;
  EXPECT_NE(message_of([&] { read_t4(t4_directory / "score-declared.T4.json", space, median); })
                .find("only stands for a time objective"),
            std::string::npos);
  T4ReadOptions other;
  other.objective = "energy";
  EXPECT_NE(message_of([&] { read_t4(t4_directory / "score-declared.T4.json", space, other); })
                .find("--t4-objective energy: the file's objectives are score"),
            std::string::npos);
}

TEST(T4Dataset, FilesAreCheckedAgainstTheSchema) {
  const std::filesystem::path broken = std::filesystem::temp_directory_path() / "search_t4_schema.T4.json";
  std::ofstream(broken) << R"({"schema_version": "1.0.0", "results": [{"configuration": {"popsize": 10, "c1": 1.0},
      "times": {"compilation": "slow"}, "invalidity": "correct", "objectives": ["score"],
      "measurements": [{"name": "score", "value": 0.5}]}]})";
  Space space = read_t1_space(t4_directory / "score.T1.json");
  const std::string message = message_of([&] { read_t4(broken, space); });
  EXPECT_NE(message.find("not a T4 file by the published schema"), std::string::npos) << message;
  EXPECT_NE(message.find("results[0]: no \"correctness\""), std::string::npos) << message;
  EXPECT_NE(message.find("results[0].times.compilation: not a number"), std::string::npos) << message;
  std::filesystem::remove(broken);
}

TEST(T4Dataset, ParseObjectiveOptions) {
  EXPECT_EQ(parse_objective_direction("maximize"), ObjectiveDirection::maximize);
  EXPECT_EQ(parse_objective_direction("minimise"), ObjectiveDirection::minimize);
  EXPECT_FALSE(parse_objective_direction("up").has_value());
  EXPECT_EQ(parse_objective_source("median"), ObjectiveSource::median);
  EXPECT_FALSE(parse_objective_source("mean").has_value());
}

TEST(T4Dataset, DefaultT1IsTheNamePrefixBesideTheT4File) {
  EXPECT_EQ(default_t1_for("/data/t4/convolution-A4000.T4.json.gz"), std::filesystem::path("/data/t4/convolution.T1.json"));
  EXPECT_EQ(default_t1_for("dedispersion.T4.json"), std::filesystem::path("dedispersion.T1.json"));
}

TEST(T4Dataset, HubLayoutFindsTheT1FileAboveTheResults) {
  // cachefiles/tiny_bench/A100_T4.json -> kernels/tiny_bench.json, two folders up.
  EXPECT_EQ(find_t1_for(t4_directory / "hub/cachefiles/tiny_bench/A100_T4.json"),
            (t4_directory / "hub/kernels/tiny_bench.json").lexically_normal());
  EXPECT_EQ(find_t1_for(t4_directory / "runtimes-mean.T4.json"), t4_directory / "runtimes.T1.json");
  const std::string message = message_of([&] { find_t1_for(t4_directory / "hub/cachefiles/orphan_bench/A100_T4.json"); });
  EXPECT_NE(message.find("no T1 space file found"), std::string::npos) << message;
  EXPECT_NE(message.find("hub/cachefiles/orphan_bench/A100_T4.T1.json"), std::string::npos) << message;
  EXPECT_NE(message.find("hub/kernels/orphan_bench.json"), std::string::npos) << message;
  EXPECT_NE(message.find("--t1 FILE"), std::string::npos) << message;
}

TEST(T4Dataset, BadFilesAreInputErrorsNamingTheFile) {
  const std::filesystem::path broken = std::filesystem::temp_directory_path() / "search_t4_broken.T1.json";
  std::ofstream(broken) << "{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"a\", \"Type\": \"int\", "
                           "\"Values\": \"[1, 2]\"}], \"Conditions\": [{\"Expression\": \"a <= \", \"Parameters\": [\"a\"]}]}}";
  try {
    read_t1_space(broken);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("Conditions[0]"), std::string::npos) << error.what();
  }
  EXPECT_THROW(read_t1_space(data_directory / "missing.T1.json"), InputError);
  EXPECT_THROW(read_t4_results(data_directory / "convolution.T1.json", Space{}), InputError);  // no "results"
  std::filesystem::remove(broken);
}

}  // namespace
}  // namespace kernlathe
