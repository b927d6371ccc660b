// What `tune report` hands to its chart script, computed without Python: grouping recordings into pages, the budget
// grid of the convergence curves, the replay of a committed record, the configurations as columns, and one kernel's
// page with its rooflines and replays.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/report/chart_data.h"
#include "tuner/report/roofline.h"

namespace kernlathe {
namespace {

Recording named(const std::string& kernel, const std::string& device) {
  Recording recording;
  recording.kernel = kernel;
  recording.device = device;
  return recording;
}

TEST(ReportChartData, GroupsRecordingsByKernelInFirstSeenOrder) {
  const std::vector<KernelGroup> groups = group_by_kernel(
      {named("gemm", "H200"), named("conv/3x3", "H200"), named("gemm", "H100"), named("conv_3x3", "H100")});
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].kernel, "gemm");
  EXPECT_EQ(groups[0].recordings, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(groups[1].page_name, "conv_3x3");  // '/' replaced: a page name never leaves the output directory
  EXPECT_EQ(groups[2].page_name, "conv_3x3-2");  // a different kernel keeps its own page
}

TEST(ReportChartData, ConvergenceBudgetsAreGeometricUpToTheLargest) {
  EXPECT_EQ(convergence_budgets(200),
            (std::vector<std::uint64_t>{1, 2, 3, 5, 7, 10, 20, 30, 50, 70, 100, 200}));
  EXPECT_EQ(convergence_budgets(4), (std::vector<std::uint64_t>{1, 2, 3, 4}));
}

TEST(ReportChartData, ReplaysACommittedRecordWithItsSpec) {
  const std::filesystem::path source = KERNLATHE_SOURCE_DIR;
  const std::vector<Recording> recordings =
      load_recordings({source / "results/runs/conv3x3/sm_90/h200/W=8192_H=8192"});
  ASSERT_EQ(recordings.size(), 1u);
  const nlohmann::ordered_json replay = replay_json(recordings[0], source / "kernels", 2);
  ASSERT_FALSE(replay.contains("unavailable")) << replay.dump();
  EXPECT_EQ(replay["recorded"], 1698);
  const auto& random = replay["strategies"]["random"];
  ASSERT_EQ(random["budget"].size(), convergence_budgets(200).size());
  // best/optimum never rises with the budget, and never goes below 1
  double previous = 1e300;
  for (const auto& value : random["median"]) {
    EXPECT_GE(value.get<double>(), 1.0);
    EXPECT_LE(value.get<double>(), previous);
    previous = value.get<double>();
  }
  EXPECT_EQ(replay_json(recordings[0], source / "no-such-folder", 2)["unavailable"].get<std::string>().find("no spec"), 0u);
}

TEST(ReportChartData, ConfigurationsAsColumns) {
  const std::filesystem::path source = KERNLATHE_SOURCE_DIR;
  const Recording recording = load_recordings({source / "results/runs/conv3x3/sm_90/h200/W=8192_H=8192"})[0];
  const nlohmann::ordered_json columns = configurations_json(recording);
  EXPECT_EQ(columns["parameters"].size(), 5u);
  EXPECT_EQ(columns["values"][0].size(), 1698u);
  EXPECT_EQ(columns["time_ms"].size(), 1698u);
  EXPECT_TRUE(columns["stream_stages"].is_null());  // not a streamed record
}

TEST(ReportChartData, KernelPageHoldsItsRooflineAndLeavesOutTheReplayWhenAsked) {
  const std::filesystem::path source = KERNLATHE_SOURCE_DIR;
  ImportanceOptions options;
  options.resamples = 2;
  const AnalysisReport report = analyse_recordings(
      load_recordings({source / "results/runs/conv3x3/sm_90/h200/W=8192_H=8192"}), options);
  const std::vector<KernelGroup> groups = group_by_kernel(report.recordings);
  ASSERT_EQ(groups.size(), 1u);
  ChartSettings settings;
  settings.kernels_directory = source / "kernels";
  settings.ceiling_files = read_ceiling_files({source / "results/ceilings/h200.json"});
  settings.replay = false;
  std::vector<std::string> progress;
  const nlohmann::ordered_json page =
      kernel_page_json(report, groups[0], settings, [&](const std::string& line) { progress.push_back(line); });
  EXPECT_EQ(page["kernel"], "conv3x3");
  EXPECT_EQ(page["page"], "conv3x3.html");
  ASSERT_EQ(page["recordings"].size(), 1u);
  const nlohmann::ordered_json& recording = page["recordings"][0];
  EXPECT_EQ(recording["replay"]["unavailable"], "left out (--no-replay)");
  // The roofline is the one roofline.h places, not a copy computed differently.
  EXPECT_EQ(recording["roofline"], roofline_json(report.recordings[0], report.analyses[0].landscape,
                                                 settings.kernels_directory, settings.ceiling_files));
  EXPECT_FALSE(recording["roofline"].contains("unavailable")) << recording["roofline"].dump();
  EXPECT_EQ(recording["configurations"]["time_ms"].size(), 1698u);
  EXPECT_TRUE(progress.empty());  // no replay announced, no point above its roof
}

}  // namespace
}  // namespace kernlathe
