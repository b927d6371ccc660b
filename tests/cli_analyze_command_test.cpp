// `tune analyze` end to end: the committed conv3x3 record of the H200, the community convolution landscapes of two
// GPUs (figures checked against the T4 files read independently), two hand-written records of one kernel on two
// GPUs, and bad input with exit code 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_test_support.h"
#include "analysis_test_support.h"
#include "tuner/search/t4_dataset.h"

namespace kernlathe {
namespace {

using testing::failed;
using testing::integer_parameter;
using testing::measured;
using testing::TemporaryFolder;
using testing::write_record;

using cli_test::CommandResult;
using cli_test::run_tune;

TEST(AnalyzeCommand, ConvolutionRecordOfTheH200) {
  const std::string folder = "results/runs/conv3x3/sm_90/W=8192_H=8192";
  const CommandResult result = run_tune("analyze " + folder + " --json --bootstrap 8");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["recordings"].size(), 1u);
  const auto& recording = json["recordings"][0];

  // The record read as plain text: one row per configuration, all ok; the smallest median time is the best.
  std::ifstream csv(std::string(KERNLATHE_SOURCE_DIR) + "/" + folder + "/evaluations.csv");
  std::string line;
  std::getline(csv, line);
  const std::size_t time_column = static_cast<std::size_t>(std::count(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(line.find("time_median_ms")), ','));
  std::size_t rows = 0;
  double best = std::numeric_limits<double>::infinity();
  while (std::getline(csv, line)) {
    ++rows;
    std::stringstream fields(line);
    std::string field;
    for (std::size_t column = 0; column <= time_column; ++column) std::getline(fields, field, ',');
    best = std::min(best, std::stod(field));
  }
  EXPECT_EQ(rows, 1698u);
  EXPECT_EQ(recording["evaluations"], rows);
  EXPECT_EQ(recording["valid"], rows);
  EXPECT_EQ(recording["device"], "NVIDIA H200");
  EXPECT_EQ(recording["problem"], "W=8192,H=8192");
  EXPECT_DOUBLE_EQ(recording["best_ms"].get<double>(), best);
  EXPECT_TRUE(recording["failures"].empty());
  // The kernel's algorithm choice dominates on this GPU: two thirds of the variance of log time.
  const auto& importance = recording["importance"];
  EXPECT_EQ(importance["resamples"], 8);
  ASSERT_EQ(importance["parameters"].size(), 5u);
  EXPECT_EQ(importance["parameters"][0]["parameter"], "ALGORITHM");
  EXPECT_GT(importance["parameters"][0]["main_effect"]["low"].get<double>(), 0.5);
  EXPECT_GT(importance["parameters"][0]["main_effect"]["low"].get<double>(),
            5 * importance["parameters"][1]["main_effect"]["high"].get<double>());
  EXPECT_TRUE(json["portability"].empty());  // one GPU only
  EXPECT_NE(result.err.find("analysed in"), std::string::npos);

  const CommandResult text = run_tune("analyze " + folder + "/evaluations.csv --bootstrap 2");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("== conv3x3 W=8192,H=8192 on NVIDIA H200 (sm_90)"), std::string::npos);
  EXPECT_NE(text.out.find("1698 configurations evaluated: 1698 valid, 0 failed"), std::string::npos);
}

