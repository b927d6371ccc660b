#include "tuner/cli/sweep_command.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tuner/cluster/communicator.h"
#include "tuner/common/error.h"
#include "tuner/common/output_folder.h"
#include "tuner/compile/compile_pool.h"
#include "tuner/session/workload_schedule.h"
#include "tuner/spec/spec_loader.h"
#include "tuner/spec/workload.h"

namespace kernlathe {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// A file name part for a problem: "03-gemm_bf16-M=16,N=6144".
std::string problem_label(std::size_t index, const WorkloadProblem& problem) {
  std::string label = fmt::format("{:02}-{}", index + 1, problem.spec.stem().string());
  if (!problem.symbols.empty()) label += "-" + problem.problem_text();
  return label;
}

std::string device_list(const std::vector<int>& devices) { return fmt::format("{}", fmt::join(devices, ",")); }

Json read_state(const fs::path& file) {
  if (!fs::exists(file)) return Json::object();
  std::ifstream in(file);
  try {
    return Json::parse(in);
  } catch (const Json::exception& error) {
    throw InputError(fmt::format("{}: not a sweep state ({}); remove it or pass --restart", file.string(), error.what()));
  }
}

// Only the sweep's own thread writes the state, so one writer at a time.
void write_state(const fs::path& file, const Json& state) {
  const fs::path temporary = file.string() + ".tmp";
  std::ofstream(temporary) << state.dump(2) << "\n";
  fs::rename(temporary, file);  // never a half-written state
}

// One summary row from a problem's `tune run --json` report.
Json summary_row(const std::string& label, const WorkloadProblem& problem, const fs::path& report_file, int status,
                 const Json& devices) {
  Json row = {{"problem", label}, {"spec", problem.spec.string()}, {"symbols", problem.problem_text()},
              {"exit", status}, {"devices", devices}, {"report", report_file.string()}};
  try {
    std::ifstream in(report_file);
    const Json parsed = Json::parse(in);
    // GPUs of several models tune a problem in one session each, and the report is an array: the first model's.
    const Json report = parsed.is_array() && !parsed.empty() ? parsed.front() : parsed;
    row["evaluated"] = report.value("evaluated", 0);
    row["seconds"] = report.value("seconds", 0.0);
    if (report.contains("best") && !report["best"].empty()) {
      const Json& best = report["best"][0];
      row["best_ms"] = best.value("median_ms", 0.0);
      if (best.contains("fraction_of_baseline")) row["fraction_of_baseline"] = best["fraction_of_baseline"];
    }
  } catch (const std::exception&) {
    // A run that failed early wrote no report: the row says only its exit code.
  }
  return row;
}

void print_summary(std::FILE* out, const std::string& workload, const fs::path& state_file, const Json& rows, bool json) {
  if (json) {
    fmt::print(out, "{}\n", Json{{"workload", workload}, {"state", state_file.string()}, {"problems", rows}}.dump(2));
    return;
  }
  fmt::print(out, "{:<48} {:>5} {:>10} {:>12} {:>8}  {}\n", "problem", "exit", "best ms", "of baseline", "seconds",
             "devices");
  for (const Json& row : rows)
    fmt::print(out, "{:<48} {:>5} {:>10} {:>12} {:>8}  {}\n", row["problem"].get<std::string>(), row["exit"].get<int>(),
               row.contains("best_ms") ? fmt::format("{:.4f}", row["best_ms"].get<double>()) : "-",
               row.contains("fraction_of_baseline") && row["fraction_of_baseline"].is_number()
                   ? fmt::format("{:.3f}", row["fraction_of_baseline"].get<double>()) : "-",
               row.contains("seconds") ? fmt::format("{:.1f}", row["seconds"].get<double>()) : "-",
               row["devices"].is_array() && !row["devices"].empty()
                   ? device_list(row["devices"].get<std::vector<int>>()) : "-");
}

// The GPUs a sweep spreads its problems over: --devices, or --device alone. Where --devices needs a GPU to count
// them (all) and there is none, the list is empty and the sweep runs as with one GPU: its first run meets the
// missing GPU as `tune run` does (exit 3).
std::vector<int> sweep_devices(const RunCommand& run) {
  if (run.devices.empty()) return {run.common.device};
  std::vector<int> devices;
  try {
    devices = parse_device_list(run.devices, false);
  } catch (const NoGpuError&) {
    return {};
  }
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    throw InputError(fmt::format("--devices {}: names a GPU twice", run.devices));
  return devices;
}

struct CloseFile {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// What a problem's run left: its exit code, or what it threw.
struct FinishedRun {
  std::size_t problem = 0;
  int status = exit_failure;
  std::exception_ptr error;
};

// One sweep: the problems, their state and the runs in flight. The sweep's own thread starts runs, takes their
// results, writes the state and prints; each run has a thread of its own that touches nothing but its RunCommand,
// its report file and the queue of finished runs.
//
// What runs at once share, and why that is safe: the best cache (an flock() per update, taken per open file, so
// threads of one process exclude each other as processes do, and a rename into place); the cubin cache and the
// ceiling cache (temporary names unique per process and thread, renamed into place); the results database that
// the default prior reads (a record being appended is read up to its last whole row); the NVRTC and driver
// libraries (loaded under a mutex); stdio (each message one call, so lines are not cut into). A run's records, its
// run.json and its report are its own: identical problems never run at once (startable_problems). SIGPIPE is
// ignored once, in main, before any thread starts.
class Sweep {
 public:
  Sweep(const RunCommand& run, const Workload& workload, const fs::path& state_dir, Json state)
      : run_(run),
        workload_(workload),
        state_dir_(state_dir),
        state_file_(state_dir / "state.json"),
        state_(std::move(state)),
        devices_(sweep_devices(run)),
        spread_(devices_.size() > 1),
        // A sequential sweep schedules over one stand-in slot: each run gets the sweep's device options whole.
        slots_(spread_ ? devices_ : std::vector<int>{0}),
        rows_(workload.problems.size()),
        phase_(workload.problems.size(), Phase::waiting) {
    for (std::size_t index = 0; index < workload_.problems.size(); ++index) {
      const WorkloadProblem& problem = workload_.problems[index];
      labels_.push_back(problem_label(index, problem));
      record_keys_.push_back(problem.spec.string() + " " + problem.problem_text());
      if (entry(index).value("status", "") == "done") phase_[index] = Phase::done_before;
    }
  }

