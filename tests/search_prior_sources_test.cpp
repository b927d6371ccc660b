#include "tuner/search/prior_sources.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "tuner/common/error.h"
#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("prior_sources_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

Space two_parameter_space() {
  Space space;
  space.name = "tiny";
  for (const char* name : {"A", "B"}) {
    Parameter parameter;
    parameter.name = name;
    parameter.type = ParameterType::integer;
    for (std::int64_t value = 1; value <= 4; ++value) parameter.values.emplace_back(value);
    parameter.default_value = parameter.values.front();
    space.parameters.push_back(parameter);
  }
  return space;
}

void write_record(const fs::path& csv, const Space& space, const std::string& gpu, const std::string& problem,
                  const std::vector<std::pair<Configuration, double>>& rows) {
  fs::create_directories(csv.parent_path());
  RunMetadata metadata;
  metadata.kernel = "tiny";
  metadata.gpu_name = gpu;
  metadata.problem = problem;
  RecordWriter writer(csv, space, metadata);
  for (const auto& [configuration, ms] : rows) {
    Evaluation evaluation;
    evaluation.configuration = configuration;
    evaluation.time.median_ms = ms;
    writer.append(evaluation, "0123456789abcdef");
  }
}

Configuration configuration_of(std::int64_t a, std::int64_t b) { return {Value{a}, Value{b}}; }

TEST(PriorSources, AProjectRecordIsReadWithItsGpuAndProblemFromRunJson) {
  const fs::path dir = fresh_directory("record");
  const Space space = two_parameter_space();
  write_record(dir / "evaluations.csv", space, "NVIDIA H200", "N=1024",
               {{configuration_of(1, 2), 0.5}, {configuration_of(3, 4), 0.25}});
  const PriorSource source = read_prior_source(dir / "evaluations.csv", space);
  EXPECT_EQ(source.name, (dir / "evaluations.csv").string() + " (NVIDIA H200, N=1024)");
  ASSERT_EQ(source.evaluations.size(), 2u);
  EXPECT_EQ(source.evaluations[1].configuration, configuration_of(3, 4));
  EXPECT_DOUBLE_EQ(source.evaluations[1].time.median_ms, 0.25);
  EXPECT_FALSE(is_t4_file(dir / "evaluations.csv"));
  EXPECT_TRUE(is_t4_file("convolution-A4000.T4.json.gz"));
}

TEST(PriorSources, AMissingFileOrOneOfAnotherSpaceIsAnInputErrorNamingIt) {
  const fs::path dir = fresh_directory("bad");
  const Space space = two_parameter_space();
  try {
    read_prior_source(dir / "absent.csv", space);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("absent.csv"), std::string::npos) << error.what();
  }
  Space other = space;
  other.parameters[1].name = "C";
  write_record(dir / "evaluations.csv", other, "GPU", "N=1", {{configuration_of(1, 1), 1.0}});
  EXPECT_THROW(read_prior_source(dir / "evaluations.csv", space), InputError);
}

TEST(PriorSources, TheDatabaseIsEveryRecordOfTheKernelButTheRunsOwn) {
  const fs::path runs = fresh_directory("database");
  const Space space = two_parameter_space();
  write_record(runs / "tiny/sm_90/N=1024/evaluations.csv", space, "H200", "N=1024", {{configuration_of(1, 1), 1.0}});
  write_record(runs / "tiny/sm_90/N=4096/evaluations.csv", space, "H200", "N=4096", {{configuration_of(1, 1), 1.0}});
  write_record(runs / "tiny/sm_80/N=4096/A100/evaluations.csv", space, "A100", "N=4096", {{configuration_of(1, 1), 1.0}});
  write_record(runs / "other/sm_90/N=4096/evaluations.csv", space, "H200", "N=4096", {{configuration_of(1, 1), 1.0}});
  const std::vector<fs::path> files =
      database_prior_files(runs, "tiny", runs / "tiny/sm_90/N=4096/evaluations.csv");
  EXPECT_EQ(files, (std::vector<fs::path>{runs / "tiny/sm_80/N=4096/A100/evaluations.csv",
                                          runs / "tiny/sm_90/N=1024/evaluations.csv"}));
  EXPECT_TRUE(database_prior_files(runs, "absent").empty());
}

}  // namespace
}  // namespace kernlathe
