#include "tuner/measure/kernel_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>

#include "tuner/gpu/nvml.h"

namespace kernlathe {
namespace {

using Clock = std::chrono::steady_clock;
using gpu::cuda_driver;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

KernelTimer::KernelTimer(CUstream stream, const MeasurementSettings& settings, std::size_t l2_bytes)
    : stream_(stream), settings_(settings), start_(gpu::Event::create()), stop_(gpu::Event::create()), gate_(std::make_unique<LaunchGate>(stream)) {
  if (settings_.cold) flush_buffer_ = gpu::DeviceBuffer(2 * l2_bytes);
}

double KernelTimer::elapsed_ms() {
  const gpu::CudaDriver& cuda = cuda_driver();
  KERNLATHE_CUDA_CHECK(cuda.cuEventSynchronize(stop_.get()));
  float elapsed = 0;
  KERNLATHE_CUDA_CHECK(cuda.cuEventElapsedTime(&elapsed, start_.get(), stop_.get()));
  return static_cast<double>(elapsed);
}

TimeStatistics KernelTimer::time(const std::function<void()>& launch_once, std::string& phase, TimingKind kind) {
  const bool burst = kind == TimingKind::burst;
  const MeasurementSettings sampling = burst ? burst_settings(settings_) : settings_;
  const gpu::CudaDriver& cuda = cuda_driver();
  auto flush_l2 = [&] {
    if (flush_buffer_.bytes() == 0) return;
    KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(flush_buffer_.get(), 0x5EED, flush_buffer_.bytes() / 4, stream_));
  };

  // Warm-up: clocks settle, module load and instruction cache; the fastest single launch estimates the kernel's
  // time for choosing the batch size.
  phase = "warm-up";
  const Clock::time_point warmup_start = Clock::now();
  const double idle_ms = busy_until_ ? seconds_between(*busy_until_, warmup_start) * 1e3
                                     : std::numeric_limits<double>::infinity();
  const double warmup_ms = burst ? 0 : warmup_duration_ms(settings_, idle_ms);
  const int min_launches = warmup_ms > 0 || burst ? min_warmup_launches : 1;
  double fastest_ms = 0;
  int launches = 0;
  do {
    {
      // The first launch runs ungated: a library's first call may load its kernels and synchronise inside.
      LaunchGate::Scope gate(*gate_, launches > 0);
      flush_l2();
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(start_.get(), stream_));
      launch_once();
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(stop_.get(), stream_));
    }
    const double elapsed = elapsed_ms();
    if (gate_->fired()) {  // the launch synchronised behind the gate: its time includes the watchdog's wait
      gate_->disable();
      ++launches;
      continue;
    }
    fastest_ms = fastest_ms == 0 ? elapsed : std::min(fastest_ms, elapsed);
    ++launches;
  } while (launches < min_launches || seconds_between(warmup_start, Clock::now()) * 1e3 < warmup_ms);

  phase = "timing";
  const int batch = launches_per_sample(fastest_ms * 1000, settings_.cold);
  std::vector<double> samples;
  const Clock::time_point sampling_start = Clock::now();
  last_warmup_ms_ = seconds_between(warmup_start, sampling_start) * 1e3;
  do {
    {
      LaunchGate::Scope gate(*gate_, batch <= LaunchGate::max_gated_launches);
      flush_l2();
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(start_.get(), stream_));
      for (int launch_index = 0; launch_index < batch; ++launch_index) launch_once();
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(stop_.get(), stream_));
    }
    const double sample_ms = elapsed_ms() / batch;
    if (gate_->fired()) {  // a launch synchronised behind the gate: the sample timed the watchdog's wait
      gate_->disable();
      continue;
    }
    samples.push_back(sample_ms);
  } while (!measurement_complete(samples, seconds_between(sampling_start, Clock::now()), sampling));
  busy_until_ = Clock::now();
  last_sampling_ms_ = seconds_between(sampling_start, *busy_until_) * 1e3;
  return summarise(std::move(samples));
}

