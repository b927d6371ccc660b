#include "tuner/measure/measurement.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <stdexcept>

namespace kernlathe {
namespace {

TEST(Summarise, OddCountGivesMiddleSampleAndInterquartileSpread) {
  TimeStatistics statistics = summarise({5.0, 1.0, 3.0, 2.0, 4.0});
  EXPECT_EQ(statistics.samples, 5);
  EXPECT_DOUBLE_EQ(statistics.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(statistics.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(statistics.max_ms, 5.0);
  // p25 = 2, p75 = 4 with linear interpolation over 5 sorted samples.
  EXPECT_DOUBLE_EQ(statistics.relative_spread, (4.0 - 2.0) / 3.0);
}

TEST(Summarise, EvenCountInterpolatesBetweenMiddleSamples) {
  TimeStatistics statistics = summarise({1.0, 2.0, 3.0, 10.0});
  EXPECT_DOUBLE_EQ(statistics.median_ms, 2.5);
  // positions 0.75 and 2.25: 1.75 and 4.75
  EXPECT_DOUBLE_EQ(statistics.relative_spread, (4.75 - 1.75) / 2.5);
}

TEST(Summarise, EmptyAndSingleSample) {
  TimeStatistics empty = summarise({});
  EXPECT_EQ(empty.samples, 0);
  EXPECT_EQ(empty.median_ms, 0);
  TimeStatistics single = summarise({0.25});
  EXPECT_EQ(single.samples, 1);
  EXPECT_DOUBLE_EQ(single.median_ms, 0.25);
  EXPECT_DOUBLE_EQ(single.relative_spread, 0);
}

MeasurementSettings settings_for_rule() {
  MeasurementSettings settings;
  settings.min_samples = 4;
  settings.max_samples = 8;
  settings.max_seconds = 1.0;
  settings.target_relative_spread = 0.02;
  return settings;
}

TEST(MeasurementComplete, WaitsForMinimumSamplesEvenWhenSteady) {
  MeasurementSettings settings = settings_for_rule();
  EXPECT_FALSE(measurement_complete({1.0, 1.0, 1.0}, 0.1, settings));
  EXPECT_TRUE(measurement_complete({1.0, 1.0, 1.0, 1.0}, 0.1, settings));
}

TEST(MeasurementComplete, NoisySamplesContinueUntilSampleCap) {
  MeasurementSettings settings = settings_for_rule();
  std::vector<double> noisy = {1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0};
  EXPECT_FALSE(measurement_complete(noisy, 0.1, settings));
  noisy.push_back(2.0);
  EXPECT_TRUE(measurement_complete(noisy, 0.1, settings));  // 8 = max_samples
}

TEST(MeasurementComplete, TimeCapStopsNoisyMeasurementWithFewSamples) {
  MeasurementSettings settings = settings_for_rule();
  EXPECT_FALSE(measurement_complete({1.0, 2.0}, 0.99, settings));
  EXPECT_TRUE(measurement_complete({1.0, 2.0}, 1.0, settings));
  EXPECT_FALSE(measurement_complete({}, 5.0, settings));  // never stop without a sample
}

TEST(MeasurementComplete, SpreadExactlyAtTargetStops) {
  MeasurementSettings settings = settings_for_rule();
  settings.target_relative_spread = 0.25;
  // {1, 2, 2, 3}: p25 = 1.75, p75 = 2.25, median 2, spread 0.25
  EXPECT_TRUE(measurement_complete({1.0, 2.0, 2.0, 3.0}, 0.1, settings));
  settings.target_relative_spread = 0.24;
  EXPECT_FALSE(measurement_complete({1.0, 2.0, 2.0, 3.0}, 0.1, settings));
}

TEST(LaunchesPerSample, BatchesShortKernelsOnly) {
  EXPECT_EQ(launches_per_sample(100.0, false), 1);
  EXPECT_EQ(launches_per_sample(batch_threshold_us, false), 1);
  EXPECT_EQ(launches_per_sample(5.0, false), 10);  // 2.5 * 20 us / 5 us
  EXPECT_EQ(launches_per_sample(0.001, false), 256);
  EXPECT_EQ(launches_per_sample(5.0, true), 1);  // cold: every launch after its own L2 flush
}

TEST(Summarise, MedianIntervalUsesOrderStatisticsThatCoverNinetyFivePercent) {
  // n = 10: P(Binomial(10, 1/2) < 2) = 11/1024 <= 2.5% < P(< 3) = 56/1024, so the interval is [x(2), x(9)].
  TimeStatistics ten = summarise({10, 1, 9, 2, 8, 3, 7, 4, 6, 5});
  EXPECT_DOUBLE_EQ(ten.low_ms, 2);
  EXPECT_DOUBLE_EQ(ten.high_ms, 9);
  // n = 20: P(< 6) = 2.07% and P(< 7) = 5.77%: [x(6), x(15)].
  std::vector<double> twenty;
  for (int value = 1; value <= 20; ++value) twenty.push_back(value);
  TimeStatistics summary = summarise(twenty);
  EXPECT_DOUBLE_EQ(summary.low_ms, 6);
  EXPECT_DOUBLE_EQ(summary.high_ms, 15);
  // n = 6 reaches 96.9% only with the extremes; n = 5 never reaches 95%, and falls back to them too.
  TimeStatistics six = summarise({1, 2, 3, 4, 5, 6});
  EXPECT_DOUBLE_EQ(six.low_ms, 1);
  EXPECT_DOUBLE_EQ(six.high_ms, 6);
  TimeStatistics five = summarise({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(five.low_ms, 1);
  EXPECT_DOUBLE_EQ(five.high_ms, 5);
}

TEST(MeasurementComplete, MinimumTimeHoldsASteadyMeasurementOpen) {
  MeasurementSettings settings = settings_for_rule();
  settings.min_seconds = 0.5;
  EXPECT_FALSE(measurement_complete({1.0, 1.0, 1.0, 1.0}, 0.4, settings));
  EXPECT_TRUE(measurement_complete({1.0, 1.0, 1.0, 1.0}, 0.5, settings));
}

// Streamed passes keep three passes past the time cap (a naive pass takes ~250 ms of the 0.3 s cap); kernels stop
// at the cap with whatever they have.
TEST(MeasurementComplete, GuaranteedSamplesAreTakenPastTheTimeCap) {
  MeasurementSettings passes = MeasurementSettings::streamed_passes();
  EXPECT_FALSE(measurement_complete({250.0, 248.0}, 0.5, passes));
  EXPECT_TRUE(measurement_complete({250.0, 248.0, 251.0}, 0.75, passes));
  EXPECT_TRUE(measurement_complete({250.0, 248.0}, 1.0, MeasurementSettings{}));
}

TEST(MeasurementSettings, StreamedPassesTakeFewerSamplesAndOverridesApplyToBothKinds) {
  MeasurementSettings passes = MeasurementSettings::streamed_passes();
  EXPECT_EQ(passes.min_samples, 3);
  EXPECT_EQ(passes.max_samples, 10);
  EXPECT_DOUBLE_EQ(passes.max_seconds, 0.3);
  EXPECT_EQ(MeasurementSettings{}.min_samples, 10);

  MeasurementOverrides overrides;
  overrides.min_samples = 5;
  overrides.energy = EnergyMeasurement::always;
  MeasurementSettings applied = apply(passes, overrides);
  EXPECT_EQ(applied.min_samples, 5);
  EXPECT_EQ(applied.max_samples, 10);  // not overridden: the kind's default stays
  EXPECT_EQ(applied.energy, EnergyMeasurement::always);
  EXPECT_EQ(apply(MeasurementSettings{}, overrides).max_samples, 200);
}

TEST(MeasurementSettings, ContradictionsAreRefusedWithTheReason) {
  MeasurementSettings settings;
  EXPECT_NO_THROW(check_settings(settings));
  settings.min_samples = 300;  // above the default maximum of 200
  try {
    check_settings(settings);
    FAIL() << "a minimum above the maximum was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "the maximum sample count 200 is below the minimum 300");
  }
  settings = MeasurementSettings{};
  settings.min_seconds = 2.0;  // above the 1 s cap
  EXPECT_THROW(check_settings(settings), std::invalid_argument);
  settings = MeasurementSettings{};
  settings.energy_periods = 0;
  EXPECT_THROW(check_settings(settings), std::invalid_argument);
}

// A burst timing stops sampling after burst_sampling_seconds once it has burst_guaranteed_samples, where the usual
// rule would go on to the spread target or a second; a steady burst still stops at the spread target.
TEST(MeasurementSettings, BurstSamplingIsCappedNearTheLimitersReactionTime) {
  const MeasurementSettings usual;
  const MeasurementSettings burst = burst_settings(usual);
  EXPECT_EQ(burst.max_seconds, burst_sampling_seconds);
  EXPECT_EQ(burst.guaranteed_samples, burst_guaranteed_samples);
  EXPECT_EQ(burst.min_samples, usual.min_samples);
  const std::vector<double> noisy{1.0, 1.2, 0.9, 1.3, 1.0, 1.25};
  EXPECT_FALSE(measurement_complete(noisy, 0.03, usual));
  EXPECT_TRUE(measurement_complete(noisy, 0.03, burst));
  EXPECT_FALSE(measurement_complete({1.0, 1.2, 0.9, 1.3}, 0.03, burst));  // fewer than the guaranteed samples
  const std::vector<double> steady(10, 1.0);
  EXPECT_TRUE(measurement_complete(steady, 0.001, burst));
  // A setting already shorter is kept.
  MeasurementSettings short_cap;
  short_cap.max_seconds = 0.01;
  EXPECT_EQ(burst_settings(short_cap).max_seconds, 0.01);
}

TEST(WarmupDuration, FullAfterAnIdleGapShortWhileTheGpuIsBusy) {
  MeasurementSettings settings;  // 20 ms after an idle gap of 100 ms or more, 2 ms otherwise
  EXPECT_EQ(warmup_duration_ms(settings, std::numeric_limits<double>::infinity()), 20);  // the first configuration
  EXPECT_EQ(warmup_duration_ms(settings, 100.0), 20);
  EXPECT_EQ(warmup_duration_ms(settings, 250.0), 20);
  EXPECT_EQ(warmup_duration_ms(settings, 99.9), 2);
  EXPECT_EQ(warmup_duration_ms(settings, 0.0), 2);
  EXPECT_EQ(warmup_duration_ms(settings, std::nan("")), 20);  // unknown counts as idle

  settings.warmup_ms = 0;  // --warmup 0 turns both off
  EXPECT_EQ(warmup_duration_ms(settings, 5.0), 0);
  settings.warmup_ms = 20;
  settings.busy_warmup_ms = 20;  // --busy-warmup 20: the previous rule, the full warm-up every time
  EXPECT_EQ(warmup_duration_ms(settings, 5.0), 20);

  MeasurementOverrides overrides;
  overrides.busy_warmup_ms = 7;
  EXPECT_EQ(apply(MeasurementSettings{}, overrides).busy_warmup_ms, 7);
  settings = MeasurementSettings{};
  settings.busy_warmup_ms = -1;
  EXPECT_THROW(check_settings(settings), std::invalid_argument);
}

}  // namespace
}  // namespace kernlathe
