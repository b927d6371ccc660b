// `tune report`'s pieces that need no Python: grouping recordings into pages, the budget grid of the convergence
// curves, the replay of a committed record, and the exit code when the interpreter cannot draw.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tuner/cli/report_command.h"

namespace kernlathe {
namespace {

Recording named(const std::string& kernel, const std::string& device) {
  Recording recording;
  recording.kernel = kernel;
  recording.device = device;
  return recording;
}

TEST(ReportCommand, GroupsRecordingsByKernelInFirstSeenOrder) {
  const std::vector<KernelGroup> groups = group_by_kernel(
      {named("gemm", "H200"), named("conv/3x3", "H200"), named("gemm", "H100"), named("conv_3x3", "H100")});
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].kernel, "gemm");
  EXPECT_EQ(groups[0].recordings, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(groups[1].page_name, "conv_3x3");  // '/' replaced: a page name never leaves the output directory
  EXPECT_EQ(groups[2].page_name, "conv_3x3-2");  // a different kernel keeps its own page
}

TEST(ReportCommand, ConvergenceBudgetsAreGeometricUpToTheLargest) {
  EXPECT_EQ(convergence_budgets(200),
            (std::vector<std::uint64_t>{1, 2, 3, 5, 7, 10, 20, 30, 50, 70, 100, 200}));
  EXPECT_EQ(convergence_budgets(4), (std::vector<std::uint64_t>{1, 2, 3, 4}));
}

TEST(ReportCommand, ReplaysACommittedRecordWithItsSpec) {
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

TEST(ReportCommand, ConfigurationsAsColumns) {
  const std::filesystem::path source = KERNLATHE_SOURCE_DIR;
  const Recording recording = load_recordings({source / "results/runs/conv3x3/sm_90/h200/W=8192_H=8192"})[0];
  const nlohmann::ordered_json columns = configurations_json(recording);
  EXPECT_EQ(columns["parameters"].size(), 5u);
  EXPECT_EQ(columns["values"][0].size(), 1698u);
  EXPECT_EQ(columns["time_ms"].size(), 1698u);
  EXPECT_TRUE(columns["stream_stages"].is_null());  // not a streamed record
}

TEST(ReportCommand, MissingMatplotlibIsExitOneWithTheFix) {
  const std::string command = std::string("cd '") + KERNLATHE_SOURCE_DIR + "' && '" + TUNE_BINARY +
                              "' report results/runs/conv3x3/sm_90/h200/W=8192_H=8192 -o /tmp/report-no-python-" +
                              std::to_string(::getpid()) + " --python /bin/false 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  EXPECT_NE(output.find("scripts/setup-python.sh"), std::string::npos) << output;
  EXPECT_FALSE(std::filesystem::exists("/tmp/report-no-python-" + std::to_string(::getpid())));  // nothing written
}

}  // namespace
}  // namespace kernlathe
