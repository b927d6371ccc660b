// The `tune` binary end to end on the CPU: exit codes, messages, and that bad input writes nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_test_support.h"

namespace {

namespace fs = std::filesystem;

using kernlathe::cli_test::CommandResult;
using kernlathe::cli_test::run_tune;
using kernlathe::cli_test::run_tune_in_shell;

// The same under a limit on the process's data segment (heap and anonymous mappings), in KiB.
CommandResult run_tune_with_data_limit(const std::string& arguments, long kibibytes) {
  return run_tune_in_shell("ulimit -d " + std::to_string(kibibytes) + " && ", arguments);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string read_text(const fs::path& path) {
  std::ifstream stream(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(stream), {});
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

// Measurement settings and the objective are refused before any GPU is looked for: exit 2 with the reason.
TEST(Cli, ContradictoryMeasurementSettingsAndUnknownObjectivesAreBadInput) {
  CommandResult samples = run_tune("run kernels/saxpy.yaml --min-samples 300");
  EXPECT_EQ(samples.exit_code, 2);
  EXPECT_NE(samples.err.find("the maximum sample count 200 is below the minimum 300"), std::string::npos) << samples.err;
  CommandResult objective = run_tune("run kernels/saxpy.yaml --objective speed");
  EXPECT_EQ(objective.exit_code, 2);
  EXPECT_NE(objective.err.find("expected time, energy or edp"), std::string::npos) << objective.err;
  EXPECT_EQ(run_tune("run kernels/saxpy.yaml --objective energy --energy off").exit_code, 2);
  EXPECT_EQ(run_tune("run kernels/saxpy.yaml --cold --warm").exit_code, 2);
  EXPECT_EQ(run_tune("run kernels/saxpy.yaml --energy sometimes").exit_code, 2);
  CommandResult help = run_tune("run --help");
  EXPECT_NE(help.out.find("--objective"), std::string::npos);
  EXPECT_NE(help.out.find("--min-samples"), std::string::npos);
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
  EXPECT_EQ(lines_of(listed.out).back(), "BLOCK=64 VEC=1 ITEMS=1 GRID_STRIDE=true BLOCKS_PER_SM=2");
  // --json with --list or --sample: JSON lines, the summary first, then one configuration a line.
  CommandResult sampled = run_tune("space saxpy --arch sm_90 --sample 4 --seed 9 --json");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  std::vector<std::string> lines = lines_of(sampled.out);
  ASSERT_EQ(lines.size(), 5u) << sampled.out;
  EXPECT_EQ(nlohmann::json::parse(lines[0])["valid"].get<std::uint64_t>(), 840u);
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(nlohmann::json::parse(lines[i]).size(), 5u) << lines[i];
  CommandResult again = run_tune("space saxpy --arch sm_90 --sample 4 --seed 9 --json");
  std::vector<std::string> again_lines = lines_of(again.out);
  EXPECT_EQ(std::vector<std::string>(again_lines.begin() + 1, again_lines.end()),
            std::vector<std::string>(lines.begin() + 1, lines.end()));
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

// A kernel with a spec and nothing stored is a result (exit 1); a name with neither is a mistyped one (exit 2).
TEST(Cli, BestOnEmptyCacheFails) {
  CommandResult result = run_tune("best saxpy --dir /tmp/tune_cli_test_empty_cache");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("nothing stored for kernel 'saxpy'"), std::string::npos) << result.err;
  CommandResult unknown = run_tune("best no_such_kernel --dir /tmp/tune_cli_test_empty_cache");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no kernel 'no_such_kernel'"), std::string::npos) << unknown.err;
}

// `tune best` judges an entry by the kernel as it is now (its spec, space and template with every include), as
// `tune export` does, not only by the description stored beside the entries: with the stored hashes all rewritten
// to one the kernel does not have, description and entries agree, and every entry is still stale.
TEST(Cli, BestCallsEntriesOfAnOlderKernelStale) {
  const fs::path dir = fs::temp_directory_path() / ("tune_cli_test_best_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string stored = read_text(fs::path(KERNLATHE_SOURCE_DIR) / "results/best/saxpy.json");
  const auto store_with_hash = [&](const std::string& hash) {
    nlohmann::json document = nlohmann::json::parse(stored);
    document["description"]["spec_hash"] = hash;
    for (auto& entry : document["entries"]) entry["spec_hash"] = hash;
    std::ofstream(dir / "saxpy.json") << document.dump(2);
  };
  const auto entries = [&](const std::string& options) {
    CommandResult result = run_tune("best saxpy --json --dir '" + dir.string() + "' " + options);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out);
  };

  store_with_hash("0123456789abcdef");
  const nlohmann::json old = entries("");
  ASSERT_GE(old.size(), 1u);
  const std::string reason = old[0]["stale_reason"];
  const std::string marker = "kernels/saxpy.yaml with its space and template hashes to ";
  const std::size_t at = reason.find(marker);
  ASSERT_NE(at, std::string::npos) << reason;
  EXPECT_NE(reason.find("measured against kernel hash 0123456789abcdef"), std::string::npos) << reason;
  const std::string current = reason.substr(at + marker.size(), 16);
  EXPECT_NE(current, "0123456789abcdef");
  for (const auto& entry : old) EXPECT_TRUE(entry["stale"].get<bool>()) << entry.dump();
  CommandResult text = run_tune("best saxpy --dir '" + dir.string() + "'");
  EXPECT_NE(text.out.find("STALE: measured against kernel hash 0123456789abcdef"), std::string::npos) << text.out;
  EXPECT_NE(text.err.find("entries are stale"), std::string::npos) << text.err;
  // Where no spec is found, the stored description is all there is to go by.
  for (const auto& entry : entries("--specs '" + dir.string() + "'")) EXPECT_FALSE(entry["stale"].get<bool>());

  store_with_hash(current);
  for (const auto& entry : entries("")) EXPECT_FALSE(entry["stale"].get<bool>()) << entry.dump();
  fs::remove_all(dir);
}

TEST(Cli, CompileCheckSaxpyWithoutGpu) {
  CommandResult result = run_tune("compile-check saxpy --arch sm_80 --sample 3 --jobs 2 --json");
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  nlohmann::json output = nlohmann::json::parse(result.out);
  EXPECT_EQ(output["failed"], 0);
  EXPECT_GE(output["compiled"].get<int>(), 3);
  // saxpy has no tensor-core code: nothing for ptxas to serialise.
  EXPECT_EQ(output["performance_warnings"], nlohmann::json::array());
  EXPECT_LE(output["cached"].get<int>(), output["compiled"].get<int>());
}

// NVRTC compiles every shipped template (no GPU needed): the default configuration and a sample, for the
// architectures the project ships for. A GEMM spec whose problem is the nn.Linear layout (B_LAYOUT: 1 with the
// space of templates/gemm.cu, gemm_bf16_silu_gated) has only the wgmma path there, which sm_80 lacks: on sm_80 it is
// checked in the K x N layout, where its other paths compile the same epilogue.
TEST(Cli, CompileCheckEveryShippedSpec) {
  for (const auto& entry : fs::directory_iterator(fs::path(KERNLATHE_SOURCE_DIR) / "kernels")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string text = read_text(entry.path());
    const bool linear_layout_gemm = text.find("space: ../spaces/gemm.yaml") != std::string::npos &&
                                    std::regex_search(text, std::regex("\\n  B_LAYOUT: 1 "));
    for (const char* arch : {"sm_80", "sm_90"}) {
      const std::string problem = linear_layout_gemm && std::string(arch) == "sm_80" ? " --problem B_LAYOUT=0" : "";
      CommandResult result = run_tune("compile-check " + entry.path().string() + " --arch " + arch +
                                      " --sample 4 --json" + problem);
      ASSERT_EQ(result.exit_code, 0) << entry.path() << " " << arch << ": " << result.err << result.out;
      nlohmann::json output = nlohmann::json::parse(result.out);
      EXPECT_EQ(output["failed"], 0) << entry.path() << " " << arch;
      EXPECT_GE(output["compiled"].get<int>(), 4) << entry.path() << " " << arch;
    }
  }
}

// The community benchmarks shipped as T1 files (kernels/t1/*.T1.json) load as specs, validate and compile with NVRTC
// (no GPU needed), like the YAML specs above.
TEST(Cli, T1BenchmarksValidateAndCompile) {
  int benchmarks = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(KERNLATHE_SOURCE_DIR) / "kernels/t1")) {
    if (!entry.path().string().ends_with(".T1.json")) continue;
    ++benchmarks;
    CommandResult validated = run_tune("validate " + entry.path().string() + " --json");
    ASSERT_EQ(validated.exit_code, 0) << entry.path() << ": " << validated.err;
    EXPECT_GT(nlohmann::json::parse(validated.out)["valid"].get<int>(), 0);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CommandResult result = run_tune("compile-check " + entry.path().string() + " --arch " + arch +
                                      " --sample 6 --json");
      ASSERT_EQ(result.exit_code, 0) << entry.path() << " " << arch << ": " << result.err << result.out;
      nlohmann::json output = nlohmann::json::parse(result.out);
      EXPECT_EQ(output["failed"], 0) << entry.path() << " " << arch;
      EXPECT_GE(output["compiled"].get<int>(), 6) << entry.path() << " " << arch;
    }
  }
  EXPECT_GE(benchmarks, 1);
}

