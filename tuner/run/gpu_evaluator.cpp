#include "tuner/run/gpu_evaluator.h"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

extern char** environ;

namespace kernlathe {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Context creation, NVRTC for the compare kernels and filling buffers of a few GiB take seconds; a worker that has
// not answered after this long is stuck.
constexpr double device_info_seconds = 60;
constexpr double setup_seconds = 180;
// Module load, buffer restore and comparison on top of the kernel's own time.
constexpr double evaluation_margin_seconds = 3;
// A worker that closed its channel is exiting; one that takes longer than this is killed.
constexpr auto exit_grace = std::chrono::seconds(2);

std::string describe_exit(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int signal_number = WTERMSIG(wait_status);
    const char* abbreviation = sigabbrev_np(signal_number);
    return fmt::format("was killed by signal SIG{} ({})", abbreviation ? abbreviation : std::to_string(signal_number),
                       strsignal(signal_number));
  }
  if (WIFEXITED(wait_status)) {
    int code = WEXITSTATUS(wait_status);
    return fmt::format("exited with code {}{}", code, code == 4 ? " (CUDA context lost)" : "");
  }
  return "ended";
}

// The last non-empty line the worker wrote to stderr (kept in an anonymous file, so nothing has to drain a pipe).
std::string last_line(int fd) {
  struct stat status {};
  if (fstat(fd, &status) != 0 || status.st_size == 0) return {};
  off_t start = std::max<off_t>(0, status.st_size - 4096);
  std::string text(static_cast<std::size_t>(status.st_size - start), '\0');
  ssize_t received = pread(fd, text.data(), text.size(), start);
  if (received <= 0) return {};
  text.resize(static_cast<std::size_t>(received));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::size_t line_start = text.rfind('\n');
  return line_start == std::string::npos ? text : text.substr(line_start + 1);
}

}  // namespace

struct GpuEvaluator::Worker {
  pid_t pid = -1;
  int channel = -1;      // our end of the socket pair
  int stderr_file = -1;  // memfd holding the worker's stderr
};

GpuEvaluator::GpuEvaluator(GpuEvaluatorOptions options) : options_(std::move(options)) {}

GpuEvaluator::~GpuEvaluator() {
  try {
    stop_worker();
  } catch (...) {
    // Nothing useful to do while destroying.
  }
}