  int run(std::FILE* results) {
    if (spread_)
      fmt::print(stderr, "sweep {}: {} problems over devices {}, up to {} at once\n", workload_.name,
                 workload_.problems.size(), device_list(devices_), devices_.size());
    while (true) {
      if (!stopping_) {
        announce_the_skipped();
        start_what_can_start();
      }
      if (threads_.empty()) break;
      finish(wait_for_a_run());
    }
    if (no_gpu_) std::rethrow_exception(no_gpu_);
    if (stopping_) return exit_no_gpu;
    Json rows = Json::array();
    for (const std::optional<Json>& row : rows_)
      if (row) rows.push_back(*row);
    print_summary(results, workload_.name, state_file_, rows, run_.common.json);
    return worst_;
  }

 private:
  enum class Phase { waiting, running, finished, done_before };

  Json entry(std::size_t index) const {
    const Json& problems = state_["problems"];
    return problems.contains(labels_[index]) ? problems[labels_[index]] : Json::object();
  }
  fs::path report_file(std::size_t index) const { return state_dir_ / (labels_[index] + ".json"); }

  // The problems done before are said to be skipped in workload order, once every problem ahead of them started:
  // a sequential sweep says so between the same runs as it always did.
  void announce_the_skipped() {
    for (; announced_ < phase_.size() && phase_[announced_] != Phase::waiting; ++announced_) {
      if (phase_[announced_] != Phase::done_before) continue;
      const Json before = entry(announced_);
      fmt::print(stderr, "sweep {}: {}/{} {} done before, skipped\n", workload_.name, announced_ + 1,
                 workload_.problems.size(), labels_[announced_]);
      rows_[announced_] = summary_row(labels_[announced_], workload_.problems[announced_], report_file(announced_),
                                      before.value("exit", 0), before.value("devices", Json::array()));
    }
  }

  void start_what_can_start() {
    std::vector<std::size_t> waiting;
    std::set<std::string> running_keys;
    for (std::size_t index = 0; index < phase_.size(); ++index) {
      if (phase_[index] == Phase::waiting) waiting.push_back(index);
      if (phase_[index] == Phase::running) running_keys.insert(record_keys_[index]);
    }
    std::set<int> held;
    for (const auto& running : held_slots_) held.insert(running.second.begin(), running.second.end());
    std::vector<int> free;
    for (int slot : slots_)
      if (!held.count(slot)) free.push_back(slot);
    for (const ProblemStart& start : schedule_starts(startable_problems(waiting, record_keys_, running_keys), free))
      start_problem(start.problem, start.devices);
  }

