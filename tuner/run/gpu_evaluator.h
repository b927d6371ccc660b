#pragma once
// Evaluates configurations on one GPU through an evaluation worker process (evaluation_worker.h).
//
// The tuner process never creates a CUDA context: a kernel that faults poisons its context, and one that never ends
// holds the GPU, so the context lives in a worker that can be killed. GpuEvaluator starts the worker
// (`worker_executable __evaluation-worker`), waits for each reply with a deadline, kills the worker when the deadline
// passes (status timeout) and notices when it dies (status crashed). The next evaluate() then starts a fresh worker
// and replays the setup, reference run included, without the caller doing anything.
//
// Not thread-safe: one GpuEvaluator per GPU, used from one thread.

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/gpu/device.h"
#include "tuner/record/evaluation.h"
#include "tuner/measure/ceilings.h"
#include "tuner/measure/measurement.h"
#include "tuner/run/protocol.h"

namespace kernlathe {

// The baseline's time (cuBLAS for GEMM), measured by the worker during setup with the same settings as the
// configurations.
struct BaselineTime {
  TimeStatistics time;
  std::string library;  // "cuBLAS 13.0.2"
};

struct GpuEvaluatorOptions {
  std::filesystem::path worker_executable;  // the `tune` binary
  int device = 0;
  double timeout_seconds = 10;  // per configuration, for requests that set none
  MeasurementSettings measurement;
  std::filesystem::path cubin_cache_dir;  // the worker's own kernels' cubin; empty: the default cache
  // The worker opens the device (context, its kernels, NVML) as soon as it has described it, while the caller
  // builds the setup: for callers that will set up, not for a mere query of the device.
  bool open_device_early = false;
  // The dtypes of the setup's buffers, when open_device_early: the worker compiles its fill and compare kernels
  // for these while it opens the device (a setup with others compiles those when it comes).
  std::vector<Dtype> buffer_dtypes;
};

// One step of the worker's setup, for the start-up profile. `alongside`: it overlapped the steps around it (a
// thread of the worker, or the time before the setup came), so it is not part of their sum.
struct WorkerSetupStage {
  std::string name;
  double seconds = 0;
  bool alongside = false;
};

class GpuEvaluator {
 public:
  explicit GpuEvaluator(GpuEvaluatorOptions options);
  ~GpuEvaluator();  // ends the worker
  GpuEvaluator(const GpuEvaluator&) = delete;
  GpuEvaluator& operator=(const GpuEvaluator&) = delete;

  // Asked of the worker once, then remembered. Throws NoGpuError without a driver or device, TunerError when the
  // worker cannot be started ("cannot start the evaluation worker <path>: ...").
  gpu::DeviceInfo device_info();
  DeviceProperties device_properties() { return device_info().properties; }

  // Allocates and fills the buffers and runs the reference configuration in the worker. setup.measurement and
  // setup.device are replaced by the options' values, so the worker, the deadlines and device_info() agree.
  // Throws TunerError when the reference configuration fails and NoGpuError without a GPU.
  // Timing runs launch a configuration many times over the same buffers, so in-out buffers hold whatever the last
  // timed launch left; only verified runs start from the initial contents.
  void setup(const WorkerSetup& setup);
  // The same in two messages: the setup without its reference launch goes first, so the worker fills the
  // buffers and times the baseline while `reference` runs here (the reference configuration's compile); the launch
  // it returns follows. When `reference` throws, the worker is stopped and the exception passes on. Only for a
  // setup where needs_reference_kernel() holds.
  void setup(const WorkerSetup& setup, const std::function<KernelLaunch()>& reference);

