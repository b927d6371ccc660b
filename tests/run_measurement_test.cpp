#include "tuner/run/measurement.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kernlathe
