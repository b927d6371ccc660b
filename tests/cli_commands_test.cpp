// The `tune` binary end to end on the CPU: exit codes, messages, and that bad input writes nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `tune` with arguments in the repository root; captures stdout and stderr separately.
CommandResult run_tune(const std::string& arguments) {
  const fs::path err_file = fs::temp_directory_path() / ("tune_cli_test_err_" + std::to_string(::getpid()));
  const std::string command = std::string("cd '") + KERNLATHE_SOURCE_DIR + "' && '" + TUNE_BINARY + "' " + arguments +
                              " 2>'" + err_file.string() + "'";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  result.err.assign(std::istreambuf_iterator<char>(err), {});
  fs::remove(err_file);
  return result;
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "tune_cli_test";
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return path;
}

TEST(Cli, HelpListsSubcommandsAndExitsZero) {
  CommandResult result = run_tune("--help");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* command : {"space", "validate", "compile-check", "run", "best"})
    EXPECT_NE(result.out.find(command), std::string::npos) << command;
}

TEST(Cli, EverySubcommandHasHelp) {
  for (const char* command : {"space", "validate", "compile-check", "run", "best"}) {
    CommandResult result = run_tune(std::string(command) + " --help");
    EXPECT_EQ(result.exit_code, 0) << command;
    EXPECT_NE(result.out.find("--"), std::string::npos) << command;
  }
}

TEST(Cli, UnknownSubcommandOrOptionIsUsageError) {
  EXPECT_EQ(run_tune("frobnicate").exit_code, 2);
  EXPECT_EQ(run_tune("space kernels/saxpy.yaml --arch sm_90 --no-such-flag").exit_code, 2);
  EXPECT_EQ(run_tune("").exit_code, 2);
}

TEST(Cli, SpaceJsonHasTotalValidAndParameters) {
  CommandResult result = run_tune("space kernels/saxpy.yaml --arch sm_90 --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json output = nlohmann::json::parse(result.out);
  // saxpy: 5 x 3 x 8 x 2 x 6 combinations; GRID_STRIDE=false fixes BLOCKS_PER_SM=4: 120 + 720 valid.
  EXPECT_EQ(output["total"].get<double>(), 1440.0);
  EXPECT_EQ(output["valid"].get<std::uint64_t>(), 840u);
  ASSERT_EQ(output["parameters"].size(), 5u);
  EXPECT_EQ(output["parameters"][0]["name"], "BLOCK");
}

TEST(Cli, SpaceListAndSample) {
  CommandResult listed = run_tune("space saxpy --arch sm_90 --list 3");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("BLOCK="), std::string::npos);
  CommandResult sampled = run_tune("space saxpy --arch sm_90 --sample 4 --seed 9 --json");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  nlohmann::json output = nlohmann::json::parse(sampled.out);
  EXPECT_EQ(output["configurations"].size(), 4u);
  CommandResult again = run_tune("space saxpy --arch sm_90 --sample 4 --seed 9 --json");
  EXPECT_EQ(nlohmann::json::parse(again.out)["configurations"], output["configurations"]);
}

TEST(Cli, SpaceWithoutGpuOrArchExitsThree) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "a GPU driver is present; this checks the no-GPU path";
  CommandResult result = run_tune("space kernels/saxpy.yaml");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("--arch"), std::string::npos) << result.err;
}

TEST(Cli, RunWithoutGpuExitsThreeWithClearMessage) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "a GPU driver is present; this checks the no-GPU path";
  CommandResult result = run_tune("run kernels/saxpy.yaml --out /tmp/tune_cli_test_no_gpu --budget 1");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("no usable GPU"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists("/tmp/tune_cli_test_no_gpu/evaluations.csv"));
}

TEST(Cli, ValidateShippedSpecs) {
  for (const auto& entry : fs::directory_iterator(fs::path(KERNLATHE_SOURCE_DIR) / "kernels")) {
    if (entry.path().extension() != ".yaml") continue;
    CommandResult result = run_tune("validate " + entry.path().string());
    EXPECT_EQ(result.exit_code, 0) << entry.path() << ": " << result.err;
    EXPECT_NE(result.out.find(": ok:"), std::string::npos);
  }
}

TEST(Cli, MisspelledKeyIsBadInputWithSuggestion) {
  const std::string spec_text = std::string(
      "name: broken\n"
      "template: ") + KERNLATHE_SOURCE_DIR + "/templates/saxpy.cu\n"
      "entry: saxpy\n"
      "space:\n"
      "  parameters:\n"
      "    - {name: BLOCK, values: [64, 128]}\n"
      "  constriants:\n"
      "    - BLOCK > 0\n"
      "arguments: []\n"
      "launch: {grid: [1], block: [BLOCK]}\n";
  const fs::path spec = write_temp("misspelled.yaml", spec_text);
  CommandResult result = run_tune("validate " + spec.string());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("misspelled.yaml:7"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("constraints"), std::string::npos) << result.err;
}