TEST(Cli, CompileCheckReportsAFailureWithItsLog) {
  CommandResult result = run_tune("compile-check tests/data/faults/faults.yaml --arch sm_90 --all --json");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  nlohmann::json output = nlohmann::json::parse(result.out);
  EXPECT_EQ(output["failed"], 2);  // FAULT=4, for both block sizes
  ASSERT_FALSE(output["failures"].empty());
  EXPECT_NE(output["failures"][0]["log"].get<std::string>().find("planted compile failure"), std::string::npos);
}

// ---------------------------------------------------------------- issue item 6: limits

// A spec over an inline space; the template only has to exist.
fs::path write_space_spec(const std::string& name, const std::string& space_lines) {
  return write_temp(name + ".yaml", std::string("name: ") + name + "\ntemplate: " + KERNLATHE_SOURCE_DIR +
                                        "/templates/saxpy.cu\nentry: saxpy\nspace:\n" + space_lines +
                                        "arguments: []\nlaunch: {grid: [1], block: [32]}\n");
}

TEST(Cli, SpaceShowsConditionsAndCountsCanonicalConfigurations) {
  const fs::path spec = write_space_spec("two_paths",
                                         "  parameters:\n"
                                         "    - {name: PATH, type: enum, values: [a, b]}\n"
                                         "    - {name: X, values: [1, 2, 3], when: PATH == \"a\"}\n"
                                         "    - {name: Y, values: [4, 5], default: 5, when: PATH == \"b\"}\n");
  CommandResult text = run_tune("space " + spec.string() + " --arch sm_90 --list 10");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("valid         5 "), std::string::npos) << text.out;  // 3 on path a, 2 on path b
  EXPECT_NE(text.out.find("default 1 when PATH == \"a\""), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("PATH=b X=1 Y=4"), std::string::npos) << text.out;  // X irrelevant: at its default
  EXPECT_EQ(text.out.find("PATH=b X=2"), std::string::npos) << text.out;
  CommandResult json = run_tune("space " + spec.string() + " --arch sm_90 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json output = nlohmann::json::parse(json.out);
  EXPECT_EQ(output["parameters"][2]["when"], "PATH == \"b\"");
  EXPECT_FALSE(output["parameters"][0].contains("when"));
}

