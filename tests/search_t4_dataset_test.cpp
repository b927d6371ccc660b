// The community T1/T4 readers, on a 12-result excerpt of convolution-A6000 (8 correct, 2 compile failures,
// 2 runtime failures; runtimes cut to 5 samples) and the full convolution T1 space.
#include "tuner/search/t4_dataset.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tuner/search/replay.h"

namespace kernlathe {
namespace {

const std::filesystem::path data_directory = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests/data/search";

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

TEST(T4Dataset, ResultsGiveMedianTimesCompileTimesAndFailures) {
  Space space = read_t1_space(data_directory / "convolution.T1.json");
  std::vector<Evaluation> results = read_t4_results(data_directory / "convolution-excerpt.T4.json.gz", space);
  ASSERT_EQ(results.size(), 12u);
  EXPECT_EQ(results[0].configuration, convolution(16, 1, 1, 1, 0, 0, 0));
  EXPECT_EQ(results[0].status, Status::ok);
  // runtimes 3.8171, 3.7627, 3.7614, 3.7602, 3.5669: the median, not the file's mean-like "time" (4.0586).
  EXPECT_DOUBLE_EQ(results[0].time.median_ms, 3.761426227697981);
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
  EXPECT_DOUBLE_EQ(source.optimum_ms(), 1.9989325690158581);  // result 7: 16 1 1 2 0 0 0
  EXPECT_FALSE(source.lookup(convolution(256, 4, 1, 1, 0, 0, 0)).has_value());
}

TEST(T4Dataset, DefaultT1IsTheNamePrefixBesideTheT4File) {
  EXPECT_EQ(default_t1_for("/data/t4/convolution-A4000.T4.json.gz"), std::filesystem::path("/data/t4/convolution.T1.json"));
  EXPECT_EQ(default_t1_for("dedispersion.T4.json"), std::filesystem::path("dedispersion.T1.json"));
}

TEST(T4Dataset, BadFilesAreInputErrorsNamingTheFile) {
  const std::filesystem::path broken = std::filesystem::temp_directory_path() / "search_t4_broken.T1.json";
  std::ofstream(broken) << "{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"a\", \"Values\": \"[1, 2]\"}],"
                           " \"Conditions\": [{\"Expression\": \"a <= \"}]}}";
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
