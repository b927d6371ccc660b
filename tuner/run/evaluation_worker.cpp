#include "tuner/run/evaluation_worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <optional>

#include "tuner/gpu/cublas.h"
#include "tuner/driver/cuda_driver.h"
#include "tuner/driver/tensor_map.h"
#include "tuner/gpu/device.h"
#include "tuner/gpu/driver_handles.h"
#include "tuner/measure/ceilings.h"
#include "tuner/measure/kernel_timer.h"
#include "tuner/gpu/nvml.h"
#include "tuner/loader/cuda_pipeline_device.h"
#include "tuner/loader/dataset.h"
#include "tuner/loader/pipeline.h"
#include "tuner/nvrtc/cubin_cache.h"
#include "tuner/run/baseline_problem.h"
#include "tuner/run/buffer_fill.h"
#include "tuner/run/kernel_preparation.h"
#include "tuner/run/output_comparison.h"
#include "tuner/run/element_values.h"
#include "tuner/run/protocol.h"
#include "tuner/run/streamed_evaluation.h"
#include "tuner/run/worker_kernels.h"

namespace kernlathe {
namespace {

using gpu::cuda_driver;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Exit status of a worker whose context was lost; the tuner starts a fresh worker for the next evaluation.
constexpr int exit_context_lost = 4;

using gpu::DeviceBuffer;
using gpu::LoadedModule;

// Wall time since construction, for the worker's stage times.
class Stopwatch {
 public:
  double milliseconds() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// One step of a setup, for the start-up profile. `alongside`: it ran at the same time as the steps around it
// (on another thread, or before the setup arrived), so it is not part of their sum.
struct SetupStage {
  std::string name;
  double milliseconds = 0;
  bool alongside = false;
};

// The profile's name for loading the worker's kernels of `dtypes` from `cubin`.
std::string kernels_stage_name(const BuiltinCubin& cubin, const std::vector<Dtype>& dtypes) {
  return fmt::format("{} for {}", cubin.cached ? "its kernels from the cubin cache" : "compile its kernels",
                     dtype_list(dtypes));
}

class EvaluationWorker {
 public:
  ~EvaluationWorker();
  json handle(const json& message);
  bool context_lost() const { return context_lost_; }

 private:
  // Creates the context and stream and loads the worker's kernels for `dtypes` (compiled, or read from the cubin
  // cache, on a thread while the context is created; none when empty); appends its steps to `stages`.
  void open_device(int index, const std::filesystem::path& cubin_cache, const std::vector<Dtype>& dtypes,
                   std::vector<SetupStage>& stages);
  // open_device on a thread, begun when the tuner asks for the device's description with "open": the setup
  // then finds the device open, or waits only for the rest.
  void begin_opening(int index, const std::filesystem::path& cubin_cache, std::vector<Dtype> dtypes);
  // Loads the worker's kernels for every dtype of `needed` and of those loaded before, as one module, when the
  // loaded module lacks one of `needed`; appends the step to `stages`.
  void ensure_kernels(const std::vector<Dtype>& needed, std::vector<SetupStage>& stages);
  // Replaces the loaded worker kernels with `cubin`'s, which holds the kernels of `dtypes`.
  void load_kernels(const BuiltinCubin& cubin, std::vector<Dtype> dtypes);
  // Waits for begin_opening's thread, if any, rethrowing its failure; makes the context current on this thread.
  void finish_opening(std::vector<SetupStage>& stages);
  void setup(const WorkerSetup& setup);
  // The reference run (or the stream's naive pass) and its checks; the worker is ready afterwards.
  void run_reference();
  Evaluation evaluate(const EvaluationRequest& request);