TEST(AnalyzeCommand, CommunityLandscapesOfTwoGpusAreCompared) {
  // A subset of the community files (tests/data/t4/community/subset.py): every A4000 failure, a tenth of the rest.
  const std::string community = std::string(KERNLATHE_SOURCE_DIR) + "/tests/data/t4/community/";
  const CommandResult result = run_tune("analyze '" + community + "convolution-A4000.T4.json.gz' '" + community +
                                        "convolution-A6000.T4.json.gz' --json --bootstrap 2");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["portability"].size(), 1u);
  const auto& group = json["portability"][0];
  EXPECT_EQ(group["devices"], nlohmann::json::array({"A4000", "A6000"}));

  // Independently: each GPU's fastest correct result, and the time the other GPU recorded for it.
  const Space space = read_t1_space(community + "convolution.T1.json");
  const std::vector<Evaluation> a4000 = read_t4_results(community + "convolution-A4000.T4.json.gz", space);
  const std::vector<Evaluation> a6000 = read_t4_results(community + "convolution-A6000.T4.json.gz", space);
  auto fastest = [](const std::vector<Evaluation>& evaluations) {
    const Evaluation* best = nullptr;
    for (const Evaluation& evaluation : evaluations)
      if (evaluation.ok() && (best == nullptr || evaluation.time.median_ms < best->time.median_ms)) best = &evaluation;
    return best;
  };
  auto time_of = [](const std::vector<Evaluation>& evaluations, const Configuration& configuration) {
    for (const Evaluation& evaluation : evaluations)
      if (evaluation.configuration == configuration) return evaluation;
    return Evaluation{};
  };
  const Evaluation* best_4000 = fastest(a4000);
  const Evaluation* best_6000 = fastest(a6000);
  EXPECT_DOUBLE_EQ(group["best"][0]["optimum_ms"].get<double>(), best_4000->time.median_ms);
  EXPECT_DOUBLE_EQ(group["best"][1]["optimum_ms"].get<double>(), best_6000->time.median_ms);
  const Evaluation on_6000 = time_of(a6000, best_4000->configuration);
  ASSERT_TRUE(on_6000.ok());
  EXPECT_EQ(group["matrix"][0][1]["state"], "measured");
  EXPECT_DOUBLE_EQ(group["matrix"][0][1]["time_ms"].get<double>(), on_6000.time.median_ms);
  EXPECT_DOUBLE_EQ(group["matrix"][0][1]["fraction_of_optimum"].get<double>(),
                   best_6000->time.median_ms / on_6000.time.median_ms);
  std::size_t faster = 0;
  for (const Evaluation& evaluation : a6000) faster += evaluation.ok() && evaluation.time.median_ms < on_6000.time.median_ms;
  EXPECT_EQ(group["matrix"][0][1]["rank"], faster + 1);
  EXPECT_DOUBLE_EQ(group["matrix"][0][0]["fraction_of_optimum"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(group["matrix"][1][1]["fraction_of_optimum"].get<double>(), 1.0);
  // The portable default is at least as good in the worst case as either GPU's own best.
  const double worst = group["portable_default"]["worst_fraction"].get<double>();
  EXPECT_GE(worst, group["matrix"][0][1]["fraction_of_optimum"].get<double>());
  EXPECT_GE(worst, group["matrix"][1][0]["fraction_of_optimum"].get<double>());
  EXPECT_LE(worst, 1.0);

  // The A4000 landscape records 161 failures; every one is accounted for by kind.
  const auto& failures = json["recordings"][0]["failures"];
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0]["kind"], "compile_error");
  EXPECT_EQ(failures[0]["count"], 6);
  EXPECT_EQ(failures[1]["kind"], "launch_or_resources");
  EXPECT_EQ(failures[1]["count"], 155);
  EXPECT_FALSE(failures[1]["suggestions"].empty());
}

