// `tune replay` end to end on the committed T4 excerpt (12 results, optimum 1.99893 ms).
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

CommandResult run_tune(const std::string& arguments) {
  const std::string command =
      std::string("cd '") + KERNLATHE_SOURCE_DIR + "' && '" + TUNE_BINARY + "' " + arguments + " 2>/dev/null";
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
  EXPECT_DOUBLE_EQ(rows[1]["optimum_ms"].get<double>(), 1.9989325690158581);
  ASSERT_TRUE(rows[1]["median_evals_to_within_5pct"].is_number());
  EXPECT_LE(rows[1]["median_evals_to_within_5pct"].get<double>(), 4362);
  EXPECT_EQ(rows[1]["median_failures"], 4362 - 8);  // everything but the 8 correct recorded results
}

TEST(ReplayCommand, BadInputExitsTwo) {
  EXPECT_EQ(run_tune("replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --budget 0").exit_code, 2);
  EXPECT_EQ(run_tune("replay --t4 tests/data/search/convolution-excerpt.T4.json.gz --strategy anneal").exit_code, 2);
  EXPECT_EQ(run_tune("replay --strategy random").exit_code, 2);
  EXPECT_EQ(run_tune("replay --t4 tests/data/search/missing.T4.json.gz").exit_code, 2);
}

}  // namespace