TEST(Cli, SpaceTooLargeToEnumerateIsBadInputNamingTheGroup) {
  const fs::path spec = write_space_spec("coupled_millions",
                                         "  parameters:\n"
                                         "    - {name: FREE, values: [1, 2]}\n"
                                         "    - {name: A, range: {from: 0, to: 999999}}\n"
                                         "    - {name: B, range: {from: 0, to: 999999}}\n"
                                         "  constraints:\n"
                                         "    - A <= B\n");
  const auto started = std::chrono::steady_clock::now();
  CommandResult result = run_tune("space " + spec.string() + " --arch sm_90");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("coupled_millions.yaml:7:"), std::string::npos) << result.err;  // where A is declared
  EXPECT_NE(result.err.find("too large to enumerate: the parameters A, B are tied together by the constraints "
                            "'A <= B'"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("67108864 prefix-tree nodes"), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_LT(seconds, 30.0);
}

TEST(Cli, SpaceSampleBeyondTheBoundIsBadInputAndPrintsNothing) {
  // 1000^4 = 10^12 valid configurations that cost nothing to count: no constraint ties the parameters.
  const fs::path spec = write_space_spec("trillion",
                                         "  parameters:\n"
                                         "    - {name: P, range: {from: 0, to: 999}}\n"
                                         "    - {name: Q, range: {from: 0, to: 999}}\n"
                                         "    - {name: R, range: {from: 0, to: 999}}\n"
                                         "    - {name: S, range: {from: 0, to: 999}}\n");
  for (const char* count : {"600000000000", "1048577"}) {
    CommandResult result = run_tune("space " + spec.string() + " --arch sm_90 --sample " + count);
    EXPECT_EQ(result.exit_code, 2) << count << ": " << result.err;
    EXPECT_NE(result.err.find(std::string("--sample ") + count + ": at most 1048576 configurations"), std::string::npos)
        << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out.substr(0, 200);
  }
  CommandResult exponent = run_tune("space " + spec.string() + " --arch sm_90 --sample 6e11");
  EXPECT_EQ(exponent.exit_code, 2) << exponent.err;
  EXPECT_NE(exponent.err.find("--sample"), std::string::npos) << exponent.err;

  CommandResult sampled = run_tune("space " + spec.string() + " --arch sm_90 --sample 1000 --seed 3 --json");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  std::vector<std::string> lines = lines_of(sampled.out);
  ASSERT_EQ(lines.size(), 1001u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["valid"].get<std::uint64_t>(), 1000000000000u);
  std::set<std::string> distinct(lines.begin() + 1, lines.end());
  EXPECT_EQ(distinct.size(), 1000u);
}

// A million configurations listed as JSON lines under a 96 MiB data limit: materialised first (a configuration
// vector, then a JSON array) they need several times that.
TEST(Cli, SpaceListStreamsConfigurationsOneByOne) {
  const fs::path spec = write_space_spec("million",
                                         "  parameters:\n"
                                         "    - {name: P0, range: {from: 0, to: 9}}\n"
                                         "    - {name: P1, range: {from: 0, to: 9}}\n"
                                         "    - {name: P2, range: {from: 0, to: 9}}\n"
                                         "    - {name: P3, range: {from: 0, to: 9}}\n"
                                         "    - {name: P4, range: {from: 0, to: 9}}\n"
                                         "    - {name: P5, range: {from: 0, to: 9}}\n");
  const fs::path listing = fs::temp_directory_path() / "tune_cli_test" / "million.jsonl";
  CommandResult result = run_tune_with_data_limit(
      "space " + spec.string() + " --arch sm_90 --list 2000000 --json > '" + listing.string() + "'", 96 * 1024);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::ifstream stream(listing);
  std::string line;
  std::string first;
  std::string last;
  std::size_t count = 0;
  while (std::getline(stream, line)) {
    if (count == 0) first = line;
    last = line;
    ++count;
  }
  EXPECT_EQ(count, 1000001u);
  EXPECT_EQ(nlohmann::json::parse(first)["valid"].get<std::uint64_t>(), 1000000u);
  EXPECT_EQ(last, R"({"P0":9,"P1":9,"P2":9,"P3":9,"P4":9,"P5":9})");
  fs::remove(listing);
}

// What no limit catches still ends in a message and exit code 1, not SIGABRT: here a space within the limits
// (about 30 million valid pairs) enumerated under a 64 MiB data limit.
TEST(Cli, OutOfMemoryIsExitOneWithAMessage) {
  const fs::path spec = write_space_spec("memory_hungry",
                                         "  parameters:\n"
                                         "    - {name: A, range: {from: 0, to: 29}}\n"
                                         "    - {name: B, range: {from: 0, to: 999999}}\n"
                                         "  constraints:\n"
                                         "    - A <= B\n");
  CommandResult result = run_tune_with_data_limit("space " + spec.string() + " --arch sm_90", 64 * 1024);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("tune: error: out of memory"), std::string::npos) << result.err;
}