void GpuEvaluator::start_worker() {
  int sockets[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    throw TunerError(fmt::format("cannot create the evaluation worker channel: {}", std::strerror(errno)));
  }
  int stderr_file = memfd_create("tuner-evaluation-worker-stderr", MFD_CLOEXEC);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the targets: the worker keeps exactly fds 0, 1 and 2.
  posix_spawn_file_actions_adddup2(&actions, sockets[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, sockets[1], STDOUT_FILENO);
  if (stderr_file >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_file, STDERR_FILENO);
  std::string executable = options_.worker_executable.string();
  std::string subcommand = "__evaluation-worker";
  char* arguments[] = {executable.data(), subcommand.data(), nullptr};
  pid_t pid = -1;
  int spawned = posix_spawn(&pid, executable.c_str(), &actions, nullptr, arguments, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(sockets[1]);
  if (spawned != 0) {
    close(sockets[0]);
    if (stderr_file >= 0) close(stderr_file);
    throw TunerError(fmt::format("cannot start the evaluation worker '{}': {}", executable, std::strerror(spawned)));
  }
  worker_ = std::make_unique<Worker>(Worker{pid, sockets[0], stderr_file});
  ++worker_starts_;
}

// Closes the channel (a healthy worker exits on end of input), waits briefly, kills if needed, and says how the
// worker ended.
std::string GpuEvaluator::stop_worker(bool kill_now) {
  if (!worker_) return {};
  close(worker_->channel);
  if (kill_now) kill(worker_->pid, SIGKILL);
  int wait_status = 0;
  Clock::time_point give_up = Clock::now() + exit_grace;
  while (true) {
    pid_t ended = waitpid(worker_->pid, &wait_status, WNOHANG);
    if (ended == worker_->pid || (ended < 0 && errno != EINTR)) break;
    if (Clock::now() >= give_up) {
      kill(worker_->pid, SIGKILL);
      waitpid(worker_->pid, &wait_status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string description = describe_exit(wait_status);
  if (worker_->stderr_file >= 0) {
    std::string line = last_line(worker_->stderr_file);
    if (!line.empty()) description += "; last stderr line: " + line;
    close(worker_->stderr_file);
  }
  worker_.reset();
  return description;
}

GpuEvaluator::Exchange GpuEvaluator::exchange(const json& message, double seconds) {
  std::optional<Exchange> failed_send = send(message);
  if (failed_send) return *failed_send;
  return receive(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
}

std::optional<GpuEvaluator::Exchange> GpuEvaluator::send(const json& message) {
  if (!worker_) start_worker();
  try {
    protocol::write_message(worker_->channel, message);
  } catch (const TunerError&) {
    Exchange result;
    result.outcome = Exchange::Outcome::died;
    result.description = stop_worker(false);
    return result;
  }
  return std::nullopt;
}

GpuEvaluator::Exchange GpuEvaluator::receive(Clock::time_point deadline) {
  Exchange result;
  protocol::ReadResult read = protocol::read_message(worker_->channel, deadline);
  switch (read.outcome) {
    case protocol::ReadOutcome::message:
      result.reply = std::move(read.message);
      break;
    case protocol::ReadOutcome::closed:
      result.outcome = Exchange::Outcome::died;
      result.description = stop_worker(false);
      break;
    case protocol::ReadOutcome::timed_out:
      result.outcome = Exchange::Outcome::timed_out;
      result.description = stop_worker(true);
      break;
  }
  return result;
}

// An error reply to a request that is not an evaluation: no GPU, or a failure that stops the run.
[[noreturn]] static void throw_error_reply(const json& reply) {
  std::string message = reply.value("message", std::string("unknown error"));
  if (reply.value("no_gpu", false)) throw NoGpuError(message);
  throw TunerError(message);
}

gpu::DeviceInfo GpuEvaluator::device_info() {
  if (device_info_) return *device_info_;
  json request = {{"type", "device_info"}, {"device", options_.device}};
  if (options_.open_device_early) {
    request["open"] = true;
    request["cubin_cache"] = options_.cubin_cache_dir.string();
    std::vector<std::string> dtypes;
    for (Dtype dtype : options_.buffer_dtypes) dtypes.push_back(dtype_name(dtype));
    request["dtypes"] = dtypes;
  }
  Exchange answer = exchange(request, device_info_seconds);
  if (answer.outcome == Exchange::Outcome::died) {
    throw TunerError(fmt::format("the evaluation worker '{}' {} before describing the device",
                                 options_.worker_executable.string(), answer.description));
  }
  if (answer.outcome == Exchange::Outcome::timed_out) {
    throw TunerError(fmt::format("the evaluation worker did not describe the device within {} s", device_info_seconds));
  }
  if (answer.reply.value("type", "") != "device_info") throw_error_reply(answer.reply);
  device_info_ = protocol::decode_device_info(answer.reply.at("info"));
  return *device_info_;
}

double GpuEvaluator::copy_bandwidth_gbps() {
  if (!setup_) throw TunerError("copy_bandwidth_gbps() before setup()");
  Exchange answer = exchange({{"type", "copy_bandwidth"}}, setup_seconds);
  if (answer.outcome != Exchange::Outcome::reply)
    throw TunerError(fmt::format("the evaluation worker failed while measuring the copy bandwidth ({})",
                                 answer.outcome == Exchange::Outcome::died ? answer.description : "timed out"));
  if (answer.reply.value("type", "") != "copy_bandwidth") throw_error_reply(answer.reply);
  return answer.reply.at("gbps").get<double>();
}

Ceilings GpuEvaluator::ceilings() {
  // The tensor ceiling's GEMMs and the FMA kernel's compile take about a second; cuBLAS's load may take more.
  Exchange answer = exchange({{"type", "ceilings"}, {"device", options_.device}}, setup_seconds + 30);
  if (answer.outcome != Exchange::Outcome::reply)
    throw TunerError(fmt::format("the evaluation worker failed while measuring the ceilings ({})",
                                 answer.outcome == Exchange::Outcome::died ? answer.description : "timed out"));
  if (answer.reply.value("type", "") != "ceilings") throw_error_reply(answer.reply);
  std::map<std::string, std::string> values;
  if (answer.reply.contains("values"))
    for (const auto& [key, value] : answer.reply.at("values").items()) values[key] = value.get<std::string>();
  Ceilings ceilings = ceilings_from_metadata(values);
  ceilings.failures = answer.reply.value("failures", "");
  ceiling_parts_.clear();
  for (const nlohmann::json& part : answer.reply.value("parts_seconds", nlohmann::json::array()))
    ceiling_parts_.push_back({part.at(0).get<std::string>(), part.at(1).get<double>()});
  return ceilings;
}

double GpuEvaluator::pinned_copy_in_gbps() {
  if (!setup_) throw TunerError("pinned_copy_in_gbps() before setup()");
  Exchange answer = exchange({{"type", "pinned_copy_in"}}, setup_seconds);
  if (answer.outcome != Exchange::Outcome::reply)
    throw TunerError(fmt::format("the evaluation worker failed while measuring the pinned host-to-device bandwidth ({})",
                                 answer.outcome == Exchange::Outcome::died ? answer.description : "timed out"));
  if (answer.reply.value("type", "") != "pinned_copy_in") throw_error_reply(answer.reply);
  return answer.reply.at("gbps").get<double>();
}

void GpuEvaluator::accept_setup_reply(const Exchange& answer, double seconds, const char* expected_type) {
  if (answer.outcome == Exchange::Outcome::died) {
    throw TunerError(fmt::format("the evaluation worker {} during setup (buffers and reference configuration)",
                                 answer.description));
  }
  if (answer.outcome == Exchange::Outcome::timed_out) {
    throw TunerError(fmt::format("the evaluation worker's setup did not finish within {} s: does the reference "
                                 "configuration terminate?", seconds));
  }
  if (answer.reply.value("type", "") != expected_type) throw_error_reply(answer.reply);
  for (const nlohmann::json& stage : answer.reply.value("stages_ms", nlohmann::json::array()))
    setup_stages_.push_back({stage.at(0).get<std::string>(), stage.at(1).get<double>() / 1e3,
                             stage.size() > 2 && stage.at(2).get<bool>()});
  if (answer.reply.contains("baseline")) {
    const nlohmann::json& baseline = answer.reply.at("baseline");
    BaselineTime time;
    time.time = protocol::decode_time(baseline.at("time"));
    time.library = baseline.value("library", "");
    baseline_ = time;
  }
}

void GpuEvaluator::send_setup() {
  const double seconds = setup_seconds + options_.timeout_seconds;
  setup_stages_.clear();
  baseline_.reset();
  accept_setup_reply(exchange({{"type", "setup"}, {"setup", protocol::encode(*setup_)}}, seconds), seconds, "setup_done");
}

void GpuEvaluator::setup(const WorkerSetup& setup) {
  setup_ = setup;
  setup_->measurement = options_.measurement;
  setup_->device = options_.device;
  setup_->cubin_cache_dir = options_.cubin_cache_dir;
  try {
    send_setup();
  } catch (...) {
    setup_.reset();
    throw;
  }
}

void GpuEvaluator::setup(const WorkerSetup& setup, const std::function<KernelLaunch()>& reference) {
  if (!needs_reference_kernel(setup)) throw TunerError("a setup with a later reference launch that needs none");
  setup_ = setup;
  setup_->measurement = options_.measurement;
  setup_->device = options_.device;
  setup_->cubin_cache_dir = options_.cubin_cache_dir;
  setup_->reference.reset();
  setup_stages_.clear();
  baseline_.reset();
  const double seconds = setup_seconds + options_.timeout_seconds;
  try {
    const Clock::time_point setup_deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::optional<Exchange> failed = send({{"type", "setup"}, {"setup", protocol::encode(*setup_)}});
    if (failed) accept_setup_reply(*failed, seconds, "setup_done");
    const KernelLaunch launch = reference();
    setup_->reference = launch;
    // Sent before the setup's reply is read: the worker finds it waiting as soon as its buffers are ready.
    failed = send({{"type", "reference"}, {"launch", protocol::encode(launch)}});
    if (failed) accept_setup_reply(*failed, seconds, "setup_done");  // the worker died during its setup
    const Clock::time_point reference_deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    accept_setup_reply(receive(setup_deadline), seconds, "setup_done");
    accept_setup_reply(receive(reference_deadline), seconds, "reference_done");
  } catch (...) {
    // The worker may hold a reply no one will read, or a setup without its reference: a later request starts a
    // fresh one.
    setup_.reset();
    stop_worker(true);
    throw;
  }
}

double GpuEvaluator::reply_deadline_seconds(const EvaluationRequest& request) const {
  double timeout = request.timeout_seconds > 0 ? request.timeout_seconds : options_.timeout_seconds;
  // The energy loop waits at most a second for each counter step (tuner/measure/kernel_timer.h).
  const double energy_seconds = request.measure_energy ? options_.measurement.energy_periods + 1.0 : 0.0;
  return timeout + options_.measurement.warmup_ms / 1000 + options_.measurement.max_seconds + energy_seconds +
         request.sustained_seconds + evaluation_margin_seconds;
}

Evaluation GpuEvaluator::measure_baseline(bool measure_energy, bool burst, double sustained_seconds) {
  if (!setup_ || !setup_->baseline) throw TunerError("GpuEvaluator::measure_baseline called without a baseline");
  if (!worker_) send_setup();
  EvaluationRequest timing;
  timing.measure_energy = measure_energy;
  timing.sustained_seconds = sustained_seconds;
  const double seconds = reply_deadline_seconds(timing);
  Exchange answer = exchange({{"type", "baseline"}, {"measure_energy", measure_energy}, {"burst", burst},
                              {"sustained_seconds", sustained_seconds}},
                             seconds);
  Evaluation evaluation;
  if (answer.outcome == Exchange::Outcome::reply) {
    if (answer.reply.value("type", "") != "evaluation") throw_error_reply(answer.reply);
    evaluation = protocol::decode_evaluation(answer.reply.at("evaluation"));
    if (evaluation.status == Status::crashed) stop_worker(false);
  } else {
    evaluation.status = answer.outcome == Exchange::Outcome::died ? Status::crashed : Status::timeout;
    evaluation.message = answer.outcome == Exchange::Outcome::died ? "the evaluation worker " + answer.description
                                                                   : fmt::format("the baseline gave no result within {:.1f} s", seconds);
  }
  return evaluation;
}

Evaluation GpuEvaluator::evaluate(const EvaluationRequest& request) {
  start(request);
  return finish();
}

void GpuEvaluator::start(const EvaluationRequest& request) {
  if (!setup_) throw TunerError("GpuEvaluator::start called before setup");
  if (started_) throw TunerError("GpuEvaluator::start called while an evaluation is under way");
  if (!worker_) send_setup();  // a fresh worker after a crash or timeout: buffers and reference again
  started_.emplace();
  started_->seconds = reply_deadline_seconds(request);
  started_->deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(started_->seconds));
  started_->failed_send = send({{"type", "evaluate"}, {"request", protocol::encode(request)}});
}

Evaluation GpuEvaluator::finish() {
  if (!started_) throw TunerError("GpuEvaluator::finish called without an evaluation under way");
  const Started started = std::move(*started_);
  started_.reset();
  const double seconds = started.seconds;
  Exchange answer = started.failed_send ? *started.failed_send : receive(started.deadline);
  Evaluation evaluation;
  switch (answer.outcome) {
    case Exchange::Outcome::reply:
      if (answer.reply.value("type", "") != "evaluation") throw_error_reply(answer.reply);
      evaluation = protocol::decode_evaluation(answer.reply.at("evaluation"));
      // The worker leaves after reporting a lost context; collect it now so the next evaluate starts afresh.
      if (evaluation.status == Status::crashed) stop_worker(false);
      break;
    case Exchange::Outcome::died:
      evaluation.status = Status::crashed;
      evaluation.message = "the evaluation worker " + answer.description;
      break;
    case Exchange::Outcome::timed_out:
      evaluation.status = Status::timeout;
      evaluation.message = fmt::format("no result within {:.1f} s (kernel timeout plus measurement): worker killed", seconds);
      break;
  }
  if (evaluation.timestamp == 0) {
    evaluation.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  return evaluation;
}

}  // namespace kernlathe
