// The report end to end on two small recordings of one kernel on two GPUs: every figure reaches the JSON, and the
// text names the tables and sentences people read.
#include "tuner/analysis/report.h"

#include <gtest/gtest.h>

#include "analysis_test_support.h"

namespace kernlathe {
namespace {

using testing::failed;
using testing::integer_parameter;
using testing::measured;

Recording gpu(const std::string& device, double scale) {
  Recording recording;
  recording.source = device + "/evaluations.csv";
  recording.kernel = "toy";
  recording.problem = "N=64";
  recording.device = device;
  recording.family = "toy";
  recording.parameters = {integer_parameter("P", {1, 2, 3, 4, 5, 6}), integer_parameter("Q", {1, 2, 3})};
  for (std::int64_t p = 1; p <= 6; ++p)
    for (std::int64_t q = 1; q <= 3; ++q) {
      Configuration configuration{Value{p}, Value{q}};
      if (p > 4 && q == 3) {
        recording.evaluations.push_back(failed(configuration, Status::launch_error));
      } else {
        recording.evaluations.push_back(
            measured(configuration, scale * (1.0 + static_cast<double>(p)) + 0.1 * static_cast<double>(q)));
      }
    }
  return recording;
}

AnalysisReport two_gpus() {
  ImportanceOptions options;
  options.resamples = 4;
  std::vector<std::string> progress;
  AnalysisReport report =
      analyse_recordings({gpu("Alpha", 1.0), gpu("Beta", 2.0)}, options, [&](const std::string& line) {
        progress.push_back(line);
      });
  EXPECT_EQ(progress, (std::vector<std::string>{"analysing toy N=64 on Alpha (18 configurations)",
                                                "analysing toy N=64 on Beta (18 configurations)"}));
  return report;
}

TEST(AnalysisReport, JsonCarriesEveryFigure) {
  const nlohmann::ordered_json json = report_to_json(two_gpus());
  EXPECT_EQ(json["settings"]["resamples"], 4);
  ASSERT_EQ(json["recordings"].size(), 2u);
  const auto& alpha = json["recordings"][0];
  EXPECT_EQ(alpha["device"], "Alpha");
  EXPECT_EQ(alpha["evaluations"], 18);
  EXPECT_EQ(alpha["valid"], 16);
  EXPECT_EQ(alpha["failures_by_status"]["launch_error"], 2);
  EXPECT_DOUBLE_EQ(alpha["best_ms"].get<double>(), 2.1);
  EXPECT_EQ(alpha["best_configuration"]["P"], 1);
  EXPECT_EQ(alpha["best_configuration"]["Q"], 1);
  EXPECT_EQ(alpha["within_5_percent"]["count"], 2);  // 2.1 and 2.2 (<= 2.205)
  EXPECT_EQ(alpha["importance"]["resamples"], 4);
  EXPECT_EQ(alpha["importance"]["parameters"][0]["parameter"], "P");
  EXPECT_EQ(alpha["importance"]["interactions"][0]["parameters"], nlohmann::json::array({"P", "Q"}));
  EXPECT_EQ(alpha["main_effects"][0]["parameter"], "P");
  EXPECT_EQ(alpha["main_effects"][0]["values"][5]["valid"], 2);
  EXPECT_EQ(alpha["main_effects"][0]["values"][5]["failed"], 1);
  EXPECT_EQ(alpha["failures"][0]["kind"], "launch_or_resources");
  EXPECT_EQ(alpha["failures"][0]["suggestions"][0]["constraint"], "P * Q <= 12");
  EXPECT_EQ(alpha["failures"][0]["suggestions"][0]["valid_excluded"], 0);

  ASSERT_EQ(json["portability"].size(), 1u);
  const auto& group = json["portability"][0];
  EXPECT_EQ(group["devices"], nlohmann::json::array({"Alpha", "Beta"}));
  // Both GPUs rank the configurations alike: each best is the other's best.
  EXPECT_EQ(group["matrix"][0][1]["state"], "measured");
  EXPECT_DOUBLE_EQ(group["matrix"][0][1]["fraction_of_optimum"].get<double>(), 1.0);
  EXPECT_EQ(group["matrix"][0][1]["rank"], 1);
  EXPECT_EQ(group["valid_everywhere"], 16);
  EXPECT_EQ(group["portable_default"]["configuration"]["P"], 1);
  EXPECT_DOUBLE_EQ(group["portable_default"]["worst_fraction"].get<double>(), 1.0);
}

TEST(AnalysisReport, TextHasTheTablesAndSentences) {
  const std::string text = report_to_text(two_gpus());
  for (const char* expected :
       {"== toy N=64 on Alpha", "18 configurations evaluated: 16 valid, 2 failed (2 launch_error)",
        "time: best 2.1 ms", "parameter importance: share of the variance of log time", "strongest interactions",
        "time by value", "2 launch or resource failures (2 launch_error)",
        "P * Q <= 12 excludes 2 of 2 launch or resource failures and 0 of 16 valid configurations",
        "== portability: toy N=64 on Alpha, Beta", "portability matrix", "portable default"})
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\n" << text;
}

}  // namespace
}  // namespace kernlathe