TimeStatistics KernelTimer::sustained(const std::function<void()>& launch_once, double seconds, std::string& phase) {
  const gpu::CudaDriver& cuda = cuda_driver();
  phase = "sustained timing";
  const auto timed_launches = [&](int count) {
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(start_.get(), stream_));
    for (int launch_index = 0; launch_index < count; ++launch_index) launch_once();
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(stop_.get(), stream_));
    return elapsed_ms() / count;
  };
  const double one_launch_ms = std::max(timed_launches(1), 1e-4);
  const int window = static_cast<int>(std::clamp(std::ceil(sustained_window_ms / one_launch_ms), 1.0, 100000.0));
  // The next window is queued before the host waits for the current one, so the GPU never idles between them.
  std::vector<double> second_half;
  const Clock::time_point start = Clock::now();
  gpu::Event window_start = gpu::Event::create(), window_stop = gpu::Event::create();
  KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(window_start.get(), stream_));
  for (int launch_index = 0; launch_index < window; ++launch_index) launch_once();
  KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(window_stop.get(), stream_));
  while (true) {
    gpu::Event next_start = gpu::Event::create(), next_stop = gpu::Event::create();
    const bool more = seconds_between(start, Clock::now()) < seconds;
    if (more) {
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(next_start.get(), stream_));
      for (int launch_index = 0; launch_index < window; ++launch_index) launch_once();
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(next_stop.get(), stream_));
    }
    KERNLATHE_CUDA_CHECK(cuda.cuEventSynchronize(window_stop.get()));
    float window_ms = 0;
    KERNLATHE_CUDA_CHECK(cuda.cuEventElapsedTime(&window_ms, window_start.get(), window_stop.get()));
    if (seconds_between(start, Clock::now()) >= seconds / 2) second_half.push_back(window_ms / window);
    if (!more) break;
    window_start = std::move(next_start);
    window_stop = std::move(next_stop);
  }
  busy_until_ = Clock::now();
  return summarise(std::move(second_half));
}

std::optional<EnergyFigures> KernelTimer::energy(const std::function<void()>& launch_once, double time_per_launch_ms,
                                                 const std::string& pci_bus_id, std::string& phase) {
  const gpu::CudaDriver& cuda = cuda_driver();
  std::optional<std::uint64_t> reading = gpu::read_energy_mj(pci_bus_id);
  if (!reading || !(time_per_launch_ms > 0)) return std::nullopt;
  phase = "energy measurement";

  // Launches go in chunks of about 2 ms of work, at most two chunks queued: the GPU never waits for the host, and
  // the host polls the counter while a chunk runs.
  const int chunk = static_cast<int>(std::clamp(std::ceil(2.0 / time_per_launch_ms), 1.0, 4096.0));
  std::deque<gpu::Event> in_flight;
  auto enqueue_chunk = [&] {
    for (int launch_index = 0; launch_index < chunk; ++launch_index) launch_once();
    gpu::Event done = gpu::Event::create();
    KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(done.get(), stream_));
    in_flight.push_back(std::move(done));
  };
  auto keep_busy = [&] {
    while (!in_flight.empty()) {
      const CUresult state = cuda.cuEventQuery(in_flight.front().get());
      if (state == CUDA_ERROR_NOT_READY) break;
      KERNLATHE_CUDA_CHECK(state);
      in_flight.pop_front();
    }
    while (in_flight.size() < 2) enqueue_chunk();
  };

  // Waits for the counter to step away from `from`; gives up after a second (a counter that does not move).
  struct Step {
    bool seen = false;
    std::uint64_t energy_mj = 0;
    Clock::time_point at{};
  };
  auto next_step = [&](std::uint64_t from) {
    Step step;
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < give_up) {
      keep_busy();
      std::optional<std::uint64_t> now = gpu::read_energy_mj(pci_bus_id);
      if (!now) break;
      if (*now != from) return Step{true, *now, Clock::now()};
    }
    return step;
  };

  // The first step after the GPU is busy starts the window: the energy up to it may include idle time, the
  // energy after it is this configuration's alone.
  keep_busy();
  const Step first = next_step(*reading);
  Step last = first;
  for (int period = 0; last.seen && period < settings_.energy_periods; ++period) last = next_step(last.energy_mj);
  KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream_));
  if (!first.seen || !last.seen || last.energy_mj < first.energy_mj) return std::nullopt;

  EnergyFigures figures;
  busy_until_ = Clock::now();
  figures.window_ms = seconds_between(first.at, last.at) * 1e3;
  if (!(figures.window_ms > 0)) return std::nullopt;
  figures.average_power_w = static_cast<double>(last.energy_mj - first.energy_mj) / figures.window_ms;  // mJ/ms = W
  figures.energy_per_launch_mj = figures.average_power_w * time_per_launch_ms;
  return figures;
}

}  // namespace kernlathe
