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

}  // namespace
}  // namespace kernlathe
