// `tune run` on recorded data (no GPU): a default configuration that breaks a constraint is replaced by the first
// valid one, said once and recorded; `--config` measures exactly the configurations given, and refuses one that is
// not in the space or breaks a constraint, naming which. In this process, a run writes its report where its caller
// says (RunCommand::run(RunOutput)), with every stderr line under the caller's prefix, as `tune sweep` runs them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis_test_support.h"
#include "cli_test_support.h"
#include "session_test_support.h"
#include "tuner/cli/run_command.h"
#include "tuner/measure/measurement.h"
#include "tuner/session/measurer.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using cli_test::CommandResult;
using cli_test::run_tune;
using testing::integer_parameter;
using testing::measured;
using testing::TemporaryFolder;
using testing::write_record;

const fs::path source_directory(KERNLATHE_SOURCE_DIR);
const fs::path first_valid_default = source_directory / "tests/data/cli/first_valid_default.yaml";
const fs::path saxpy_spec = source_directory / "kernels/saxpy.yaml";
const fs::path saxpy_csv = source_directory / "results/runs/saxpy/sm_90/N=67108864/evaluations.csv";

std::size_t occurrences(const std::string& text, const std::string& piece) {
  std::size_t count = 0;
  for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++count;
  return count;
}

std::size_t lines_of(const fs::path& file) {
  std::ifstream input(file);
  return static_cast<std::size_t>(std::count(std::istreambuf_iterator<char>(input), {}, '\n'));
}

nlohmann::json last_run(const fs::path& folder) {
  std::ifstream input(folder / "run.json");
  return nlohmann::json::parse(input)["runs"].back();
}

const std::string fallback_note =
    "note: the declared default configuration (BLOCK=128) breaks the constraint 'BLOCK != 128' (" +
    first_valid_default.string() + ":10:";

