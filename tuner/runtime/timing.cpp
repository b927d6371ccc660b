#include "kernlathe/timing.h"

#include <chrono>
#include <exception>
#include <thread>

#include "tuner/driver/cuda_driver.h"
#include "tuner/measure/kernel_timer.h"
#include "tuner/measure/measurement.h"

namespace kernlathe {

LaunchTiming time_launches(CUstream_st* stream, const std::function<void()>& launch) {
  try {
    // The device's L2 size only matters for cold timing (an L2 flush between samples), which this does not do.
    // A burst figure, as tune's final round takes (tuner/measure/measurement.h): the GPU rests first, so the figure
    // does not depend on what the caller ran just before.
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(burst_rest_ms));
    KernelTimer timer(reinterpret_cast<CUstream>(stream), MeasurementSettings{}, 0);
    std::string phase;
    const TimeStatistics statistics = timer.time(launch, phase, TimingKind::burst);
    return LaunchTiming{statistics.median_ms, statistics.low_ms, statistics.high_ms, statistics.samples, timer.gated()};
  } catch (const RuntimeError&) {
    throw;
  } catch (const std::exception& error) {
    throw RuntimeError(std::string("time_launches: ") + error.what());
  }
}

}  // namespace kernlathe
