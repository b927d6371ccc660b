#pragma once
// Times launches the way `tune`'s final round times candidates and baselines, so that an application's or an
// example's figures compare with the tuner's: the GPU rests 100 ms first (a burst figure: the H200's power limiter
// lowers the clocks within about 50 ms of continuous load, so a figure taken right after other work reads up to
// 15% slower; docs/measurement.md), then a warm-up, batches for launches shorter than the batching threshold,
// samples until their spread settles (or a second), and each sample queued behind a launch gate, so that the
// host's cost of the call (a library choosing its algorithm, say) stays out of the timed window. The median per
// launch is reported. Each call takes at least the 100 ms rest.
//
//   kernlathe::LaunchTiming ours = kernlathe::time_launches(stream, [&] { kernel.launch(arguments, stream); });
//
// The calling thread needs the device's context current (any CUDA runtime call makes the primary context so).
// Throws kernlathe::RuntimeError where there is no driver or a driver call fails. This header includes no CUDA
// header.

#include <functional>

#include "kernlathe/runtime.h"

namespace kernlathe {

struct LaunchTiming {
  double median_ms = 0;  // per launch
  double low_ms = 0;     // 95% interval of the median (distribution-free)
  double high_ms = 0;
  int samples = 0;
  bool gated = false;    // whether samples were queued behind the launch gate (false where the driver refuses it)
};

// `launch` queues one launch (or one library call) on `stream` and returns without waiting for it.
LaunchTiming time_launches(CUstream_st* stream, const std::function<void()>& launch);

}  // namespace kernlathe