TEST(FirstValidDefault, ValidateAcceptsTheSpecAndSaysWhichDefaultStandsIn) {
  const CommandResult result = run_tune("validate '" + first_valid_default.string() + "' --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(occurrences(result.err, fallback_note), 1u) << result.err;
  EXPECT_NE(result.err.find("the first valid configuration (BLOCK=64) stands for the default"), std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["default"], nlohmann::json({{"BLOCK", 64}}));
  EXPECT_NE(json["default_note"].get<std::string>().find("BLOCK=64"), std::string::npos);
}

TEST(FirstValidDefault, ARunStartsFromItSaysSoOnceAndRecordsIt) {
  TemporaryFolder folder("first-valid-default");
  const std::vector<Parameter> parameters = {integer_parameter("BLOCK", {64, 128, 256})};
  const std::vector<Evaluation> rows = {measured({Value{std::int64_t{64}}}, 2.0),
                                        measured({Value{std::int64_t{256}}}, 1.0)};
  const fs::path csv =
      write_record(folder.path() / "recorded", parameters, rows, "Replayed GPU", "first_valid_default", "N=4096");
  const fs::path out = folder.path() / "out";
  const CommandResult result = run_tune("run '" + first_valid_default.string() + "' --replay '" + csv.string() +
                                        "' --out '" + out.string() + "' --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(occurrences(result.err, fallback_note), 1u) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["default_time_ms"], 2.0) << "the default is BLOCK=64's row";
  EXPECT_EQ(json["best"][0]["configuration"], nlohmann::json({{"BLOCK", 256}}));
  EXPECT_DOUBLE_EQ(json["best"][0]["speedup_over_default"].get<double>(), 2.0);
  const std::string recorded = last_run(out)["extra"]["default_configuration"].get<std::string>();
  EXPECT_NE(recorded.find("the first valid configuration (BLOCK=64) stands for the default"), std::string::npos)
      << recorded;
}

// A run at a problem where the space's problem default applies starts from it, says so once and records it; at the
// spec's own problem the declared default stands, and nothing is said.
TEST(ProblemDefault, ARunStartsFromTheSpacesDefaultForItsProblem) {
  const fs::path spec = source_directory / "tests/data/cli/problem_default.yaml";
  TemporaryFolder folder("problem-default");
  const std::vector<Parameter> parameters = {integer_parameter("BLOCK", {64, 128, 256})};
  const std::vector<Evaluation> rows = {measured({Value{std::int64_t{64}}}, 1.0),
                                        measured({Value{std::int64_t{128}}}, 3.0),
                                        measured({Value{std::int64_t{256}}}, 2.0)};
  const auto run_at = [&](const std::string& problem) {
    const fs::path csv = write_record(folder.path() / problem / "recorded", parameters, rows, "Replayed GPU",
                                      "problem_default", problem);
    const fs::path out = folder.path() / problem / "out";
    return std::pair{run_tune("run '" + spec.string() + "' --problem " + problem + " --replay '" + csv.string() +
                              "' --out '" + out.string() + "' --json"),
                     out};
  };
  const std::string note = "tune: note: the space's default for this problem (N < 1024 holds, " + spec.string() +
                           ":11:7) stands for the default configuration: BLOCK=256\n";
  const auto [small, small_out] = run_at("N=512");
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_EQ(occurrences(small.err, note), 1u) << small.err;
  const nlohmann::json json = nlohmann::json::parse(small.out);
  EXPECT_EQ(json["default_time_ms"], 2.0) << "the default is BLOCK=256's row";
  EXPECT_DOUBLE_EQ(json["best"][0]["speedup_over_default"].get<double>(), 2.0);
  EXPECT_EQ(last_run(small_out)["extra"]["default_configuration"].get<std::string>() + "\n",
            note.substr(std::string("tune: note: ").size()));

  const auto [large, large_out] = run_at("N=4096");
  ASSERT_EQ(large.exit_code, 0) << large.err;
  EXPECT_EQ(large.err.find("the space's default for this problem"), std::string::npos) << large.err;
  EXPECT_EQ(nlohmann::json::parse(large.out)["default_time_ms"], 3.0) << "the default is the declared BLOCK=128's row";
}

TEST(GivenConfigurations, ExactlyTheGivenOnesAreMeasuredRecordedAndRanked) {
  TemporaryFolder folder("given-configurations");
  const fs::path out = folder.path() / "out";
  // BLOCK=64 with the other parameters at their defaults; the second names every parameter.
  const CommandResult result = run_tune(
      "run '" + saxpy_spec.string() + "' --replay '" + saxpy_csv.string() + "' --out '" + out.string() +
      "' --json --config BLOCK=64 --config BLOCK=512,VEC=4,ITEMS=2,GRID_STRIDE=false,BLOCKS_PER_SM=4");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["evaluated"], 2);
  ASSERT_EQ(json["best"].size(), 2u);
  std::vector<nlohmann::json> ranked;
  for (const auto& entry : json["best"]) ranked.push_back(entry["configuration"]);
  const auto saxpy = [](int block, int vec, int items) {
    return nlohmann::json{{"BLOCK", block}, {"VEC", vec}, {"ITEMS", items}, {"GRID_STRIDE", false},
                          {"BLOCKS_PER_SM", 4}};
  };
  const nlohmann::json first = saxpy(64, 1, 1);
  const nlohmann::json second = saxpy(512, 4, 2);
  EXPECT_NE(std::find(ranked.begin(), ranked.end(), first), ranked.end()) << json["best"].dump();
  EXPECT_NE(std::find(ranked.begin(), ranked.end(), second), ranked.end()) << json["best"].dump();
  EXPECT_LE(json["best"][0]["median_ms"].get<double>(), json["best"][1]["median_ms"].get<double>());
  EXPECT_FALSE(json.contains("default_time_ms")) << "the default was not asked for";
  EXPECT_EQ(lines_of(out / "evaluations.csv"), 3u) << "the header and the two rows";
  EXPECT_NE(last_run(out)["extra"]["given_configurations"].get<std::string>().find("BLOCK=512"), std::string::npos);
}

TEST(GivenConfigurations, OneNotInTheSpaceOrBreakingAConstraintIsRefusedByName) {
  TemporaryFolder folder("given-refused");
  const fs::path out = folder.path() / "out";
  const std::string run =
      "run '" + saxpy_spec.string() + "' --replay '" + saxpy_csv.string() + "' --out '" + out.string() + "' ";
  struct Refusal {
    std::string given;
    std::string what;
  };
  for (const Refusal& refusal : std::vector<Refusal>{
           {"BLOCK=96", "--config BLOCK=96: 96 is not one of the values of 'BLOCK' (64, 128, 256, 512, 1024)"},
           {"BLOK=64", "--config BLOK=64: 'BLOK' is not a parameter of the space (did you mean 'BLOCK'?)"},
           {"BLOCK=64,BLOCK=128", "'BLOCK' is given twice"},
           {"BLOCK", "'BLOCK' is not NAME=VALUE"},
           {"BLOCKS_PER_SM=8", "--config BLOCKS_PER_SM=8: the configuration BLOCK=256 VEC=1 ITEMS=1 "
                               "GRID_STRIDE=false BLOCKS_PER_SM=8 breaks the constraint 'GRID_STRIDE or "
                               "BLOCKS_PER_SM == 4'"}}) {
    SCOPED_TRACE(refusal.given);
    const CommandResult result = run_tune(run + "--config BLOCK=128 --config " + refusal.given);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(refusal.what), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_FALSE(fs::exists(out)) << "nothing is written before the configurations are known good";
  }
}

TEST(RunOutput, TheReportGoesToTheGivenFileAndEveryStderrLineStartsWithThePrefix) {
  TemporaryFolder folder("run-output");
  RunCommand command;
  command.common.spec = saxpy_spec.string();
  command.common.json = true;
  command.replay = saxpy_csv.string();
  command.out = (folder.path() / "out").string();
  command.budget = 5;
  command.final_candidates = 0;
  std::FILE* report = std::tmpfile();
  RunOutput output;
  output.results = report;
  output.stderr_prefix = "03-saxpy on device 1: ";
  output.progress = false;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int exit_code = command.run(output);
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(exit_code, 0) << err;
  const std::string text = cli_test::read_back(report);
  EXPECT_EQ(nlohmann::json::parse(text).at("evaluated"), 5);
  EXPECT_EQ(out, "") << "the report went to the given file only";
  ASSERT_NE(err.find("profile"), std::string::npos) << err;
  std::istringstream lines(err);
  std::size_t count = 0;
  for (std::string line; std::getline(lines, line); ++count)
    EXPECT_EQ(line.rfind(output.stderr_prefix, 0), 0u) << "a line without the prefix: " << line;
  EXPECT_GT(count, 3u);
}

// A stand-in GPU for the sustained figures: every configuration verifies in the synthetic landscape's time; its
// sustained figure is 1.2 times that, the baseline's 0.9 ms burst and 1.05 ms sustained.
class SustainingGpu final : public Measurer {
 public:
  SustainingGpu() : device_(device_profile("sm_90")) { device_.name = "stand-in GPU"; }
  const DeviceProperties& device() const override { return device_; }
  bool needs_compilation() const override { return false; }
  void prepare(const SpaceEnumerator&) override {}
  double baseline_ms() const override { return 0.9; }
  std::string baseline_library() const override { return "stand-in library"; }
  Evaluation measure(const Configuration& configuration, const CompileResult*, const SpaceEnumerator&, bool) override {
    Evaluation evaluation;
    evaluation.configuration = configuration;
    evaluation.time.median_ms = evaluation.time.min_ms = time_of(configuration);
    evaluation.time.samples = 10;
    return evaluation;
  }
  Evaluation measure_baseline(bool) override {
    Evaluation evaluation;
    evaluation.time.median_ms = evaluation.time.min_ms = 0.9;
    evaluation.time.samples = 10;
    return evaluation;
  }
  std::optional<double> sustained_ms(const Configuration* configuration, const CompileResult*,
                                     const SpaceEnumerator&) override {
    return configuration == nullptr ? 1.05 : 1.2 * time_of(*configuration);
  }

 private:
  static double time_of(const Configuration& configuration) {
    return session_test::synthetic_time_ms(std::get<std::int64_t>(configuration[0]),
                                           std::get<std::int64_t>(configuration[1]),
                                           std::get<std::int64_t>(configuration[2]));
  }
  DeviceProperties device_;
};

// A run on a GPU ends with the winner's and the baseline's sustained figures: printed above the table, beside the
// burst figures that rank, and in --json under "sustained".
TEST(SustainedFigures, ARunPrintsTheWinnersAndTheBaselinesBesideTheBurstFigures) {
  const fs::path directory = session_test::fresh_directory("cli_run_sustained");
  const fs::path spec = session_test::write_spec(directory, 6, 5, 3);
  for (const bool json : {false, true}) {
    RunCommand command;
    command.common.spec = spec.string();
    command.common.json = json;
    command.out = (directory / (json ? "json" : "text")).string();
    command.best_dir = (directory / "best").string();
    command.ceiling_cache = (directory / "ceilings").string();
    command.strategy = "exhaustive";
    command.open_device = [](const KernelSpec&, int) -> std::unique_ptr<Measurer> {
      return std::make_unique<SustainingGpu>();
    };
    std::FILE* report = std::tmpfile();
    RunOutput output;
    output.results = report;
    output.progress = false;
    ::testing::internal::CaptureStderr();
    const int exit_code = command.run(output);
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_EQ(exit_code, 0) << err;
    const std::string text = cli_test::read_back(report);
    // The landscape's fastest configuration, (3, 2, 1), takes 1.0 ms: sustained 1.2 ms.
    if (json) {
      const nlohmann::json document = nlohmann::json::parse(text);
      ASSERT_TRUE(document.contains("sustained")) << text;
      EXPECT_DOUBLE_EQ(document["sustained"]["seconds"].get<double>(), sustained_seconds);
      EXPECT_DOUBLE_EQ(document["sustained"]["winner_ms"].get<double>(), 1.2);
      EXPECT_DOUBLE_EQ(document["sustained"]["baseline_ms"].get<double>(), 1.05);
    } else {
      EXPECT_NE(text.find("sustained, back to back for 0.5 s (the second half): the winner 1.2000 ms, the baseline "
                          "1.0500 ms (baseline / winner 0.875); the ranking uses the burst figures below"),
                std::string::npos)
          << text;
    }
  }
  fs::remove_all(directory);
}

}  // namespace
}  // namespace kernlathe
