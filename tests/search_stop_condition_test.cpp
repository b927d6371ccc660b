#include "tuner/search/stop_condition.h"

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

Evaluation ok(double median_ms) {
  Evaluation evaluation;
  evaluation.status = Status::ok;
  evaluation.time.median_ms = median_ms;
  return evaluation;
}

Evaluation failed() {
  Evaluation evaluation;
  evaluation.status = Status::compile_error;
  evaluation.time.median_ms = 0.001;  // a failed result's time never counts
  return evaluation;
}

TEST(StopTracker, NoConditionNeverStops) {
  StopTracker tracker(StopCondition{});
  for (int step = 0; step < 1000; ++step) tracker.record(ok(1.0 + step), step * 100.0);
  EXPECT_FALSE(tracker.should_stop());
  EXPECT_EQ(tracker.reason(), "");
  EXPECT_EQ(tracker.evaluations(), 1000u);
  EXPECT_EQ(tracker.best_time_ms(), 1.0);
}

TEST(StopTracker, MaxEvaluationsCountsEveryStatus) {
  StopCondition condition;
  condition.max_evaluations = 3;
  StopTracker tracker(condition);
  tracker.record(ok(1.0), 0);
  tracker.record(failed(), 0);
  EXPECT_FALSE(tracker.should_stop());
  tracker.record(failed(), 0);
  EXPECT_TRUE(tracker.should_stop());
  EXPECT_EQ(tracker.reason(), "evaluation budget of 3 reached");
}

TEST(StopTracker, ZeroEvaluationBudgetStopsBeforeStarting) {
  StopCondition condition;
  condition.max_evaluations = 0;
  EXPECT_TRUE(StopTracker(condition).should_stop());
}

TEST(StopTracker, MaxSecondsUsesTheLatestClock) {
  StopCondition condition;
  condition.max_seconds = 10;
  StopTracker tracker(condition);
  tracker.record(ok(1.0), 9.5);
  EXPECT_FALSE(tracker.should_stop());
  tracker.advance_clock(4.0);  // an earlier reading never moves the clock back
  EXPECT_EQ(tracker.elapsed_seconds(), 9.5);
  EXPECT_FALSE(tracker.should_stop());
  tracker.advance_clock(10.0);
  EXPECT_TRUE(tracker.should_stop());
  EXPECT_NE(tracker.reason().find("time budget of 10s"), std::string::npos) << tracker.reason();
}

TEST(StopTracker, TargetCountsOnlyVerifiedResults) {
  StopCondition condition;
  condition.target_time_ms = 1.5;
  StopTracker tracker(condition);
  tracker.record(ok(2.0), 0);
  tracker.record(failed(), 0);
  EXPECT_FALSE(tracker.should_stop());
  tracker.record(ok(1.5), 0);
  EXPECT_TRUE(tracker.should_stop());
  EXPECT_EQ(tracker.reason(), "target 1.5 ms reached (best 1.5 ms)");
}

TEST(StopTracker, PatienceCountsEvaluationsSinceTheLastImprovement) {
  StopCondition condition;
  condition.patience = 2;
  StopTracker tracker(condition);
  tracker.record(ok(5.0), 0);
  tracker.record(ok(6.0), 0);
  EXPECT_FALSE(tracker.should_stop());
  tracker.record(ok(4.0), 0);  // improvement: the count starts again
  EXPECT_EQ(tracker.evaluations_since_improvement(), 0u);
  tracker.record(ok(4.0), 0);  // a tie is no improvement
  EXPECT_FALSE(tracker.should_stop());
  tracker.record(failed(), 0);
  EXPECT_TRUE(tracker.should_stop());
  EXPECT_EQ(tracker.reason(), "no improvement in the last 2 evaluations");
}

// With --objective energy a faster row that uses more energy is no improvement for patience; the time target still
// reads the time.
TEST(StopTracker, PatienceFollowsTheObjectiveTheTargetFollowsTheTime) {
  StopCondition condition;
  condition.patience = 2;
  StopTracker tracker(condition);
  auto with_energy = [](double median_ms, double energy_mj) {
    Evaluation evaluation = ok(median_ms);
    evaluation.objective = energy_mj;
    return evaluation;
  };
  tracker.record(with_energy(2.0, 1.0), 0);
  tracker.record(with_energy(1.5, 1.2), 0);  // faster, hungrier: not a new best
  EXPECT_EQ(tracker.evaluations_since_improvement(), 1u);
  EXPECT_EQ(tracker.best_time_ms(), 1.5);
  tracker.record(with_energy(1.4, 1.1), 0);
  EXPECT_TRUE(tracker.should_stop());
}

TEST(StopTracker, CombinedConditionsStopAtTheFirstOneMet) {
  StopCondition condition;
  condition.max_evaluations = 100;
  condition.max_seconds = 60;
  condition.patience = 3;
  condition.target_time_ms = 0.1;
  StopTracker tracker(condition);
  tracker.record(ok(1.0), 1);
  tracker.record(ok(0.9), 2);
  tracker.record(ok(1.1), 3);
  tracker.record(ok(1.2), 4);
  EXPECT_FALSE(tracker.should_stop());
  tracker.record(ok(1.3), 5);
  EXPECT_EQ(tracker.reason(), "no improvement in the last 3 evaluations");

  StopTracker timed(condition);
  timed.record(ok(1.0), 61);
  EXPECT_NE(timed.reason().find("time budget"), std::string::npos) << timed.reason();

  StopTracker fast(condition);
  fast.record(ok(0.05), 1);
  EXPECT_NE(fast.reason().find("target"), std::string::npos) << fast.reason();
}

TEST(ParseDuration, AcceptsUnitsAndCombinations) {
  EXPECT_EQ(parse_duration("90s"), 90.0);
  EXPECT_EQ(parse_duration("5m"), 300.0);
  EXPECT_EQ(parse_duration("5min"), 300.0);
  EXPECT_EQ(parse_duration("1h"), 3600.0);
  EXPECT_EQ(parse_duration("250ms"), 0.25);
  EXPECT_EQ(parse_duration("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration("45"), 45.0);
  EXPECT_EQ(parse_duration("0s"), 0.0);
}

TEST(ParseDuration, RejectsEverythingElse) {
  for (const char* text : {"", "s", "abc", "5x", "-3s", "1h30", "1 h", " 5s", "5s ", "infs", "nan"}) {
    EXPECT_EQ(parse_duration(text), std::nullopt) << "'" << text << "'";
  }
}

}  // namespace
}  // namespace kernlathe