// ---------------------------------------------------------------- issue items 3 and 4: records and resume

// Replays the shipped saxpy record (840 configurations) into a fresh record directory.
struct ReplayRun {
  fs::path out = fs::temp_directory_path() / ("tune_cli_test_resume_" + std::to_string(::getpid()));
  fs::path csv = out / "evaluations.csv";

  ReplayRun() { fs::remove_all(out); }
  ~ReplayRun() { fs::remove_all(out); }

  CommandResult run(const std::string& options) const {
    return run_tune("run saxpy --replay results/runs/saxpy/sm_90/N=67108864/evaluations.csv --arch sm_90 --out '" +
                    out.string() + "' --strategy random " + options);
  }
};

TEST(Cli, RunResumeRanksEveryRecordAndWithNothingLeftReportsTheRecordedBest) {
  ReplayRun replay;
  CommandResult complete = replay.run("--json");
  ASSERT_EQ(complete.exit_code, 0) << complete.err;
  const nlohmann::json full = nlohmann::json::parse(complete.out);
  ASSERT_EQ(full["evaluated"], 840);
  fs::remove_all(replay.out);

  CommandResult first = replay.run("--budget 300 --json");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  CommandResult rest = replay.run("--resume --budget 100 --json");
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  nlohmann::json resumed = nlohmann::json::parse(rest.out);
  EXPECT_EQ(resumed["evaluated"], 100);
  EXPECT_EQ(resumed["skipped_by_resume"], 300);
  EXPECT_EQ(resumed["other_hash_rows"], 0);
  CommandResult last = replay.run("--resume --json");
  ASSERT_EQ(last.exit_code, 0) << last.err;
  nlohmann::json finished = nlohmann::json::parse(last.out);
  EXPECT_EQ(finished["evaluated"], 440);
  EXPECT_EQ(finished["best"][0], full["best"][0]);

  // Nothing left to measure: the recorded best, exit 0.
  CommandResult nothing = replay.run("--resume --json");
  ASSERT_EQ(nothing.exit_code, 0) << nothing.err;
  nlohmann::json report = nlohmann::json::parse(nothing.out);
  EXPECT_EQ(report["evaluated"], 0);
  EXPECT_EQ(report["skipped_by_resume"], 840);
  EXPECT_EQ(report["best"][0], full["best"][0]);
  EXPECT_EQ(report["median_time_ms"], full["median_time_ms"]);
  CommandResult table = replay.run("--resume");
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("evaluated 0 of 840 valid configurations"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("resumed: 840 configurations recorded before"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("no configuration passed verification"), std::string::npos) << table.out;
}

TEST(Cli, RunSetsATornLastRowAsideAndResumes) {
  ReplayRun replay;
  ASSERT_EQ(replay.run("--budget 100").exit_code, 0);
  std::string text = read_text(replay.csv);
  const std::string second_row = lines_of(text)[2];
  const std::string torn = second_row.substr(0, second_row.size() / 2);  // a kill in the middle of a row
  std::ofstream(replay.csv, std::ios::binary | std::ios::app) << torn;

  CommandResult resumed = replay.run("--resume --budget 10 --json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("was torn"), std::string::npos) << resumed.err;
  const nlohmann::json report = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(report["skipped_by_resume"], 100);
  const fs::path side = report["torn_row_file"].get<std::string>();
  EXPECT_EQ(side.parent_path(), replay.out);
  EXPECT_TRUE(side.filename().string().starts_with("evaluations.csv.torn-")) << side;
  EXPECT_EQ(read_text(side), torn);
  const std::string after = read_text(replay.csv);
  EXPECT_EQ(after.substr(0, text.size()), text);  // every complete row kept, in place
  EXPECT_EQ(lines_of(after).size(), 111u);
}

TEST(Cli, RunResumesARecordWrittenBeforeAParameterWasAddedWithTheDefaultInItsColumn) {
  ReplayRun replay;
  ASSERT_EQ(replay.run("--budget 200").exit_code, 0);
  // The record as a space without ITEMS would have written it: the rows at ITEMS' default (1), its column gone.
  std::vector<std::string> lines = lines_of(read_text(replay.csv));
  const auto without_items = [](const std::string& line) {
    const std::size_t first = line.find(',', line.find(',', line.find(',') + 1) + 1);  // after hash, BLOCK, VEC
    const std::size_t second = line.find(',', first + 1);
    return std::pair{line.substr(0, first) + line.substr(second), line.substr(first + 1, second - first - 1)};
  };
  std::string old_record = without_items(lines[0]).first + "\n";
  ASSERT_EQ(without_items(lines[0]).second, "ITEMS");
  std::size_t kept = 0;
  for (std::size_t index = 1; index < lines.size(); ++index) {
    auto [line, items] = without_items(lines[index]);
    if (items != "1") continue;
    old_record += line + "\n";
    ++kept;
  }
  ASSERT_GT(kept, 10u);
  std::ofstream(replay.csv, std::ios::binary | std::ios::trunc) << old_record;

  CommandResult resumed = replay.run("--resume --budget 10 --json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("written before ITEMS joined the space"), std::string::npos) << resumed.err;
  const nlohmann::json report = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(report["record_added_columns"], nlohmann::json::array({"ITEMS"}));
  EXPECT_EQ(report["skipped_by_resume"], kept);  // every old row counts, as the configuration it stood for
  EXPECT_EQ(report["evaluated"], 10);
  const std::vector<std::string> after = lines_of(read_text(replay.csv));
  EXPECT_EQ(after[0], lines[0]);  // the space's own header again
  EXPECT_EQ(after.size(), kept + 11);
  EXPECT_EQ(without_items(after[1]).second, "1");
  // Resumed once more, the record is in the space's layout: no note.
  CommandResult again = replay.run("--resume --budget 5 --json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("joined the space"), std::string::npos) << again.err;
}

TEST(Cli, RunRefusesARecordWithAStrayQuoteNamingItsLineAndLeavesItAlone) {
  ReplayRun replay;
  ASSERT_EQ(replay.run("--budget 50").exit_code, 0);
  std::vector<std::string> lines = lines_of(read_text(replay.csv));
  ASSERT_EQ(lines.size(), 51u);
  lines[19] = "\"" + lines[19];  // line 20: a quote at the start of a row
  std::string corrupted;
  for (const std::string& line : lines) corrupted += line + "\n";
  std::ofstream(replay.csv, std::ios::binary | std::ios::trunc) << corrupted;

  for (const char* options : {"--resume --budget 10", "--budget 10"}) {
    CommandResult result = replay.run(options);
    EXPECT_EQ(result.exit_code, 2) << options << ": " << result.err;
    EXPECT_NE(result.err.find("evaluations.csv:20: a double quote opens field 1 ('hash')"), std::string::npos)
        << options << ": " << result.err;
    EXPECT_EQ(read_text(replay.csv), corrupted) << options;
  }
  for (const auto& entry : fs::directory_iterator(replay.out))
    EXPECT_FALSE(entry.path().filename().string().starts_with("evaluations.csv.torn-")) << entry.path();
}

TEST(CliCommands, SpaceFileIsListedWholeWithItsProblemSymbols) {
  // bench_medium: 372,538 valid configurations at M=N=K=4096 on sm_90, every one a line after the summary.
  CommandResult listed = run_tune("space spaces/bench_medium.yaml --arch sm_90 --problem M=4096,N=4096,K=4096 "
                                  "--list all --json | wc -l");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(std::stoull(listed.out), 372538u + 1);
  CommandResult missing = run_tune("space spaces/bench_medium.yaml --arch sm_90 --list 1");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--problem"), std::string::npos) << missing.err;
  CommandResult bad = run_tune("space saxpy --arch sm_90 --list some");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--list some: expected a count of configurations or 'all'"), std::string::npos) << bad.err;
}

}  // namespace