TEST(Cli, ConstraintLeavingNothingValidIsBadInput) {
  const std::string spec_text = std::string(
      "name: empty\n"
      "template: ") + KERNLATHE_SOURCE_DIR + "/templates/saxpy.cu\n"
      "entry: saxpy\n"
      "space:\n"
      "  parameters:\n"
      "    - {name: BLOCK, values: [64, 128]}\n"
      "  constraints:\n"
      "    - BLOCK > 4096\n"
      "arguments: []\n"
      "launch: {grid: [1], block: [BLOCK]}\n";
  const fs::path spec = write_temp("empty_space.yaml", spec_text);
  CommandResult result = run_tune("space " + spec.string() + " --arch sm_90");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("no valid configuration"), std::string::npos) << result.err;
}

TEST(Cli, DivisionByZeroForSomeConfigurationIsBadInput) {
  const std::string spec_text = std::string(
      "name: divides\n"
      "template: ") + KERNLATHE_SOURCE_DIR + "/templates/saxpy.cu\n"
      "entry: saxpy\n"
      "space:\n"
      "  parameters:\n"
      "    - {name: SHIFT, values: [0, 1, 2]}\n"
      "  constraints:\n"
      "    - 64 // SHIFT > 1\n"
      "arguments: []\n"
      "launch: {grid: [1], block: [64]}\n";
  const fs::path spec = write_temp("divides.yaml", spec_text);
  CommandResult result = run_tune("validate " + spec.string());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("SHIFT=0"), std::string::npos) << result.err;
}

TEST(Cli, MissingSpecAndBadProblemAreBadInput) {
  CommandResult missing = run_tune("validate kernels/does_not_exist.yaml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("does_not_exist"), std::string::npos);
  CommandResult bad_problem = run_tune("space saxpy --arch sm_90 --problem NN=5");
  EXPECT_EQ(bad_problem.exit_code, 2);
  EXPECT_NE(bad_problem.err.find("NN"), std::string::npos) << bad_problem.err;
  CommandResult bad_arch = run_tune("space saxpy --arch sm_42");
  EXPECT_EQ(bad_arch.exit_code, 2);
  EXPECT_NE(bad_arch.err.find("sm_90"), std::string::npos) << bad_arch.err;
}

TEST(Cli, BestOnEmptyCacheFails) {
  CommandResult result = run_tune("best no_such_kernel --dir /tmp/tune_cli_test_empty_cache");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no_such_kernel"), std::string::npos);
}

TEST(Cli, CompileCheckSaxpyWithoutGpu) {
  CommandResult result = run_tune("compile-check saxpy --arch sm_80 --sample 3 --jobs 2 --json");
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  nlohmann::json output = nlohmann::json::parse(result.out);
  EXPECT_EQ(output["failed"], 0);
  EXPECT_GE(output["compiled"].get<int>(), 3);
}

// NVRTC compiles every shipped template (no GPU needed): the default configuration and a sample, for the
// architectures the project ships for.
TEST(Cli, CompileCheckEveryShippedSpec) {
  for (const auto& entry : fs::directory_iterator(fs::path(KERNLATHE_SOURCE_DIR) / "kernels")) {
    if (entry.path().extension() != ".yaml") continue;
    for (const char* arch : {"sm_80", "sm_90"}) {
      CommandResult result = run_tune("compile-check " + entry.path().string() + " --arch " + arch +
                                      " --sample 4 --json");
      ASSERT_EQ(result.exit_code, 0) << entry.path() << " " << arch << ": " << result.err << result.out;
      nlohmann::json output = nlohmann::json::parse(result.out);
      EXPECT_EQ(output["failed"], 0) << entry.path() << " " << arch;
      EXPECT_GE(output["compiled"].get<int>(), 4) << entry.path() << " " << arch;
    }
  }
}

TEST(Cli, CompileCheckReportsAFailureWithItsLog) {
  CommandResult result = run_tune("compile-check tests/data/faults/faults.yaml --arch sm_90 --all --json");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  nlohmann::json output = nlohmann::json::parse(result.out);
  EXPECT_EQ(output["failed"], 2);  // FAULT=4, for both block sizes
  ASSERT_FALSE(output["failures"].empty());
  EXPECT_NE(output["failures"][0]["log"].get<std::string>().find("planted compile failure"), std::string::npos);
}

}  // namespace
