// The ledger of what idle lanes waited for, with made-up times: each idle lane counts the time against what the loop
// was doing, measuring lanes count it as measuring, and lost lanes stop counting.
#include "tuner/session/lane_idle.h"

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

using TimePoint = LaneIdleLedger::TimePoint;

TimePoint at(double seconds) {
  return TimePoint{} + std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(seconds));
}

TEST(LaneIdleLedger, IdleLanesCountTheTimeAgainstWhatTheLoopDid) {
  LaneIdleLedger ledger;
  ledger.start(4, at(0));
  ledger.set_lanes(4, 0, at(1));  // four idle lanes for 1 s while the loop did its own work: 4 lane-seconds
  ledger.set_lanes(4, 2, at(3));  // two finish after 2 s of measuring (8 lane-seconds)
  ledger.set_activity(LoopActivity::strategy, at(3.5));  // 0.5 s, two idle: 1 against the loop
  ledger.set_activity(LoopActivity::compilation, at(4.5));  // 1 s of strategy: 2 lane-seconds
  ledger.set_activity(LoopActivity::loop, at(5));           // 0.5 s of compilation: 1
  ledger.stop(at(6));                                       // 1 s of the loop: 2
  ledger.set_lanes(4, 4, at(9));  // after the stop: nothing counts
  const LaneTimes times = ledger.times();
  EXPECT_EQ(times.lanes, 4u);
  EXPECT_DOUBLE_EQ(times.lane_seconds, 24.0);
  EXPECT_DOUBLE_EQ(times.measuring_seconds, 8.0 + 2 * 3.0);
  EXPECT_DOUBLE_EQ(times.idle(LoopActivity::loop), 4.0 + 1.0 + 2.0);
  EXPECT_DOUBLE_EQ(times.idle(LoopActivity::strategy), 2.0);
  EXPECT_DOUBLE_EQ(times.idle(LoopActivity::compilation), 1.0);
  EXPECT_DOUBLE_EQ(times.idle(LoopActivity::records), 0.0);
  EXPECT_DOUBLE_EQ(times.measuring_seconds + times.idle_total(), times.lane_seconds);
}

TEST(LaneIdleLedger, ALostLaneStopsCounting) {
  LaneIdleLedger ledger;
  ledger.start(2, at(0));
  ledger.set_lanes(2, 0, at(0));
  ledger.set_lanes(1, 0, at(2));  // one lost after 2 s: 4 lane-seconds measuring
  ledger.set_activity(LoopActivity::results, at(2));
  ledger.set_lanes(1, 1, at(3));  // the other measured 1 s more, then waited 1 s with nothing to hand out
  ledger.stop(at(4));
  const LaneTimes times = ledger.times();
  EXPECT_DOUBLE_EQ(times.lane_seconds, 6.0);
  EXPECT_DOUBLE_EQ(times.measuring_seconds, 5.0);
  EXPECT_DOUBLE_EQ(times.idle(LoopActivity::results), 1.0);
}

TEST(LaneIdleLedger, ActivitiesHaveTheNamesOfTheJsonReport) {
  EXPECT_EQ(loop_activity_name(LoopActivity::strategy), "strategy");
  EXPECT_EQ(loop_activity_name(LoopActivity::compilation), "compilation");
  EXPECT_EQ(loop_activity_name(LoopActivity::records), "records");
  EXPECT_EQ(loop_activity_name(LoopActivity::results), "results");
  EXPECT_EQ(loop_activity_name(LoopActivity::loop), "loop");
}

}  // namespace
}  // namespace kernlathe