  // The problem's `tune run`: on its devices, with its records under --out and, there, the finished problems of its
  // spec ahead of it as priors (the results database's default prior does not look under --out).
  RunCommand run_for(std::size_t index, const std::vector<int>& devices, bool resume) const {
    const WorkloadProblem& problem = workload_.problems[index];
    RunCommand one = run_;
    one.common.spec = problem.spec.string();
    one.common.problem = problem.problem_text();
    one.common.json = true;
    one.resume = resume;  // interrupted: go on from its records
    if (spread_) {
      one.devices = device_list(devices);
      if (one.jobs == 0) one.jobs = compile_jobs_for(host_compile_jobs(), devices.size(), devices_.size());
    }
    if (!run_.out.empty()) {
      one.out = (state_dir_ / labels_[index]).string();
      if (!run_.no_prior)
        for (std::size_t earlier = 0; earlier < index; ++earlier) {
          const fs::path records = state_dir_ / labels_[earlier] / "evaluations.csv";
          if (workload_.problems[earlier].spec == problem.spec && phase_[earlier] != Phase::running &&
              fs::exists(records))
            one.prior.push_back(records.string());
        }
    }
    return one;
  }

  void start_problem(std::size_t index, const std::vector<int>& slots) {
    const std::vector<int> devices = spread_ ? slots : devices_;
    const bool resume = entry(index).value("status", "") == "started";
    RunCommand one = run_for(index, devices, resume);
    const std::string where = spread_ ? fmt::format(" on device {}", device_list(devices)) : "";
    fmt::print(stderr, "sweep {}: {}/{} {}{}{}\n", workload_.name, index + 1, workload_.problems.size(), labels_[index],
               resume ? " (resumed)" : "", where);
    state_["problems"][labels_[index]] = {{"status", "started"},
                                         {"spec", workload_.problems[index].spec.string()},
                                         {"problem", workload_.problems[index].problem_text()},
                                         {"devices", devices}};
    write_state(state_file_, state_);
    phase_[index] = Phase::running;
    held_slots_[index] = slots;
    // Problems run beside each other: each writes its stderr lines under its label, without a progress line.
    RunOutput output;
    output.progress = !spread_;
    if (spread_) output.stderr_prefix = labels_[index] + where + ": ";
    threads_.emplace(index, std::jthread([this, index, one = std::move(one), output, file = report_file(index)]() mutable {
      FinishedRun finished{index, exit_failure, nullptr};
      try {
        std::unique_ptr<std::FILE, CloseFile> report(std::fopen(file.c_str(), "w"));
        if (!report) throw TunerError(fmt::format("cannot write {}", file.string()));
        output.results = report.get();
        finished.status = one.run(output);
      } catch (...) {
        finished.error = std::current_exception();
      }
      {
        std::lock_guard lock(finished_mutex_);
        finished_.push_back(finished);
      }
      run_finished_.notify_one();
    }));
  }

  FinishedRun wait_for_a_run() {
    std::unique_lock lock(finished_mutex_);
    run_finished_.wait(lock, [this] { return !finished_.empty(); });
    FinishedRun finished = finished_.front();
    finished_.pop_front();
    return finished;
  }

  void finish(const FinishedRun& finished) {
    const std::size_t index = finished.problem;
    threads_.erase(index);  // its thread has returned, or is about to: joined here
    held_slots_.erase(index);
    phase_[index] = Phase::finished;
    int status = finished.status;
    if (finished.error) {
      try {
        std::rethrow_exception(finished.error);
      } catch (const NoGpuError&) {
        status = exit_no_gpu;  // no GPU for one problem is no GPU for any: nothing more starts
        if (!no_gpu_) no_gpu_ = finished.error;
      } catch (const std::exception& error) {
        fmt::print(stderr, "sweep {}: {} failed: {}\n", workload_.name, labels_[index], error.what());
      } catch (...) {
        fmt::print(stderr, "sweep {}: {} failed: an unknown error\n", workload_.name, labels_[index]);
      }
    }
    Json& state_entry = state_["problems"][labels_[index]];
    state_entry["status"] = status == exit_ok ? "done" : "failed";
    state_entry["exit"] = status;
    write_state(state_file_, state_);
    if (status == exit_no_gpu) {
      stopping_ = true;
      return;
    }
    if (status != exit_ok) worst_ = exit_failure;
    rows_[index] = summary_row(labels_[index], workload_.problems[index], report_file(index), status,
                               state_entry["devices"]);
    if (spread_) say_finished(index);
  }

