// What an evaluation's fields mean beyond their values: the clock policy's flag (tuner/measure/measurement.h).
#include "tuner/record/evaluation.h"

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

TEST(ClockPolicyFlag, PowerCapAndIdleAreInsideThePolicyThermalAndHardwareSlowdownsAreNot) {
  EXPECT_EQ(clock_policy_flag(0), "");
  EXPECT_EQ(clock_policy_flag(0x1 | 0x4), "");  // idle after the samples; the power cap of steady state
  EXPECT_EQ(clock_policy_flag(0x4 | 0x20), "sw_thermal");
  EXPECT_EQ(clock_policy_flag(0x8 | 0x40 | 0x80), "hw_slowdown+hw_thermal+power_brake");
  EXPECT_EQ(reasons_outside_clock_policy & 0x4, 0u);
}

TEST(Objective, NamesRoundTripAndValuesFollowTheObjective) {
  for (Objective objective : {Objective::time, Objective::energy, Objective::edp})
    EXPECT_EQ(parse_objective(objective_name(objective)), objective);
  EXPECT_EQ(parse_objective("speed"), std::nullopt);

  Evaluation evaluation;
  evaluation.time.median_ms = 0.5;
  evaluation.energy_mj = 0.2;
  EXPECT_DOUBLE_EQ(objective_value(evaluation, Objective::time), 0.5);
  EXPECT_DOUBLE_EQ(objective_value(evaluation, Objective::energy), 0.2);
  EXPECT_DOUBLE_EQ(objective_value(evaluation, Objective::edp), 0.1);
  evaluation.energy_mj = 0;  // not measured: no value, so the run can refuse it
  EXPECT_EQ(objective_value(evaluation, Objective::energy), 0);
  evaluation.status = Status::wrong_result;
  EXPECT_EQ(objective_value(evaluation, Objective::time), 0);
}

TEST(Objective, TheSearchRanksByTheObjectiveWhenSetAndByTimeOtherwise) {
  Evaluation fast_but_hungry;
  fast_but_hungry.time.median_ms = 1.0;
  fast_but_hungry.objective = 9.0;
  Evaluation slow_but_frugal;
  slow_but_frugal.time.median_ms = 2.0;
  slow_but_frugal.objective = 3.0;
  EXPECT_LT(search_value(slow_but_frugal), search_value(fast_but_hungry));
  fast_but_hungry.objective = 0;  // the time objective
  EXPECT_DOUBLE_EQ(search_value(fast_but_hungry), 1.0);
}

}  // namespace
}  // namespace kernlathe