  PreparedKernel prepare(const KernelLaunch& launch, Evaluation& evaluation) {
    return prepare_kernel(launch, PreparationContext{setup_, buffers_, properties_, limits_}, evaluation, phase_);
  }
  void launch(const PreparedKernel& kernel) { launch_kernel(kernel, stream_); }
  void restore_buffers();
  // Compares every output with its reference; returns the wrong_result message, or nothing when all match.
  std::optional<std::string> compare_outputs(double& max_error) {
    return comparison_.compare(setup_, buffers_, stream_, properties_.sm_count, max_error);
  }
  // Times launch_once() under the run's rule and, when asked, measures its energy per launch; fills the time,
  // clock, power and energy fields of `result`.
  void measure(const std::function<void()>& launch_once, bool with_energy, Evaluation& result,
               TimingKind kind = TimingKind::usual);
  Evaluation measure_baseline(bool with_energy, TimingKind kind, double sustained_seconds);
  // The sustained figure of a launch into result.time (KernelTimer::sustained), with the clocks after it.
  void measure_sustained(const std::function<void()>& launch_once, double seconds, Evaluation& result);
  // SM clock, throttle reasons, power and temperature now, into `result` (NVML; zeros where it is absent).
  void read_conditions(Evaluation& result) const;
  void encode_tensor_map(const WorkerArgument& argument, const TensorMapBox& box, ParameterSlot& slot) const;
  void run_baseline();
  // Runs fn, turning driver errors into the configuration's status; a sticky error marks the context lost.
  Evaluation guarded_evaluation(const std::function<void(Evaluation&)>& run);

  std::optional<int> device_index_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceProperties properties_;
  gpu::LaunchLimits limits_;
  std::string pci_bus_id_;
  OutputComparison comparison_;

  WorkerSetup setup_;
  bool ready_ = false;
  std::vector<ArgumentBuffers> buffers_;  // one per argument; scalars keep empty buffers
  KernelTimer timer_;
  std::unique_ptr<gpu::Cublas> cublas_;    // loaded at the first setup with a cuBLAS baseline
  std::optional<TimeStatistics> baseline_time_;
  std::string phase_;  // what the worker was doing, for error messages
  std::vector<SetupStage> setup_stages_;  // the last setup's (or reference's) stages, in order
  bool context_lost_ = false;

  gpu::LoadedModule worker_kernels_;  // compare and fill kernels (worker_kernels.h) of kernel_dtypes_
  std::vector<Dtype> kernel_dtypes_;
  std::filesystem::path cubin_cache_;  // where the worker's kernels are cached
  BufferFill buffer_fill_;
  std::future<std::vector<SetupStage>> opening_;  // begin_opening's thread, until finish_opening
  // A setup that waits for its reference launch (needs_reference_kernel() without one): since when.
  std::optional<Stopwatch> awaiting_reference_;

