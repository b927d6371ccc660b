#include "kernlathe/timing.h"

#include <exception>

#include "tuner/driver/cuda_driver.h"
#include "tuner/measure/kernel_timer.h"

namespace kernlathe {

LaunchTiming time_launches(CUstream_st* stream, const std::function<void()>& launch) {
  try {
    // The device's L2 size only matters for cold timing (an L2 flush between samples), which this does not do.
    KernelTimer timer(reinterpret_cast<CUstream>(stream), MeasurementSettings{}, 0);
    std::string phase;
    const TimeStatistics statistics = timer.time(launch, phase);
    return LaunchTiming{statistics.median_ms, statistics.low_ms, statistics.high_ms, statistics.samples, timer.gated()};
  } catch (const RuntimeError&) {
    throw;
  } catch (const std::exception& error) {
    throw RuntimeError(std::string("time_launches: ") + error.what());
  }
}

}  // namespace kernlathe
