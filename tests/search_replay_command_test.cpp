// `tune replay` end to end on the committed T4 excerpt (12 results, recorded optimum 2.13441 ms, median optimum
// 1.99893 ms) and the small files of tests/data/t4 (objectives, directions, the benchmark hub's layout).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// stderr is dropped unless with_errors, which appends it to out.
CommandResult run_tune(const std::string& arguments, bool with_errors = false) {
  const std::string command = std::string("cd '") + KERNLATHE_SOURCE_DIR + "' && '" + TUNE_BINARY + "' " + arguments +
                              (with_errors ? " 2>&1" : " 2>/dev/null");
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(ReplayCommand, JsonRowsPerStrategyAndBudget) {
  // Random search over all 4362 valid configurations meets every one of the 12 recorded ones, the optimum
  // included; with a budget of 10 it almost surely meets none (unrecorded ones count as failures).
  CommandResult result = run_tune(
      "replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --strategy random --seeds 3 --budget 10,5000 "
      "--json");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  nlohmann::json rows = nlohmann::json::parse(result.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["strategy"], "random");
  EXPECT_EQ(rows[0]["budget"], 10);
  EXPECT_EQ(rows[0]["seeds"], 3);
  EXPECT_TRUE(rows[0]["median_evals_to_within_5pct"].is_null());
  EXPECT_TRUE(rows[0]["median_evals_to_within_10pct"].is_null());
  EXPECT_EQ(rows[1]["budget"], 5000);
  EXPECT_EQ(rows[1]["median_best_over_optimum"], 1.0);
  // The recorded objective value (time), not the median of the runtimes (1.99893 ms, --t4-objective-source median).
  EXPECT_DOUBLE_EQ(rows[1]["optimum_ms"].get<double>(), 2.134406078848772);
  EXPECT_EQ(rows[1]["objective"], "time");
  EXPECT_EQ(rows[1]["direction"], "minimize");
  EXPECT_EQ(rows[1]["objective_source"], "recorded");
  ASSERT_TRUE(rows[1]["median_evals_to_within_5pct"].is_number());
  EXPECT_LE(rows[1]["median_evals_to_within_5pct"].get<double>(), 4362);
  EXPECT_EQ(rows[1]["median_failures"], 4362 - 8);  // everything but the 8 correct recorded results
}

TEST(ReplayCommand, APriorIsTriedFirst) {
  // The excerpt as its own prior: its recorded optimum is the first transfer, so random search finds it at once,
  // where without the prior ten random picks of 4362 meet no recorded configuration (the test above).
  CommandResult result = run_tune(
      "replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --strategy random --seeds 3 --budget 1 --json "
      "--prior tests/data/search/convolution-excerpt.T4.json.gz");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  nlohmann::json rows = nlohmann::json::parse(result.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["strategy"], "random");
  EXPECT_EQ(rows[0]["median_best_over_optimum"], 1.0);
  EXPECT_EQ(rows[0]["median_failures"], 0);
  // A prior file that is not there is bad input.
  EXPECT_EQ(run_tune("replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --strategy random --seeds 1 "
                     "--budget 1 --prior tests/data/search/absent.T4.json.gz")
                .exit_code,
            2);
}

TEST(ReplayCommand, BadInputExitsTwo) {
  EXPECT_EQ(run_tune("replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --budget 0").exit_code, 2);
  EXPECT_EQ(run_tune("replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --strategy anneal").exit_code, 2);
  EXPECT_EQ(run_tune("replay --strategy random").exit_code, 2);
  EXPECT_EQ(run_tune("replay --t4 tests/data/search/missing.T4.json.gz").exit_code, 2);
}

TEST(ReplayCommand, MedianOfTheRuntimesOnRequest) {
  CommandResult result = run_tune(
      "replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --t4-objective-source median --strategy random "
      "--seeds 1 --budget 10 --json");
  ASSERT_EQ(result.exit_code, 0) << result.out;
  nlohmann::json rows = nlohmann::json::parse(result.out);
  EXPECT_DOUBLE_EQ(rows[0]["optimum_ms"].get<double>(), 1.9989325690158581);
  EXPECT_EQ(rows[0]["objective_source"], "median");
  EXPECT_EQ(run_tune("replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --t4-objective-source mean").exit_code, 2);
}

TEST(ReplayCommand, ScoreObjectiveNeedsADirection) {
  // The file's objective is "score" with no declared direction: an error naming the file, not minimised runtimes.
  CommandResult undeclared = run_tune("replay --t4 tests/data/t4/score-undeclared.T4.json --strategy random", true);
  EXPECT_EQ(undeclared.exit_code, 2) << undeclared.out;
  EXPECT_NE(undeclared.out.find("score-undeclared.T4.json"), std::string::npos) << undeclared.out;
  EXPECT_NE(undeclared.out.find("--t4-direction"), std::string::npos) << undeclared.out;

  CommandResult maximised = run_tune(
      "replay --t4 tests/data/t4/score-undeclared.T4.json --t4-direction maximize --strategy exhaustive --seeds 1 "
      "--budget 6 --json");
  ASSERT_EQ(maximised.exit_code, 0) << maximised.out;
  nlohmann::json rows = nlohmann::json::parse(maximised.out);
  EXPECT_EQ(rows[0]["objective"], "score");
  EXPECT_EQ(rows[0]["direction"], "maximize");
  EXPECT_DOUBLE_EQ(rows[0]["optimum_value"].get<double>(), 0.9);
  EXPECT_TRUE(rows[0]["optimum_ms"].is_null());
  EXPECT_EQ(rows[0]["median_best_over_optimum"], 1.0);  // exhaustive over all 6 finds the highest score

  CommandResult declared = run_tune("replay --t4 tests/data/t4/score-declared.T4.json --strategy exhaustive --seeds 1 "
                                    "--budget 6 --json");
  ASSERT_EQ(declared.exit_code, 0) << declared.out;
  EXPECT_EQ(nlohmann::json::parse(declared.out)[0]["direction"], "maximize");
  EXPECT_EQ(run_tune("replay --t4 tests/data/t4/score-negative.T4.json --strategy random").exit_code, 2);
}

TEST(ReplayCommand, HubLayoutAndMissingT1) {
  CommandResult hub = run_tune(
      "replay --t4 tests/data/t4/hub/cachefiles/tiny_bench/A100_T4.json --strategy exhaustive --seeds 1 --budget 4 "
      "--json");
  ASSERT_EQ(hub.exit_code, 0) << hub.out;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(hub.out)[0]["optimum_ms"].get<double>(), 2.0);

  CommandResult orphan = run_tune("replay --t4 tests/data/t4/hub/cachefiles/orphan_bench/A100_T4.json", true);
  EXPECT_EQ(orphan.exit_code, 2) << orphan.out;
  EXPECT_NE(orphan.out.find("--t1 FILE"), std::string::npos) << orphan.out;
  EXPECT_NE(orphan.out.find("orphan_bench.json"), std::string::npos) << orphan.out;
  CommandResult named = run_tune(
      "replay --t4 tests/data/t4/hub/cachefiles/orphan_bench/A100_T4.json --t1 tests/data/t4/runtimes.T1.json "
      "--strategy exhaustive --seeds 1 --budget 4 --json");
  EXPECT_EQ(named.exit_code, 0) << named.out;
}

TEST(ReplayCommand, HelpSaysWhatIsScored) {
  CommandResult help = run_tune("replay --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--t4-objective-source"), std::string::npos);
  EXPECT_NE(help.out.find("the mean of the runtimes"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--t4-direction"), std::string::npos);
}

}  // namespace