  // Streamed workloads (tuner/loader): the reference is a naive pipeline pass whose outputs stay on the host, and
  // a configuration is measured over whole passes through the dataset.
  Evaluation evaluate_streamed(const EvaluationRequest& request);
  std::unique_ptr<StreamedEvaluation> streamed_;  // created by setup for a streamed spec
};

json stages_json(const std::vector<SetupStage>& stages) {
  json list = json::array();
  for (const SetupStage& stage : stages) {
    json entry = {stage.name, stage.milliseconds};
    if (stage.alongside) entry.push_back(true);
    list.push_back(entry);
  }
  return list;
}

json error_reply(const std::string& message, bool no_gpu) {
  return {{"type", "error"}, {"no_gpu", no_gpu}, {"message", message}};
}

json EvaluationWorker::handle(const json& message) {
  try {
    std::string type = message.at("type").get<std::string>();
    if (type == "device_info") {
      const int index = message.value("device", 0);
      gpu::DeviceInfo info = gpu::query_device_info(index);
      if (message.value("open", false)) {
        std::vector<Dtype> dtypes;
        for (const std::string& name : message.value("dtypes", std::vector<std::string>())) {
          std::optional<Dtype> dtype = parse_dtype(name);
          if (!dtype) return error_reply(fmt::format("device_info: unknown dtype '{}'", name), false);
          dtypes.push_back(*dtype);
        }
        begin_opening(index, message.value("cubin_cache", std::string()), distinct_dtypes(std::move(dtypes)));
      }
      return {{"type", "device_info"}, {"info", protocol::encode(info)}};
    }
    if (type == "setup") {
      setup(protocol::decode_setup(message.at("setup")));
      json reply = {{"type", "setup_done"}, {"stages_ms", stages_json(setup_stages_)}};
      if (baseline_time_) {
        reply["baseline"] = {{"time", protocol::encode(*baseline_time_)},
                             {"library", cublas_ ? cublas_->version() : std::string()}};
      }
      return reply;
    }
    if (type == "reference") {
      if (!awaiting_reference_) return error_reply("a reference launch without a setup waiting for it", false);
      setup_stages_.clear();
      setup_stages_.push_back({"waited for the reference cubin", awaiting_reference_->milliseconds()});
      awaiting_reference_.reset();
      setup_.reference = protocol::decode_launch(message.at("launch"));
      run_reference();
      return {{"type", "reference_done"}, {"stages_ms", stages_json(setup_stages_)}};
    }
    if (type == "baseline") {
      if (!ready_ || !setup_.baseline) return error_reply("baseline before a setup with a baseline", false);
      Evaluation evaluation = measure_baseline(message.value("measure_energy", false),
                                               message.value("burst", false) ? TimingKind::burst : TimingKind::usual,
                                               message.value("sustained_seconds", 0.0));
      return {{"type", "evaluation"}, {"evaluation", protocol::encode(evaluation)}};
    }
    if (type == "pinned_copy_in") {
      if (!ready_) return error_reply("pinned_copy_in before setup", false);
      constexpr std::size_t copy_bytes = std::size_t{512} << 20;  // as in the gpu.md ceiling table
      return {{"type", "pinned_copy_in"}, {"gbps", loader::measure_pinned_copy_in_gbps(context_, copy_bytes)}};
    }
    if (type == "copy_bandwidth") {
      if (!ready_) return error_reply("copy_bandwidth before setup", false);
      return {{"type", "copy_bandwidth"}, {"gbps", measure_copy_gbps(stream_)}};
    }
    if (type == "ceilings") {
      std::vector<SetupStage> ignored;
      finish_opening(ignored);
      open_device(message.value("device", 0), default_cubin_cache_dir(), {}, ignored);
      std::vector<std::pair<std::string, double>> parts;
      const Ceilings ceilings = measure_ceilings(stream_, properties_, cubin_cache_, &parts);
      json reply = {{"type", "ceilings"}, {"failures", ceilings.failures}, {"parts_seconds", json::array()}};
      for (const auto& [key, value] : ceiling_metadata(ceilings)) reply["values"][key] = value;
      for (const auto& [name, seconds] : parts) reply["parts_seconds"].push_back({name, seconds});
      return reply;
    }
    if (type == "evaluate") {
      if (!ready_) return error_reply("evaluate before setup", false);
      EvaluationRequest request = protocol::decode_request(message.at("request"));
      Evaluation evaluation = setup_.stream ? evaluate_streamed(request) : evaluate(request);
      return {{"type", "evaluation"}, {"evaluation", protocol::encode(evaluation)}};
    }
    return error_reply(fmt::format("unknown message type '{}'", type), false);
  } catch (const NoGpuError& error) {
    return error_reply(error.what(), true);
  } catch (const gpu::CudaError& error) {
    if (gpu::is_sticky_error(error.result())) context_lost_ = true;
    return error_reply(error.what(), false);
  } catch (const ConfigurationFailure& failure) {
    return error_reply(fmt::format("{}: {}", status_name(failure.status), failure.message), false);
  } catch (const std::exception& error) {
    return error_reply(error.what(), false);
  }
}

EvaluationWorker::~EvaluationWorker() {
  // A worker told to leave while its device is still opening waits for that thread before its members go.
  if (opening_.valid()) opening_.wait();
}

void EvaluationWorker::open_device(int index, const std::filesystem::path& cubin_cache, const std::vector<Dtype>& dtypes,
                                   std::vector<SetupStage>& stages) {
  if (device_index_ == index) return;
  if (device_index_) throw TunerError("an evaluation worker serves one device; start another worker for another");
  const gpu::CudaDriver& cuda = cuda_driver();
  properties_ = gpu::query_device(index);  // validates the index
  limits_ = gpu::query_launch_limits(index);
  KERNLATHE_CUDA_CHECK(cuda.cuDeviceGet(&device_, index));
  char bus_id[64] = {};
  KERNLATHE_CUDA_CHECK(cuda.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device_));
  pci_bus_id_ = bus_id;
  // NVRTC needs no context: the worker's kernels compile (or come from the cubin cache) while the context is
  // created. NVML's first call can take a second: it runs alongside too, and stays out of evaluation deadlines.
  const int major = properties_.arch_major, minor = properties_.arch_minor;
  cubin_cache_ = cubin_cache.empty() ? default_cubin_cache_dir() : cubin_cache;
  std::future<std::pair<BuiltinCubin, double>> kernels;
  if (!dtypes.empty()) {
    kernels = std::async(std::launch::async, [major, minor, cache = cubin_cache_, dtypes] {
      Stopwatch watch;
      BuiltinCubin cubin = worker_kernels_cubin(dtypes, major, minor, cache);
      return std::make_pair(std::move(cubin), watch.milliseconds());
    });
  }
  std::future<double> clocks = std::async(std::launch::async, [bus = pci_bus_id_] {
    Stopwatch watch;
    gpu::read_clocks(bus);
    return watch.milliseconds();
  });
  Stopwatch context_watch;
  // The primary context is the one the runtime API and libraries would share; the worker owns the device.
  KERNLATHE_CUDA_CHECK(cuda.cuDevicePrimaryCtxRetain(&context_, device_));
  KERNLATHE_CUDA_CHECK(cuda.cuCtxSetCurrent(context_));
  // A blocking stream: the synchronous copies of setup and comparison (legacy default stream) stay ordered with
  // the launches. With a non-blocking stream the poison memset once landed after the kernel on an H200 and every
  // output read as unwritten.
  KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&stream_, CU_STREAM_DEFAULT));
  stages.push_back({"create the context", context_watch.milliseconds(), true});
  if (kernels.valid()) {
    auto [cubin, kernels_ms] = kernels.get();
    stages.push_back({kernels_stage_name(cubin, dtypes), kernels_ms, true});
    load_kernels(cubin, dtypes);
  }
  stages.push_back({"NVML", clocks.get(), true});
  device_index_ = index;
}

