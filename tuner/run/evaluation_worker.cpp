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
#include <functional>
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
#include "tuner/run/baseline_problem.h"
#include "tuner/run/kernel_preparation.h"
#include "tuner/run/output_comparison.h"
#include "tuner/run/element_values.h"
#include "tuner/run/protocol.h"
#include "tuner/run/streamed_evaluation.h"

namespace kernlathe {
namespace {

using gpu::cuda_driver;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Exit status of a worker whose context was lost; the tuner starts a fresh worker for the next evaluation.
constexpr int exit_context_lost = 4;

using gpu::DeviceBuffer;
using gpu::LoadedModule;

class EvaluationWorker {
 public:
  json handle(const json& message);
  bool context_lost() const { return context_lost_; }

 private:
  void open_device(int index);
  void setup(const WorkerSetup& setup);
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
  void measure(const std::function<void()>& launch_once, bool with_energy, Evaluation& result);
  Evaluation measure_baseline(bool with_energy);
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
  std::vector<std::pair<std::string, double>> setup_stages_ms_;  // the last setup's stages, in order
  bool context_lost_ = false;

  // Streamed workloads (tuner/loader): the reference is a naive pipeline pass whose outputs stay on the host, and
  // a configuration is measured over whole passes through the dataset.
  void setup_streamed(const WorkerSetup& setup);
  Evaluation evaluate_streamed(const EvaluationRequest& request);
  std::unique_ptr<StreamedEvaluation> streamed_;  // created by setup_streamed
};

// Wall time since construction, for the worker's stage times.
class Stopwatch {
 public:
  double milliseconds() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

json error_reply(const std::string& message, bool no_gpu) {
  return {{"type", "error"}, {"no_gpu", no_gpu}, {"message", message}};
}

json EvaluationWorker::handle(const json& message) {
  try {
    std::string type = message.at("type").get<std::string>();
    if (type == "device_info") {
      gpu::DeviceInfo info = gpu::query_device_info(message.value("device", 0));
      return {{"type", "device_info"}, {"info", protocol::encode(info)}};
    }
    if (type == "setup") {
      WorkerSetup decoded = protocol::decode_setup(message.at("setup"));
      if (decoded.stream) {
        setup_streamed(decoded);
      } else {
        setup(decoded);
      }
      json reply = {{"type", "setup_done"}};
      for (const auto& [stage, milliseconds] : setup_stages_ms_) reply["stages_ms"].push_back({stage, milliseconds});
      if (baseline_time_) {
        reply["baseline"] = {{"time", protocol::encode(*baseline_time_)},
                             {"library", cublas_ ? cublas_->version() : std::string()}};
      }
      return reply;
    }
    if (type == "baseline") {
      if (!ready_ || !setup_.baseline) return error_reply("baseline before a setup with a baseline", false);
      Evaluation evaluation = measure_baseline(message.value("measure_energy", false));
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
      open_device(message.value("device", 0));
      const Ceilings ceilings = measure_ceilings(stream_, properties_);
      json reply = {{"type", "ceilings"}, {"failures", ceilings.failures}};
      for (const auto& [key, value] : ceiling_metadata(ceilings)) reply["values"][key] = value;
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

void EvaluationWorker::open_device(int index) {
  if (device_index_ == index) return;
  if (device_index_) throw TunerError("an evaluation worker serves one device; start another worker for another");
  const gpu::CudaDriver& cuda = cuda_driver();
  properties_ = gpu::query_device(index);  // validates the index
  limits_ = gpu::query_launch_limits(index);
  KERNLATHE_CUDA_CHECK(cuda.cuDeviceGet(&device_, index));
  char bus_id[64] = {};
  KERNLATHE_CUDA_CHECK(cuda.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device_));
  pci_bus_id_ = bus_id;
  // The primary context is the one the runtime API and libraries would share; the worker owns the device.
  KERNLATHE_CUDA_CHECK(cuda.cuDevicePrimaryCtxRetain(&context_, device_));
  KERNLATHE_CUDA_CHECK(cuda.cuCtxSetCurrent(context_));
  // A blocking stream: the synchronous copies of setup and comparison (legacy default stream) stay ordered with
  // the launches. With a non-blocking stream the poison memset once landed after the kernel on an H200 and every
  // output read as unwritten.
  KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&stream_, CU_STREAM_DEFAULT));
  gpu::read_clocks(pci_bus_id_);  // NVML's first call can take a second: keep it out of evaluation deadlines
  comparison_ = OutputComparison(properties_.arch_major, properties_.arch_minor);
  device_index_ = index;
}

void EvaluationWorker::setup(const WorkerSetup& setup) {
  setup_stages_ms_.clear();
  Stopwatch stage;
  const auto stage_done = [&](std::string name) {
    setup_stages_ms_.emplace_back(std::move(name), stage.milliseconds());
    stage = Stopwatch();
  };
  open_device(setup.device);
  stage_done("open device");
  const gpu::CudaDriver& cuda = cuda_driver();
  ready_ = false;
  buffers_.clear();
  timer_ = KernelTimer();
  setup_ = setup;
  for (const WorkerArgument& argument : setup_.arguments) {
    ArgumentBuffers& buffers = buffers_.emplace_back();
    if (!argument.is_buffer) continue;
    if (argument.element_count < 0) {
      throw TunerError(fmt::format("argument '{}': negative element count {}", argument.name, argument.element_count));
    }
    std::vector<std::byte> contents = initial_contents(argument.dtype, argument.element_count, argument.init);
    buffers.data = DeviceBuffer(contents.size());
    if (contents.empty()) continue;
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyHtoD(buffers.data.get(), contents.data(), contents.size()));
    if (argument.role != Role::out) {
      buffers.pristine = DeviceBuffer(contents.size());
      KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoD(buffers.pristine.get(), buffers.data.get(), contents.size()));
    }
    if (argument.role != Role::in && setup_.verification_enabled) buffers.reference = DeviceBuffer(contents.size());
  }
  timer_ = KernelTimer(stream_, setup_.measurement, static_cast<std::size_t>(properties_.l2_cache_bytes));
  stage_done("fill buffers");