TEST(AnalyzeCommand, TwoHandWrittenRecordsGiveTheHandComputedMatrix) {
  // The records of the portability unit test, as `tune run` writes them: best of Alpha (1,1) is 0.32 of Beta's
  // optimum there (rank 4 of 4); Beta's best (2,3) was not measured on Alpha; the portable default (2,2) is 0.8 of
  // Alpha's optimum and 0.5 of Beta's.
  TemporaryFolder folder("analyze-command");
  const std::vector<Parameter> parameters = {integer_parameter("P", {1, 2}), integer_parameter("Q", {1, 2, 3})};
  auto at = [](std::int64_t p, std::int64_t q) { return Configuration{Value{p}, Value{q}}; };
  write_record(folder.path() / "toy" / "sm_80" / "N=64", parameters,
               {measured(at(1, 1), 1.0), measured(at(1, 2), 2.0), measured(at(2, 1), 4.0), measured(at(2, 2), 1.25),
                measured(at(1, 3), 5.0)},
               "Alpha");
  write_record(folder.path() / "toy" / "sm_90" / "N=64", parameters,
               {measured(at(1, 1), 2.5), measured(at(2, 1), 1.0), measured(at(2, 2), 1.6), measured(at(2, 3), 0.8),
                failed(at(1, 2), Status::launch_error)},
               "Beta");
  const CommandResult result = run_tune("analyze '" + folder.path().string() + "' --json --bootstrap 2");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["recordings"].size(), 2u);
  ASSERT_EQ(json["portability"].size(), 1u);
  const auto& group = json["portability"][0];
  EXPECT_EQ(group["devices"], nlohmann::json::array({"Alpha", "Beta"}));
  const nlohmann::json expected_matrix = nlohmann::json::parse(R"([
    [{"state": "measured", "time_ms": 1.0, "fraction_of_optimum": 1.0, "rank": 1},
     {"state": "measured", "time_ms": 2.5, "fraction_of_optimum": 0.32, "rank": 4}],
    [{"state": "not_measured"},
     {"state": "measured", "time_ms": 0.8, "fraction_of_optimum": 1.0, "rank": 1}]])");
  ASSERT_EQ(group["matrix"].size(), 2u);
  for (std::size_t row = 0; row < 2; ++row)
    for (std::size_t column = 0; column < 2; ++column) {
      const auto& cell = group["matrix"][row][column];
      const auto& expected = expected_matrix[row][column];
      EXPECT_EQ(cell["state"], expected["state"]) << row << "," << column;
      if (expected["state"] != "measured") continue;
      EXPECT_DOUBLE_EQ(cell["time_ms"].get<double>(), expected["time_ms"].get<double>());
      EXPECT_DOUBLE_EQ(cell["fraction_of_optimum"].get<double>(), expected["fraction_of_optimum"].get<double>());
      EXPECT_EQ(cell["rank"], expected["rank"]);
    }
  EXPECT_EQ(group["valid_everywhere"], 3);
  EXPECT_EQ(group["portable_default"]["configuration"], nlohmann::json::parse(R"({"P": 2, "Q": 2})"));
  EXPECT_DOUBLE_EQ(group["portable_default"]["worst_fraction"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(group["portable_default"]["on"][0]["fraction_of_optimum"].get<double>(), 0.8);

  const CommandResult text = run_tune("analyze '" + folder.path().string() + "' --bootstrap 2");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("not measured"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("0.320 (#4)"), std::string::npos) << text.out;
}

// The roofline of tune analyze: the H200 conv3x3 record against the committed H200 ceilings (memory-bound at 2.25
// flop per byte), the H100 GEMM record against the H100's tensor roof; a bad ceiling file is exit 2.
TEST(AnalyzeCommand, RooflinePlacesEachBestAgainstItsGpusCeilings) {
  const CommandResult result = run_tune(
      "analyze results/runs/conv3x3/sm_90/h200/W=8192_H=8192 results/runs/gemm_bf16/sm_90/h100-wgmma-only "
      "--ceilings results/ceilings/h200.json --ceilings results/ceilings/h100.json --json --bootstrap 2");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["rooflines"].size(), 2u);
  const auto& convolution = json["rooflines"][0];
  EXPECT_EQ(convolution["bound"], "memory");
  EXPECT_DOUBLE_EQ(convolution["intensity"].get<double>(), 2.25);
  EXPECT_NEAR(convolution["attainable_gflops"].get<double>(), 4239.6 * 2.25, 1e-6);
  EXPECT_NEAR(convolution["fraction"].get<double>(),
              convolution["gflops"].get<double>() / convolution["attainable_gflops"].get<double>(), 1e-12);
  const auto& gemm = json["rooflines"][1];
  EXPECT_EQ(gemm["bound"], "compute");
  EXPECT_DOUBLE_EQ(gemm["attainable_gflops"].get<double>(), 889181.2);

  const CommandResult text = run_tune("analyze results/runs/conv3x3/sm_90/h200/W=8192_H=8192 --ceilings "
                                      "results/ceilings/h200.json --bootstrap 2");
  EXPECT_NE(text.out.find("% of the attainable 9539.1 GFLOP/s (memory-bound)"), std::string::npos) << text.out;

  EXPECT_EQ(run_tune("analyze results/runs/conv3x3/sm_90/h200/W=8192_H=8192 --ceilings README.md").exit_code, 2);
}

TEST(AnalyzeCommand, BadInputExitsTwoNamingTheFile) {
  TemporaryFolder folder("analyze-command");
  const std::vector<Parameter> parameters = {integer_parameter("P", {1, 2})};

  const std::string missing = (folder.path() / "missing" / "evaluations.csv").string();
  CommandResult result = run_tune("analyze '" + missing + "'");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find(missing + ": no such file or folder"), std::string::npos) << result.err;

  const auto header_only = write_record(folder.path() / "header", parameters, {}, "GPU");
  result = run_tune("analyze '" + header_only.string() + "'");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find(header_only.string()), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("no rows"), std::string::npos) << result.err;

  const auto no_valid = write_record(folder.path() / "failed", parameters,
                                     {failed({Value{std::int64_t{1}}}, Status::compile_error),
                                      failed({Value{std::int64_t{2}}}, Status::wrong_result)},
                                     "GPU");
  result = run_tune("analyze '" + no_valid.string() + "'");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find(no_valid.string()), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("no configuration in the recording ran correctly"), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty());

  const auto broken = folder.path() / "broken" / "evaluations.csv";
  std::filesystem::create_directories(broken.parent_path());
  std::filesystem::copy_file(header_only, broken);
  std::ofstream(broken, std::ios::app) << "feedc0de,1,ok,,not-a-number,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0\n";
  result = run_tune("analyze '" + broken.string() + "'");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find(broken.string() + ":2"), std::string::npos) << result.err;

  EXPECT_EQ(run_tune("analyze").exit_code, 2);
  EXPECT_EQ(run_tune("analyze results/runs/conv3x3/sm_90/W=8192_H=8192 --bootstrap 1").exit_code, 2);
  EXPECT_EQ(run_tune("analyze README.md").exit_code, 2);
}

}  // namespace
}  // namespace kernlathe