  void say_finished(std::size_t index) const {
    const Json& row = *rows_[index];
    fmt::print(stderr, "sweep {}: {}/{} {} on device {}: exit {}, best {}, {}\n", workload_.name, index + 1,
               workload_.problems.size(), labels_[index], device_list(row["devices"].get<std::vector<int>>()),
               row["exit"].get<int>(),
               row.contains("best_ms") ? fmt::format("{:.4f} ms", row["best_ms"].get<double>()) : "-",
               row.contains("seconds") ? fmt::format("{:.1f} s", row["seconds"].get<double>()) : "-");
  }

  const RunCommand& run_;
  const Workload& workload_;
  const fs::path state_dir_;
  const fs::path state_file_;
  Json state_;
  const std::vector<int> devices_;  // recorded as each problem's devices in a sequential sweep
  const bool spread_;               // several GPUs: problems at once
  const std::vector<int> slots_;
  std::vector<std::string> labels_;
  std::vector<std::string> record_keys_;  // the same spec and problem write the same records
  std::vector<std::optional<Json>> rows_;
  std::vector<Phase> phase_;
  std::map<std::size_t, std::vector<int>> held_slots_;  // of the running problems
  std::size_t announced_ = 0;
  int worst_ = exit_ok;
  bool stopping_ = false;  // a problem found no GPU
  std::exception_ptr no_gpu_;
  std::mutex finished_mutex_;
  std::condition_variable run_finished_;
  std::deque<FinishedRun> finished_;
  // Last, so that they are joined before the members their runs touch are gone (should the sweep's thread throw).
  std::map<std::size_t, std::jthread> threads_;
};

}  // namespace

void SweepCommand::add_to(CLI::App& command) {
  run.add_to(command);
  if (CLI::Option* positional = command.get_option_no_throw("spec"))
    positional->description("workload file (tasks of kernel specs and their problems)");
  command.add_flag("--restart", restart, "ignore the state of an earlier sweep and tune every problem again");
}

int SweepCommand::run_sweep(std::FILE* results) const {
  const fs::path file = run.common.spec;
  if (!is_workload_file(file))
    throw InputError(fmt::format("{}: not a workload file (a YAML file with a top-level 'workload:' key)", file.string()));
  if (!run.common.problem.empty()) throw InputError("--problem does not apply to a sweep: the workload names the problems");
  if (!run.replay.empty()) throw InputError("--replay does not apply to a sweep");
  // Each problem's run would open MPI again, and the ranks would not agree on which problem is whose.
  if (std::optional<LaunchedRank> launched = launched_by_mpirun(); launched && launched->size > 1)
    throw InputError("a sweep does not run under mpirun: sweep on one host with --devices, or run each problem "
                     "with tune run under mpirun");
  const Workload workload = read_workload(file);
  // Every problem is checked before anything is tuned: a symbol the spec lacks is bad input, not a failed run.
  for (const WorkloadProblem& problem : workload.problems) {
    try {
      load_kernel_spec(problem.spec, parse_problem_overrides(problem.problem_text()));
    } catch (const InputError& error) {
      throw InputError(fmt::format("{}: problem {} of {}: {}", file.string(), problem.problem_text(),
                                   problem.spec.string(), error.what()));
    }
  }
  sweep_devices(run);  // a bad --devices is bad input before anything is written
  const fs::path state_dir = run.out.empty() ? fs::path("results/workloads") / workload.name : fs::path(run.out);
  check_output_folder("--out", state_dir, "the sweep's state and records");
  fs::create_directories(state_dir);
  const fs::path state_file = state_dir / "state.json";
  Json state = restart ? Json::object() : read_state(state_file);
  if (!state.contains("problems")) state = {{"workload", workload.name}, {"file", file.string()}, {"problems", Json::object()}};
  return Sweep(run, workload, state_dir, std::move(state)).run(results);
}

}  // namespace kernlathe