  baseline_time_.reset();
  if (setup_.baseline && setup_.baseline->library == "cublas" && !cublas_) {
    phase_ = "cuBLAS load";
    cublas_ = std::make_unique<gpu::Cublas>(stream_);
    stage_done("load cuBLAS");
  }
  if (setup_.verification_enabled) {
    Evaluation reference = guarded_evaluation([&](Evaluation& evaluation) {
      phase_ = "reference run";
      restore_buffers();
      if (setup_.reference_from_baseline) {
        if (!setup_.baseline) throw TunerError("the setup asks for the baseline as reference but has no baseline");
        run_baseline();
      } else {
        PreparedKernel kernel = prepare(setup_.reference, evaluation);
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
    stage_done("reference run");
  }
  if (setup_.baseline) {
    phase_ = "baseline timing";
    restore_buffers();
    baseline_time_ = timer_.time([&] { run_baseline(); }, phase_);
    stage_done("time baseline");
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

void EvaluationWorker::measure(const std::function<void()>& launch_once, bool with_energy, Evaluation& result) {
  result.time = timer_.time(launch_once, phase_);
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
Evaluation EvaluationWorker::measure_baseline(bool with_energy) {
  Evaluation evaluation = guarded_evaluation([&](Evaluation& result) {
    phase_ = "baseline timing";
    measure([&] { run_baseline(); }, with_energy, result);
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
    measure([&] { launch(kernel); }, request.measure_energy, result);
  });
  evaluation.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return evaluation;
}

// ---------------------------------------------------------------- streamed workloads (tuner/loader, issue 7)

void EvaluationWorker::setup_streamed(const WorkerSetup& setup) {
  // The ordinary setup opens the device and fills the non-streamed arguments; the stream's input and output hold
  // one item there and stay unused. Its reference run is replaced by a naive pipeline pass over every item.
  WorkerSetup without_reference = setup;
  without_reference.verification_enabled = false;
  this->setup(without_reference);
  ready_ = false;
  setup_.verification_enabled = setup.verification_enabled;
  streamed_ = std::make_unique<StreamedEvaluation>(setup_, context_);
  Evaluation reference = guarded_evaluation([&](Evaluation& evaluation) {
    phase_ = "stream reference pass";
    PreparedKernel kernel = prepare(setup_.reference, evaluation);
    streamed_->run_reference(kernel, phase_);
  });
  if (!reference.ok()) {
    throw TunerError(fmt::format("the reference configuration failed on the stream with the naive loader ({}): {}",
                                 status_name(reference.status), reference.message));
  }
  ready_ = true;
}

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