  // Never throws for the configuration's fault: compile, launch, verification, timeout and crash outcomes come back
  // as the status. The configuration, compile_ms and cubin_cached are left for the caller to fill.
  // Throws TunerError when called before setup() or when a restarted worker cannot replay the setup.
  Evaluation evaluate(const EvaluationRequest& request);
  // evaluate() in two halves: start() sends the request and returns at once, finish() waits for the result (the
  // deadline runs from start()), so the caller can work while the GPU measures. One evaluation at a time.
  void start(const EvaluationRequest& request);
  Evaluation finish();

  // The baseline (cuBLAS) timed again with the configurations' rule, energy too when asked: the final round
  // measures it beside the candidates. Throws TunerError when the setup has no baseline.
  // burst: a burst timing (the caller rested the GPU first: tuner/measure/measurement.h); sustained_seconds > 0:
  // the sustained figure instead (KernelTimer::sustained).
  Evaluation measure_baseline(bool measure_energy, bool burst = false, double sustained_seconds = 0);

  // Device-to-device copy bandwidth (bytes read + written, GB/s), measured by the worker after setup(); the
  // ceiling that memory-bound results are reported against. Throws TunerError when the worker fails.
  double copy_bandwidth_gbps();

  // Every ceiling of tuner/measure/ceilings.h, measured by the worker (no setup needed). Throws TunerError when
  // the worker fails.
  Ceilings ceilings();
  // The seconds each ceiling took in the last ceilings(), in order ("copy", "pinned host-to-device", ...).
  const std::vector<WorkerSetupStage>& ceiling_parts() const { return ceiling_parts_; }

  // Host-to-device bandwidth of one large copy from pinned memory (GB/s), measured by the worker after setup():
  // the ceiling streamed workloads are reported against (tuner/loader). Throws TunerError when the worker fails.
  double pinned_copy_in_gbps();

  // The baseline's time from the last setup, when the setup has a baseline. A worker restarted after a crash
  // measures it again; the latest measurement is kept.
  const std::optional<BaselineTime>& baseline_time() const { return baseline_; }

  // The worker's stages during the last setup, in order ("open device", "fill buffers on the GPU", "load cuBLAS",
  // "time baseline", "reference run"; those that ran, with their parts): the start-up profile of `tune run`.
  const std::vector<WorkerSetupStage>& setup_stages() const { return setup_stages_; }

  // Worker processes started so far (a restart after a crash or timeout adds one).
  int worker_starts() const { return worker_starts_; }

  // Seconds evaluate() waits for a reply: the kernel timeout, the warm-up, the sampling cap and a margin for module
  // load and verification.
  double reply_deadline_seconds(const EvaluationRequest& request) const;

 private:
  struct Worker;
  struct Exchange {
    enum class Outcome { reply, died, timed_out } outcome = Outcome::reply;
    nlohmann::json reply;
    std::string description;  // how the worker ended, when it did
  };
  struct Started {  // an evaluation between start() and finish()
    double seconds = 0;
    std::chrono::steady_clock::time_point deadline;
    std::optional<Exchange> failed_send;
  };
  void start_worker();
  std::string stop_worker(bool kill_now = false);
  Exchange exchange(const nlohmann::json& message, double seconds);
  // The halves of exchange(): send() returns the outcome when the worker died while being written to.
  std::optional<Exchange> send(const nlohmann::json& message);
  Exchange receive(std::chrono::steady_clock::time_point deadline);
  void send_setup();
  // The setup's (or the reference's) reply: its stages appended, the baseline's time kept; throws for a worker
  // that died, timed out or answered with an error.
  void accept_setup_reply(const Exchange& answer, double seconds, const char* expected_type);

  GpuEvaluatorOptions options_;
  std::unique_ptr<Worker> worker_;
  std::optional<WorkerSetup> setup_;
  std::optional<gpu::DeviceInfo> device_info_;
  std::optional<BaselineTime> baseline_;
  std::vector<WorkerSetupStage> setup_stages_;
  std::vector<WorkerSetupStage> ceiling_parts_;
  std::optional<Started> started_;
  int worker_starts_ = 0;
};

}  // namespace kernlathe