void EvaluationWorker::load_kernels(const BuiltinCubin& cubin, std::vector<Dtype> dtypes) {
  CUmodule module = nullptr;
  KERNLATHE_CUDA_CHECK(cuda_driver().cuModuleLoadData(&module, cubin.cubin.data()));
  // The users of the old module go before it does.
  comparison_ = OutputComparison(module);
  buffer_fill_ = BufferFill(module);
  worker_kernels_ = gpu::LoadedModule(module);
  kernel_dtypes_ = std::move(dtypes);
}

void EvaluationWorker::ensure_kernels(const std::vector<Dtype>& needed, std::vector<SetupStage>& stages) {
  const bool missing = std::any_of(needed.begin(), needed.end(), [&](Dtype dtype) {
    return std::find(kernel_dtypes_.begin(), kernel_dtypes_.end(), dtype) == kernel_dtypes_.end();
  });
  if (!missing) return;
  std::vector<Dtype> dtypes = kernel_dtypes_;
  dtypes.insert(dtypes.end(), needed.begin(), needed.end());
  dtypes = distinct_dtypes(std::move(dtypes));
  Stopwatch watch;
  const BuiltinCubin cubin = worker_kernels_cubin(dtypes, properties_.arch_major, properties_.arch_minor, cubin_cache_);
  load_kernels(cubin, dtypes);
  stages.push_back({kernels_stage_name(cubin, dtypes), watch.milliseconds()});
}

void EvaluationWorker::begin_opening(int index, const std::filesystem::path& cubin_cache, std::vector<Dtype> dtypes) {
  if (opening_.valid() || device_index_) return;
  opening_ = std::async(std::launch::async, [this, index, cubin_cache, dtypes = std::move(dtypes)] {
    Stopwatch whole;
    std::vector<SetupStage> stages;
    open_device(index, cubin_cache, dtypes, stages);
    stages.insert(stages.begin(), {"open device, begun when the tuner asked for the device", whole.milliseconds(), true});
    return stages;
  });
}

void EvaluationWorker::finish_opening(std::vector<SetupStage>& stages) {
  if (!opening_.valid()) return;
  Stopwatch wait;
  std::future<std::vector<SetupStage>> opening = std::move(opening_);
  std::vector<SetupStage> opened = opening.get();  // rethrows the thread's failure; the setup then tries again
  // What the setup waited for, then the opening itself, which ran while the tuner enumerated the space and built
  // the setup: the difference is what the early start hid.
  stages.push_back({"waited for the device", wait.milliseconds()});
  stages.insert(stages.end(), opened.begin(), opened.end());
  KERNLATHE_CUDA_CHECK(cuda_driver().cuCtxSetCurrent(context_));  // the thread made it current there only
}

