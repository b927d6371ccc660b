#pragma once
// How a configuration is timed, and the statistics reported for it. Pure functions, so the stopping rule and the
// statistics are tested without a GPU; the timing loop that uses them lives in the evaluation worker.
//
// The worker times each sample with CUDA events around the launch, after a warm-up. A kernel shorter than
// batch_threshold_us is timed as a batch of back-to-back launches per sample, divided by the batch size: a single
// event pair around a few microseconds of work measures mostly launch latency and event resolution (~0.5 us), and
// a batch measures the kernel's throughput, which is what a tuned kernel inside an application sees.
// In cold mode every sample is one launch preceded, outside the timed region, by a write over a buffer twice the
// L2 size, so each launch starts with its data out of L2.

#include <vector>

#include "tuner/record/evaluation.h"

namespace kernlathe {

struct MeasurementSettings {
  double warmup_ms = 20;
  int min_samples = 10;
  int max_samples = 200;
  double max_seconds = 1.0;  // cap on the sampling time of one configuration (warm-up excluded)
  double target_relative_spread = 0.02;
  bool cold = false;
};

// Median, min, max, (p75 - p25) / median and count. Percentiles interpolate linearly between order statistics.
// Empty input gives all zeros.
TimeStatistics summarise(std::vector<double> samples_ms);

// The stopping rule: stop at max_samples; or with at least min_samples once the relative spread is at most the
// target; or once elapsed_seconds reaches max_seconds with at least one sample.
bool measurement_complete(const std::vector<double>& samples_ms, double elapsed_seconds,
                          const MeasurementSettings& settings);

// Kernels whose single launch is shorter than this are timed in batches.
inline constexpr double batch_threshold_us = 20;
// Launches per sample for a kernel estimated at kernel_us per launch: enough to fill ~2.5x the threshold, at most
// 256, and 1 in cold mode (a batch would run all but its first launch with warm caches).
int launches_per_sample(double kernel_us, bool cold);

}  // namespace kernlathe
