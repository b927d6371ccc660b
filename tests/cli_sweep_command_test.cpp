// `tune sweep WORKLOAD` without a GPU: every problem is checked before anything runs (a symbol the spec lacks is
// exit 2 and writes nothing), a file that is not a workload is refused, the first problem's missing GPU is exit 3
// with the state recorded, and problems a state file marks done are skipped.
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

class SweepCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("cli_sweep_command_test-" + std::to_string(::getpid()));
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path write_workload(const std::string& tasks) {
    const fs::path file = directory_ / "workload.yaml";
    std::ofstream(file) << "workload: small\ntasks:\n" << tasks;
    return file;
  }

  fs::path directory_;
};

TEST_F(SweepCommand, AProblemTheSpecCannotTakeIsBadInputBeforeAnythingRuns) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048]}\n  - spec: saxpy\n    problems: [{Q: 3}]\n");
  const fs::path out = directory_ / "out";
  const auto result = run_tune("sweep " + file.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("Q=3"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("workload.yaml"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(SweepCommand, AKernelSpecIsNotAWorkload) {
  const auto result = run_tune("sweep kernels/saxpy.yaml --out " + (directory_ / "out").string());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("not a workload file"), std::string::npos) << result.err;
}

TEST_F(SweepCommand, WithoutAGpuTheFirstProblemEndsTheSweepWithExit3AndItsStateIsKept) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048]}\n");
  const fs::path out = directory_ / "out";
  const auto result = run_tune("sweep " + file.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 3) << result.err;
  std::ifstream in(out / "state.json");
  const nlohmann::json state = nlohmann::json::parse(in);
  EXPECT_EQ(state.at("workload"), "small");
  const nlohmann::json& first = state.at("problems").at("01-saxpy-N=1024");
  EXPECT_EQ(first.at("status"), "failed");
  EXPECT_EQ(first.at("exit"), 3);
  EXPECT_FALSE(state.at("problems").contains("02-saxpy-N=2048"));  // never started
}

TEST_F(SweepCommand, ProblemsDoneBeforeAreSkippedAndTheNextOneRuns) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048]}\n");
  const fs::path out = directory_ / "out";
  fs::create_directories(out);
  std::ofstream(out / "state.json")
      << R"({"workload": "small", "file": "x", "problems": {"01-saxpy-N=1024": {"status": "done", "exit": 0}}})";
  const auto result = run_tune("sweep " + file.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 3) << result.err;  // the second problem needs the GPU
  EXPECT_NE(result.err.find("01-saxpy-N=1024 done before, skipped"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("2/2 02-saxpy-N=2048"), std::string::npos) << result.err;
  const auto restarted = run_tune("sweep " + file.string() + " --out " + out.string() + " --restart");
  EXPECT_NE(restarted.err.find("1/2 01-saxpy-N=1024"), std::string::npos) << restarted.err;
  EXPECT_EQ(restarted.err.find("skipped"), std::string::npos) << restarted.err;
}

}  // namespace
}  // namespace kernlathe
