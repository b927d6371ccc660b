// The landscape figures of a tiny hand-made recording: counts, best/median/worst, shares within 5% and 10% of the
// optimum, and the median and quartiles of time per parameter value.
#include "tuner/analysis/landscape.h"

#include <gtest/gtest.h>

#include "analysis_test_support.h"

namespace kernlathe {
namespace {

using testing::failed;
using testing::integer_parameter;
using testing::measured;

Configuration at(std::int64_t p, std::int64_t q) { return {Value{p}, Value{q}}; }

Recording tiny() {
  Recording recording;
  recording.source = "tiny.csv";
  recording.parameters = {integer_parameter("P", {1, 2, 3}), integer_parameter("Q", {0, 1})};
  // Valid times sorted: 1.00 1.04 1.06 1.09 1.20 2.00 (best 1.00: within 5% are 1.00 and 1.04; within 10% also
  // 1.06 and 1.09).
  recording.evaluations = {measured(at(1, 0), 1.20), measured(at(1, 1), 1.04), measured(at(2, 0), 1.00),
                           measured(at(2, 1), 2.00), measured(at(3, 0), 1.09), measured(at(3, 1), 1.06),
                           failed(at(1, 0), Status::compile_error), failed(at(2, 1), Status::launch_error),
                           failed(at(3, 1), Status::launch_error)};
  // The failures repeat configurations only to give P and Q failure counts: summarize_landscape takes rows as
  // they come (load_recordings is what keeps one row per configuration).
  return recording;
}

TEST(Landscape, CountsBestMedianWorstAndSharesNearTheOptimum) {
  const LandscapeSummary summary = summarize_landscape(tiny());
  EXPECT_EQ(summary.evaluations, 9u);
  EXPECT_EQ(summary.valid, 6u);
  EXPECT_EQ(summary.failed, 3u);
  ASSERT_EQ(summary.failures_by_status.size(), 2u);
  EXPECT_EQ(summary.failures_by_status[0], std::make_pair(Status::compile_error, std::size_t{1}));
  EXPECT_EQ(summary.failures_by_status[1], std::make_pair(Status::launch_error, std::size_t{2}));
  EXPECT_DOUBLE_EQ(summary.best_ms, 1.00);
  EXPECT_DOUBLE_EQ(summary.worst_ms, 2.00);
  EXPECT_DOUBLE_EQ(summary.median_ms, (1.06 + 1.09) / 2);
  EXPECT_EQ(summary.best_configuration, at(2, 0));
  EXPECT_EQ(summary.within_5_percent, 2u);
  EXPECT_EQ(summary.within_10_percent, 4u);
  EXPECT_DOUBLE_EQ(summary.share_within_5_percent, 2.0 / 6);
  EXPECT_DOUBLE_EQ(summary.share_within_10_percent, 4.0 / 6);
}

TEST(Landscape, MainEffectIsTheMedianAndQuartilesOfTimePerValue) {
  const LandscapeSummary summary = summarize_landscape(tiny());
  ASSERT_EQ(summary.main_effects.size(), 2u);
  const MainEffect& q = summary.main_effects[1];
  EXPECT_EQ(q.parameter, "Q");
  ASSERT_EQ(q.values.size(), 2u);
  // Q = 0: 1.00 1.09 1.20 -> median 1.09, quartiles (linear between order statistics) 1.045 and 1.145.
  EXPECT_EQ(q.values[0].value, Value{std::int64_t{0}});
  EXPECT_EQ(q.values[0].valid, 3u);
  EXPECT_EQ(q.values[0].failed, 1u);
  EXPECT_DOUBLE_EQ(q.values[0].median_ms, 1.09);
  EXPECT_DOUBLE_EQ(q.values[0].lower_quartile_ms, 1.045);
  EXPECT_DOUBLE_EQ(q.values[0].upper_quartile_ms, 1.145);
  EXPECT_DOUBLE_EQ(q.values[0].best_ms, 1.00);
  // Q = 1: 1.04 1.06 2.00 -> median 1.06, quartiles 1.05 and 1.53; two failures.
  EXPECT_EQ(q.values[1].failed, 2u);
  EXPECT_DOUBLE_EQ(q.values[1].median_ms, 1.06);
  EXPECT_DOUBLE_EQ(q.values[1].lower_quartile_ms, 1.05);
  EXPECT_DOUBLE_EQ(q.values[1].upper_quartile_ms, 1.53);
  // P = 2: 1.00 and 2.00, median 1.5.
  EXPECT_DOUBLE_EQ(summary.main_effects[0].values[1].median_ms, 1.5);
}

TEST(Landscape, ValuesNeverRecordedAndConstantParametersAreLeftOut) {
  Recording recording = tiny();
  recording.parameters[0].values.emplace_back(std::int64_t{4});  // declared, never recorded
  recording.parameters.push_back(integer_parameter("R", {7}));
  for (Evaluation& evaluation : recording.evaluations) evaluation.configuration.emplace_back(std::int64_t{7});
  const LandscapeSummary summary = summarize_landscape(recording);
  ASSERT_EQ(summary.main_effects.size(), 2u);  // R has one value
  EXPECT_EQ(summary.main_effects[0].values.size(), 3u);
}

TEST(Landscape, NoValidConfigurationIsAnError) {
  Recording recording = tiny();
  recording.evaluations.resize(0);
  recording.evaluations.push_back(failed(at(1, 0), Status::crashed));
  EXPECT_THROW(summarize_landscape(recording), TunerError);
}

}  // namespace
}  // namespace kernlathe