void EvaluationWorker::setup(const WorkerSetup& setup) {
  setup_stages_.clear();
  Stopwatch stage;
  const auto stage_done = [&](std::string name) {
    setup_stages_.push_back({std::move(name), stage.milliseconds()});
    stage = Stopwatch();
  };
  finish_opening(setup_stages_);
  stage = Stopwatch();
  // The fill kernels write every buffer; the compare kernels verify the outputs.
  std::vector<Dtype> dtypes;
  for (const WorkerArgument& argument : setup.arguments)
    if (argument.is_buffer) dtypes.push_back(argument.dtype);
  dtypes = distinct_dtypes(std::move(dtypes));
  if (device_index_ != setup.device) {
    std::vector<SetupStage> parts;
    open_device(setup.device, setup.cubin_cache_dir, dtypes, parts);
    stage_done("open device");
    setup_stages_.insert(setup_stages_.end(), parts.begin(), parts.end());
  }
  ensure_kernels(dtypes, setup_stages_);
  stage = Stopwatch();
  const gpu::CudaDriver& cuda = cuda_driver();
  ready_ = false;
  awaiting_reference_.reset();
  streamed_.reset();
  buffers_.clear();
  timer_ = KernelTimer();
  setup_ = setup;
  // Streamed specs compare on the host, against the naive pass's outputs: no reference buffers on the device.
  const bool reference_buffers = setup_.verification_enabled && !setup_.stream;
  int on_host = 0, filled = 0;
  for (const WorkerArgument& argument : setup_.arguments) {
    ArgumentBuffers& buffers = buffers_.emplace_back();
    if (!argument.is_buffer) continue;
    if (argument.element_count < 0) {
      throw TunerError(fmt::format("argument '{}': negative element count {}", argument.name, argument.element_count));
    }
    const std::size_t bytes = static_cast<std::size_t>(argument.element_count) * dtype_size(argument.dtype);
    buffers.data = DeviceBuffer(bytes);
    if (bytes == 0) continue;
    ++filled;
    if (!buffer_fill_.fill(buffers.data.get(), argument.dtype, argument.element_count, argument.init, stream_,
                           properties_.sm_count))
      ++on_host;
    if (argument.role != Role::out) {
      buffers.pristine = DeviceBuffer(bytes);
      KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoDAsync(buffers.pristine.get(), buffers.data.get(), bytes, stream_));
    }
    if (argument.role != Role::in && reference_buffers) buffers.reference = DeviceBuffer(bytes);
  }
  KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream_));
  timer_ = KernelTimer(stream_, setup_.measurement, static_cast<std::size_t>(properties_.l2_cache_bytes));
  stage_done(on_host == 0 ? "fill buffers on the GPU" : fmt::format("fill buffers ({} of {} on the host)", on_host, filled));

  baseline_time_.reset();
  if (setup_.baseline && setup_.baseline->library == "cublas" && !cublas_) {
    phase_ = "cuBLAS load";
    cublas_ = std::make_unique<gpu::Cublas>(stream_);
    stage_done("load cuBLAS");
  }
  // The baseline is timed before the reference runs, so a tuner that compiles the reference meanwhile finds the
  // worker busy with it; each starts from restored buffers, so the order changes neither.
  if (setup_.baseline) {
    phase_ = "baseline timing";
    restore_buffers();
    baseline_time_ = timer_.time([&] { run_baseline(); }, phase_);
    stage_done("time baseline");
  }
  if (setup_.stream) {
    streamed_ = std::make_unique<StreamedEvaluation>(setup_, context_);
    stage_done("open the stream's items");
  }
  if (needs_reference_kernel(setup_) && !setup_.reference) {
    awaiting_reference_.emplace();
    return;
  }
  run_reference();
}

