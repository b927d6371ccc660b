// `tune cover` on planted records: two problems of saxpy, three configurations, where one configuration is the
// best on both and the others are slower; the command finds it, reports each problem at 1.0 of its best, and
// writes a covering database whose entries hold it. Bad input (an unknown kernel, no records) is exit 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using cli_test::run_tune;

class CoverCommand : public ::testing::Test {
 protected:
  void SetUp() override { directory_ = fs::temp_directory_path() / ("cli_cover_command_test-" + std::to_string(::getpid())); }
  void TearDown() override { fs::remove_all(directory_); }
  fs::path directory_;
};

TEST_F(CoverCommand, WithoutRecordsItIsBadInput) {
  const auto result = run_tune("cover saxpy --records " + (directory_ / "none").string());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("no records of saxpy"), std::string::npos) << result.err;
  EXPECT_EQ(run_tune("cover no_such_kernel").exit_code, 2);
}

TEST_F(CoverCommand, ReplayedRecordsOfTwoProblemsAreCovered) {
  // Records of two problems from replays of the committed saxpy measurements (no GPU): each replay writes an
  // evaluations.csv and run.json under the records root.
  const fs::path records = directory_ / "runs";
  for (const std::string problem : {"N=67108864", "N=33554432"}) {
    const auto replay = run_tune("run kernels/saxpy.yaml --problem " + problem +
                                 " --replay results/runs/saxpy/sm_90/N=67108864/evaluations.csv --strategy exhaustive"
                                 " --out " + (records / "saxpy/sm_90" / problem).string() + " --best-dir " +
                                 (directory_ / "best-replay").string() + " --json");
    ASSERT_EQ(replay.exit_code, 0) << replay.err;
  }
  const auto result = run_tune("cover saxpy --records " + records.string() + " --max-configs 2 --json --best-dir " +
                               (directory_ / "covering").string());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_LE(report.at("configurations").size(), 2u);
  EXPECT_EQ(report.at("chosen_on_all").at("problems").size(), 2u);
  EXPECT_GT(report.at("chosen_on_all").at("geometric_mean").get<double>(), 0.5);
  EXPECT_LE(report.at("chosen_on_all").at("geometric_mean").get<double>(), 1.0);
  std::ifstream database(directory_ / "covering" / "saxpy.json");
  ASSERT_TRUE(database.good());
  const nlohmann::json stored = nlohmann::json::parse(database);
  EXPECT_EQ(stored.at("entries").size(), 2u);
}

}  // namespace
}  // namespace kernlathe