void EvaluationWorker::run_reference() {
  const gpu::CudaDriver& cuda = cuda_driver();
  Stopwatch stage;
  if (setup_.stream) {
    ReferencePassTimes pass;
    Evaluation reference = guarded_evaluation([&](Evaluation& evaluation) {
      phase_ = "stream reference pass";
      PreparedKernel kernel = prepare(*setup_.reference, evaluation);
      pass = streamed_->run_reference(kernel, phase_);
    });
    if (!reference.ok()) {
      throw TunerError(fmt::format("the reference configuration failed on the stream with the naive loader ({}): {}",
                                   status_name(reference.status), reference.message));
    }
    const double total_ms = stage.milliseconds();
    // The module load and preparation, then the pass's own steps.
    setup_stages_.push_back({"prepare the reference",
                             std::max(0.0, total_ms - pass.memory_wait_ms - pass.pass_ms - pass.check_ms)});
    setup_stages_.push_back({"waited for the reference outputs' memory", pass.memory_wait_ms});
    setup_stages_.push_back({"stream reference pass", pass.pass_ms});
    if (setup_.verification_enabled) setup_stages_.push_back({"check the reference outputs", pass.check_ms});
  } else if (setup_.verification_enabled) {
    Evaluation reference = guarded_evaluation([&](Evaluation& evaluation) {
      phase_ = "reference run";
      restore_buffers();
      if (setup_.reference_from_baseline) {
        if (!setup_.baseline) throw TunerError("the setup asks for the baseline as reference but has no baseline");
        run_baseline();
      } else {
        PreparedKernel kernel = prepare(*setup_.reference, evaluation);
        launch(kernel);
      }
      KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream_));
    });
    if (!reference.ok()) {
      throw TunerError(fmt::format("the reference configuration failed ({}): {}", status_name(reference.status),
                                   reference.message));
    }
    for (std::size_t index = 0; index < buffers_.size(); ++index) {
      ArgumentBuffers& buffers = buffers_[index];
      if (buffers.reference.bytes() == 0) continue;
      KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoD(buffers.reference.get(), buffers.data.get(), buffers.data.bytes()));
    }
    // An element the reference never wrote is still poison (NaN for floats) and would fail every configuration:
    // its outputs compared with themselves find exactly those.
    phase_ = "reference check";
    double ignored = 0;
    std::optional<std::string> unwritten = compare_outputs(ignored);
    if (unwritten) throw TunerError("the reference configuration left elements unwritten or NaN: " + *unwritten);
    setup_stages_.push_back({"reference run", stage.milliseconds()});
  }
  ready_ = true;
}

void EvaluationWorker::restore_buffers() {
  const gpu::CudaDriver& cuda = cuda_driver();
  for (std::size_t index = 0; index < buffers_.size(); ++index) {
    const ArgumentBuffers& buffers = buffers_[index];
    if (buffers.data.bytes() == 0) continue;
    if (setup_.arguments[index].role == Role::out) {
      KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8Async(buffers.data.get(), poison_byte, buffers.data.bytes(), stream_));
    } else {
      // Inputs too: a configuration that writes into an input must not change what the next one reads.
      KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoDAsync(buffers.data.get(), buffers.pristine.get(), buffers.data.bytes(), stream_));
    }
  }
}

void EvaluationWorker::read_conditions(Evaluation& result) const {
  const gpu::ClockReading clocks = gpu::read_clocks(pci_bus_id_);
  result.sm_clock_mhz = clocks.sm_clock_mhz;
  result.throttle_reasons = clocks.throttle_reasons;
  const gpu::PowerReading power = gpu::read_power(pci_bus_id_);
  result.power_w = power.power_w;
  result.temperature_c = power.temperature_c;
}

void EvaluationWorker::measure(const std::function<void()>& launch_once, bool with_energy, Evaluation& result,
                               TimingKind kind) {
  result.time = timer_.time(launch_once, phase_, kind);
  result.worker_stages.warmup_ms = timer_.last_warmup_ms();
  result.worker_stages.sampling_ms = timer_.last_sampling_ms();
  // Clocks and power right after the samples, before the energy loop changes the GPU's state.
  Stopwatch conditions;
  read_conditions(result);
  result.worker_stages.conditions_ms = conditions.milliseconds();
  if (!with_energy) return;
  Stopwatch energy_stage;
  if (std::optional<EnergyFigures> energy = timer_.energy(launch_once, result.time.median_ms, pci_bus_id_, phase_)) {
    result.energy_mj = energy->energy_per_launch_mj;
    result.energy_window_ms = energy->window_ms;
  }
  result.worker_stages.energy_ms = energy_stage.milliseconds();
}

// The baseline measured again after setup, as the final round does, so that it shares the candidates' conditions.
void EvaluationWorker::measure_sustained(const std::function<void()>& launch_once, double seconds, Evaluation& result) {
  result.time = timer_.sustained(launch_once, seconds, phase_);
  read_conditions(result);
}

Evaluation EvaluationWorker::measure_baseline(bool with_energy, TimingKind kind, double sustained_seconds) {
  Evaluation evaluation = guarded_evaluation([&](Evaluation& result) {
    phase_ = "baseline timing";
    if (sustained_seconds > 0)
      measure_sustained([&] { run_baseline(); }, sustained_seconds, result);
    else
      measure([&] { run_baseline(); }, with_energy, result, kind);
  });
  evaluation.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return evaluation;
}

void EvaluationWorker::run_baseline() {
  if (!cublas_) throw TunerError("the baseline library is not loaded");
  cublas_->gemm(baseline_gemm_problem(setup_, buffers_));
}

Evaluation EvaluationWorker::guarded_evaluation(const std::function<void(Evaluation&)>& run) {
  Evaluation evaluation;
  try {
    run(evaluation);
  } catch (const ConfigurationFailure& failure) {
    evaluation.status = failure.status;
    evaluation.message = failure.message;
  } catch (const gpu::CudaError& error) {
    CUresult result = error.result();
    std::string name = gpu::cuda_error_name(result);
    if (gpu::is_sticky_error(result)) {
      context_lost_ = true;
      evaluation.status = Status::crashed;
    } else if (result == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
      evaluation.status = Status::resources_exceeded;
    } else {
      evaluation.status = Status::launch_error;
    }
    evaluation.message = fmt::format("{} during the {} ({})", name, phase_, error.what());
  }
  return evaluation;
}

Evaluation EvaluationWorker::evaluate(const EvaluationRequest& request) {
  const gpu::CudaDriver& cuda = cuda_driver();
  Evaluation evaluation = guarded_evaluation([&](Evaluation& result) {
    phase_ = "preparation";
    Stopwatch stage;
    PreparedKernel kernel = prepare(request.launch, result);
    result.worker_stages.preparation_ms = stage.milliseconds();
    if (request.sustained_seconds > 0) {
      measure_sustained([&] { launch(kernel); }, request.sustained_seconds, result);
      return;
    }
    if (request.verify && setup_.verification_enabled) {
      stage = Stopwatch();
      phase_ = "verification run";
      restore_buffers();
      launch(kernel);
      KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream_));
      phase_ = "comparison";
      std::optional<std::string> mismatch = compare_outputs(result.max_error);
      result.worker_stages.verification_ms = stage.milliseconds();
      if (mismatch) throw ConfigurationFailure{Status::wrong_result, *mismatch};
    }
    measure([&] { launch(kernel); }, request.measure_energy, result,
            request.burst ? TimingKind::burst : TimingKind::usual);
  });
  evaluation.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return evaluation;
}

// ---------------------------------------------------------------- streamed workloads (tuner/loader, issue 7)

Evaluation EvaluationWorker::evaluate_streamed(const EvaluationRequest& request) {
  Evaluation evaluation = guarded_evaluation([&](Evaluation& result) {
    phase_ = "preparation";
    PreparedKernel kernel = prepare(request.launch, result);
    streamed_->measure(kernel, request.loader.value_or(setup_.stream->reference_loader),
                       request.verify && setup_.verification_enabled, result, phase_);
    read_conditions(result);
  });
  evaluation.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return evaluation;
}

}  // namespace

int evaluation_worker_main(int in_fd, int out_fd) {
  // Anything a library prints to stdout would corrupt the message channel when it is fd 1: move the channel to a
  // private descriptor and let stdout go where stderr goes.
  if (out_fd == STDOUT_FILENO) {
    out_fd = dup(STDOUT_FILENO);
    dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  EvaluationWorker worker;
  try {
    while (true) {
      protocol::ReadResult request = protocol::read_message(in_fd);
      if (request.outcome != protocol::ReadOutcome::message) return 0;
      protocol::write_message(out_fd, worker.handle(request.message));
      // The context is poisoned: leave at once, without destructors that would call into it.
      if (worker.context_lost()) std::_Exit(exit_context_lost);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "evaluation worker: %s\n", error.what());
    return 1;
  }
}

}  // namespace kernlathe
