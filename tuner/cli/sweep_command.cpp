#include "tuner/cli/sweep_command.h"

#include <algorithm>
#include <chrono>
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
#include "tuner/cluster/sweep_deal.h"
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

// The GPUs a sweep (or a rank of it) spreads its problems over: --devices, or --device alone. Where --devices needs a GPU to count
// them (all) and there is none, the list is empty and the sweep runs as with one GPU: its first run meets the
// missing GPU as `tune run` does (exit 3).
// Under mpirun, a rank without --devices or --device takes the GPU of its local rank, as `tune run` does.
std::vector<int> sweep_devices(const RunCommand& run, const std::optional<LaunchedRank>& launched) {
  if (run.devices.empty()) {
    const bool device_given = run.device_option != nullptr && run.device_option->count() > 0;
    return {launched && !device_given ? launched->local_rank : run.common.device};
  }
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

using Clock = std::chrono::steady_clock;

// The messages of a sweep over ranks: to rank 0 (offers, starts, finishes), from it (deals, the end), and
// heartbeats both ways. The problems' own runs never use the communicator: each rank tunes its problems alone.
enum SweepTag : int { tag_offer = 41, tag_started = 42, tag_finished = 43, tag_heartbeat = 44, tag_deal = 45, tag_end = 46 };

// A problem rank 0 dealt to this rank, not started yet.
struct DealtProblem {
  std::size_t problem = 0;
  bool resume = false;                // its state says an earlier sweep started it
  std::vector<std::size_t> priors;    // the earlier problems of its spec that no rank runs now
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
//
// Over ranks (mpirun), every rank, rank 0 included, is such a sweep over its own devices, and takes the problems
// rank 0 deals it (SweepDeal) instead of choosing them: it offers its free devices, starts what it is dealt, and
// says when each problem starts and finishes. Rank 0 alone writes state.json and prints the summary; each problem's
// records and report are written by the one rank that tunes it, and identical problems are never dealt at once.
class Sweep {
 public:
  Sweep(const RunCommand& run, const Workload& workload, const fs::path& state_dir, Json state,
        std::vector<int> devices, Communicator* ranks)
      : run_(run),
        workload_(workload),
        state_dir_(state_dir),
        state_file_(state_dir / "state.json"),
        state_(std::move(state)),
        devices_(std::move(devices)),
        spread_(devices_.size() > 1),
        // A sequential sweep schedules over one stand-in slot: each run gets the sweep's device options whole.
        slots_(spread_ ? devices_ : std::vector<int>{0}),
        rows_(workload.problems.size()),
        phase_(workload.problems.size(), Phase::waiting),
        ranks_(ranks),
        name_(ranks ? fmt::format("{} (rank {})", workload.name, ranks->rank()) : workload.name) {
    std::vector<bool> done_before;
    for (std::size_t index = 0; index < workload_.problems.size(); ++index) {
      const WorkloadProblem& problem = workload_.problems[index];
      labels_.push_back(problem_label(index, problem));
      record_keys_.push_back(problem.spec.string() + " " + problem.problem_text());
      if (entry(index).value("status", "") == "done") phase_[index] = Phase::done_before;
      done_before.push_back(phase_[index] == Phase::done_before);
    }
    if (ranks_ == nullptr) return;
    heard_.assign(static_cast<std::size_t>(ranks_->size()), Clock::now());
    if (ranks_->rank() == 0) {
      deal_.emplace(record_keys_, done_before, ranks_->size());
      problems_sent_.assign(static_cast<std::size_t>(ranks_->size()), 0);
    }
  }

  int run(std::FILE* results) {
    if (ranks_ != nullptr) return run_over_ranks(results);
    if (spread_)
      fmt::print(stderr, "sweep {}: {} problems over devices {}, up to {} at once\n", name_,
                 workload_.problems.size(), device_list(devices_), devices_.size());
    while (true) {
      if (!stopping_) {
        announce_the_skipped();
        start_what_can_start();
      }
      if (threads_.empty()) break;
      finish(*wait_for_a_run(std::nullopt));
    }
    if (no_gpu_) std::rethrow_exception(no_gpu_);
    if (stopping_) return exit_no_gpu;
    print_summary(results, workload_.name, state_file_, summary_rows(), run_.common.json);
    return worst_;
  }

 private:
  enum class Phase { waiting, running, finished, done_before };

  Json entry(std::size_t index) const {
    const Json& problems = state_["problems"];
    return problems.contains(labels_[index]) ? problems[labels_[index]] : Json::object();
  }
  fs::path report_file(std::size_t index) const { return state_dir_ / (labels_[index] + ".json"); }

  Json summary_rows() const {
    Json rows = Json::array();
    for (const std::optional<Json>& row : rows_)
      if (row) rows.push_back(*row);
    return rows;
  }

  // The problems done before are said to be skipped in workload order, once every problem ahead of them started:
  // a sequential sweep says so between the same runs as it always did.
  void announce_the_skipped() {
    for (; announced_ < phase_.size() && phase_[announced_] != Phase::waiting; ++announced_)
      if (phase_[announced_] == Phase::done_before) announce_skipped(announced_);
  }
  void announce_skipped(std::size_t index) {
    const Json before = entry(index);
    fmt::print(stderr, "sweep {}: {}/{} {} done before, skipped\n", name_, index + 1, workload_.problems.size(),
               labels_[index]);
    rows_[index] = summary_row(labels_[index], workload_.problems[index], report_file(index), before.value("exit", 0),
                               before.value("devices", Json::array()));
  }

  std::vector<int> free_slots() const {
    std::set<int> held;
    for (const auto& running : held_slots_) held.insert(running.second.begin(), running.second.end());
    std::vector<int> free;
    for (int slot : slots_)
      if (!held.count(slot)) free.push_back(slot);
    return free;
  }

  void start_what_can_start() {
    std::vector<std::size_t> waiting;
    std::set<std::string> running_keys;
    for (std::size_t index = 0; index < phase_.size(); ++index) {
      if (phase_[index] == Phase::waiting) waiting.push_back(index);
      if (phase_[index] == Phase::running) running_keys.insert(record_keys_[index]);
    }
    for (const ProblemStart& start : schedule_starts(startable_problems(waiting, record_keys_, running_keys), free_slots())) {
      std::vector<std::size_t> priors;
      for (std::size_t earlier = 0; earlier < start.problem; ++earlier)
        if (phase_[earlier] != Phase::running) priors.push_back(earlier);
      start_problem(start.problem, start.devices, entry(start.problem).value("status", "") == "started", priors);
    }
  }

  // The problem's `tune run`: on its devices, with its records under --out and, there, the finished problems of its
  // spec ahead of it as priors (the results database's default prior does not look under --out). priors: the
  // earlier problems no run holds now; those of another spec, or without records, are passed over.
  RunCommand run_for(std::size_t index, const std::vector<int>& devices, bool resume,
                     const std::vector<std::size_t>& priors) const {
    const WorkloadProblem& problem = workload_.problems[index];
    RunCommand one = run_;
    one.common.spec = problem.spec.string();
    one.common.problem = problem.problem_text();
    one.common.json = true;
    one.resume = resume;  // interrupted: go on from its records
    one.alone_under_mpirun = true;  // over ranks, the sweep deals the problems; each rank tunes its own alone
    if (spread_) {
      one.devices = device_list(devices);
      if (one.jobs == 0) one.jobs = compile_jobs_for(host_compile_jobs(), devices.size(), devices_.size());
    } else if (run_.devices.empty() && !devices_.empty()) {
      one.common.device = devices_.front();  // under mpirun: the GPU of the rank's local rank
    }
    if (!run_.out.empty()) {
      one.out = (state_dir_ / labels_[index]).string();
      if (!run_.no_prior)
        for (std::size_t earlier : priors) {
          const fs::path records = state_dir_ / labels_[earlier] / "evaluations.csv";
          if (earlier < index && workload_.problems[earlier].spec == problem.spec && fs::exists(records))
            one.prior.push_back(records.string());
        }
    }
    return one;
  }

  Json started_entry(std::size_t index, const std::vector<int>& devices) const {
    return {{"status", "started"},
            {"spec", workload_.problems[index].spec.string()},
            {"problem", workload_.problems[index].problem_text()},
            {"devices", devices}};
  }

  void start_problem(std::size_t index, const std::vector<int>& slots, bool resume, const std::vector<std::size_t>& priors) {
    const std::vector<int> devices = spread_ ? slots : devices_;
    RunCommand one = run_for(index, devices, resume, priors);
    const std::string where = spread_ ? fmt::format(" on device {}", device_list(devices)) : "";
    fmt::print(stderr, "sweep {}: {}/{} {}{}{}\n", name_, index + 1, workload_.problems.size(), labels_[index],
               resume ? " (resumed)" : "", where);
    if (ranks_ != nullptr) {
      ranks_->send(0, tag_started, Json{{"problem", index}, {"devices", devices}}.dump());
    } else {
      state_["problems"][labels_[index]] = started_entry(index, devices);
      write_state(state_file_, state_);
    }
    phase_[index] = Phase::running;
    held_slots_[index] = slots;
    // Problems run beside each other (or ranks share a terminal): each writes its stderr lines under its label,
    // without a progress line.
    RunOutput output;
    output.progress = !spread_ && ranks_ == nullptr;
    if (!output.progress)
      output.stderr_prefix = (ranks_ ? fmt::format("rank {}, ", ranks_->rank()) : "") + labels_[index] + where + ": ";
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

  // The next run to finish; with a timeout, nothing when none finished in it.
  std::optional<FinishedRun> wait_for_a_run(std::optional<std::chrono::milliseconds> timeout) {
    std::unique_lock lock(finished_mutex_);
    const auto any = [this] { return !finished_.empty(); };
    if (!timeout) run_finished_.wait(lock, any);
    else if (!run_finished_.wait_for(lock, *timeout, any)) return std::nullopt;
    FinishedRun finished = finished_.front();
    finished_.pop_front();
    return finished;
  }

  // The run's exit code, its thread joined and its devices freed. No GPU: exit 3, and what it threw is kept in
  // no_gpu (for the first such run).
  int take_finished(const FinishedRun& finished, std::exception_ptr& no_gpu) {
    const std::size_t index = finished.problem;
    threads_.erase(index);  // its thread has returned, or is about to: joined here
    held_slots_.erase(index);
    phase_[index] = Phase::finished;
    if (!finished.error) return finished.status;
    try {
      std::rethrow_exception(finished.error);
    } catch (const NoGpuError& error) {
      if (ranks_ != nullptr) fmt::print(stderr, "sweep {}: {}: {}\n", name_, labels_[index], error.what());
      if (!no_gpu) no_gpu = finished.error;
      return exit_no_gpu;
    } catch (const std::exception& error) {
      fmt::print(stderr, "sweep {}: {} failed: {}\n", name_, labels_[index], error.what());
    } catch (...) {
      fmt::print(stderr, "sweep {}: {} failed: an unknown error\n", name_, labels_[index]);
    }
    return exit_failure;
  }

  void finish(const FinishedRun& finished) {
    const std::size_t index = finished.problem;
    const int status = take_finished(finished, no_gpu_);
    Json& state_entry = state_["problems"][labels_[index]];
    state_entry["status"] = status == exit_ok ? "done" : "failed";
    state_entry["exit"] = status;
    write_state(state_file_, state_);
    if (status == exit_no_gpu) {
      stopping_ = true;  // no GPU for one problem is no GPU for any: nothing more starts
      return;
    }
    if (status != exit_ok) worst_ = exit_failure;
    rows_[index] = summary_row(labels_[index], workload_.problems[index], report_file(index), status,
                               state_entry["devices"]);
    if (spread_) say_finished(index);
  }

  void say_finished(std::size_t index) const {
    const Json& row = *rows_[index];
    const std::string where = row.contains("rank") ? fmt::format("rank {}, ", row["rank"].get<int>()) : "";
    fmt::print(stderr, "sweep {}: {}/{} {} on {}device {}: exit {}, best {}, {}\n", name_, index + 1,
               workload_.problems.size(), labels_[index], where, device_list(row["devices"].get<std::vector<int>>()),
               row["exit"].get<int>(),
               row.contains("best_ms") ? fmt::format("{:.4f} ms", row["best_ms"].get<double>()) : "-",
               row.contains("seconds") ? fmt::format("{:.1f} s", row["seconds"].get<double>()) : "-");
  }

  // Over ranks: every rank runs this loop; rank 0 also deals (the messages it sends itself arrive as any other).
  int run_over_ranks(std::FILE* results) {
    if (deal_) {
      fmt::print(stderr, "sweep {}: {} problems dealt over {} ranks; this rank on devices {}\n", name_,
                 workload_.problems.size(), ranks_->size(), device_list(devices_));
      for (std::size_t index = 0; index < phase_.size(); ++index)
        if (phase_[index] == Phase::done_before) announce_skipped(index);
    }
    offer();
    while (!end_exit_ || !threads_.empty()) {
      exchange_messages();
      start_dealt();
      if (std::optional<FinishedRun> finished = wait_for_a_run(std::chrono::milliseconds(20)))
        finish_on_rank(*finished);
    }
    if (deal_) print_summary(results, workload_.name, state_file_, summary_rows(), run_.common.json);
    return *end_exit_;
  }

  // This rank's free devices, to rank 0; seen: the problems dealt to it so far, so that rank 0 counts those still
  // on their way against the offer.
  void offer() {
    if (stopping_ || end_exit_) return;
    ranks_->send(0, tag_offer, Json{{"free", free_slots().size()}, {"seen", problems_received_}}.dump());
  }

  double silence_seconds() const { return run_.rank_timeout; }

  void exchange_messages() {
    const Clock::time_point now = Clock::now();
    if (now - last_heartbeat_ >= std::chrono::duration<double>(std::min(0.5, silence_seconds() / 4))) {
      last_heartbeat_ = now;
      if (deal_) {
        for (int rank = 1; rank < ranks_->size(); ++rank) ranks_->send(rank, tag_heartbeat, "");
      } else {
        ranks_->send(0, tag_heartbeat, "");
      }
    }
    while (std::optional<ClusterMessage> message = ranks_->poll()) receive(*message);
    if (deal_) {
      notice_the_silent();
      deal_out();
    } else if (!end_exit_ && now - heard_[0] > std::chrono::duration<double>(silence_seconds())) {
      fmt::print(stderr, "sweep {}: rank 0 has been silent for {} s: this rank takes no more problems\n", name_,
                 silence_seconds());
      end_exit_ = exit_failure;
      stopping_ = true;
    }
  }

  void receive(const ClusterMessage& message) {
    heard_.at(static_cast<std::size_t>(message.source)) = Clock::now();
    if (message.tag == tag_heartbeat) return;
    const Json body = Json::parse(message.bytes);
    if (message.tag == tag_deal) {
      for (const Json& problem : body.at("problems"))
        dealt_.push_back(DealtProblem{problem.at("problem").get<std::size_t>(), problem.at("resume").get<bool>(),
                                      problem.at("priors").get<std::vector<std::size_t>>()});
      problems_received_ += body.at("problems").size();
    } else if (message.tag == tag_end) {
      end_exit_ = body.at("exit").get<int>();
    } else if (deal_ && message.tag == tag_offer) {
      const std::size_t source = static_cast<std::size_t>(message.source);
      const std::size_t on_their_way = problems_sent_[source] - body.at("seen").get<std::size_t>();
      const std::size_t free = body.at("free").get<std::size_t>();
      deal_->offer(message.source, free > on_their_way ? free - on_their_way : 0);
    } else if (deal_ && message.tag == tag_started) {
      const std::size_t index = body.at("problem").get<std::size_t>();
      Json started = started_entry(index, body.at("devices").get<std::vector<int>>());
      started["rank"] = message.source;
      state_["problems"][labels_[index]] = started;
      write_state(state_file_, state_);
    } else if (deal_ && message.tag == tag_finished) {
      finished_on(message.source, body);
    }
  }

  // Rank 0: a rank's problem finished (or was never started: the rank found no GPU and gives it back).
  void finished_on(int rank, const Json& body) {
    const std::size_t index = body.at("problem").get<std::size_t>();
    const int status = body.at("exit").get<int>();
    if (body.at("started").get<bool>()) {
      Json& state_entry = state_["problems"][labels_[index]];
      state_entry["status"] = status == exit_ok ? "done" : "failed";
      state_entry["exit"] = status;
      write_state(state_file_, state_);
    }
    if (body.at("no_gpu").get<bool>()) {
      if (!deal_->rank_of(index)) return;  // given back already
      const std::vector<int> known = deal_->ranks_without_gpu();
      if (std::find(known.begin(), known.end(), rank) == known.end())
        fmt::print(stderr, "sweep {}: rank {} has no GPU: it takes no more problems\n", name_, rank);
      fmt::print(stderr, "sweep {}: {} waits for another rank\n", name_, labels_[index]);
      deal_->no_gpu(index, rank);
      return;
    }
    deal_->finished(index);
    if (status != exit_ok) worst_ = exit_failure;
    rows_[index] = body.at("row");
    (*rows_[index])["rank"] = rank;
    say_finished(index);
  }

  // Rank 0: a rank silent too long is lost. Its running problems are not dealt again (it may still be writing their
  // records): their state stays "started", so that the next sweep resumes them, and the sweep ends with exit 1.
  void notice_the_silent() {
    const std::vector<int> lost_before = deal_->lost_ranks();
    for (int rank = 1; rank < ranks_->size(); ++rank) {
      if (std::find(lost_before.begin(), lost_before.end(), rank) != lost_before.end()) continue;
      if (Clock::now() - heard_[static_cast<std::size_t>(rank)] <= std::chrono::duration<double>(silence_seconds()))
        continue;
      fmt::print(stderr, "sweep {}: rank {} has been silent for {} s: lost\n", name_, rank, silence_seconds());
      for (std::size_t index : deal_->lose(rank)) {
        fmt::print(stderr, "sweep {}: {} was tuning on rank {}: left to the next sweep, which resumes it\n", name_,
                   labels_[index], rank);
        rows_[index] = summary_row(labels_[index], workload_.problems[index], fs::path(), exit_failure,
                                   entry(index).value("devices", Json::array()));
        (*rows_[index])["rank"] = rank;
        (*rows_[index])["lost"] = true;
      }
      worst_ = exit_failure;
    }
  }

  // Rank 0: what the deal starts now, to its ranks; once it is over, the end, with the one exit code of every rank.
  void deal_out() {
    for (const RankDeal& each : deal_->deal()) {
      Json problems = Json::array();
      for (std::size_t index : each.problems) {
        std::vector<std::size_t> priors;
        for (std::size_t earlier = 0; earlier < index; ++earlier)
          if (!deal_->rank_of(earlier)) priors.push_back(earlier);
        problems.push_back({{"problem", index}, {"resume", entry(index).value("status", "") == "started"},
                            {"priors", priors}});
      }
      problems_sent_[static_cast<std::size_t>(each.rank)] += each.problems.size();
      ranks_->send(each.rank, tag_deal, Json{{"problems", problems}}.dump());
    }
    if (end_sent_ || !deal_->over()) return;
    end_sent_ = true;
    const int exit_code = end_of_the_deal();
    const std::vector<int> lost = deal_->lost_ranks();
    for (int rank = 0; rank < ranks_->size(); ++rank)
      if (std::find(lost.begin(), lost.end(), rank) == lost.end())
        ranks_->send(rank, tag_end, Json{{"exit", exit_code}}.dump());
  }

  // Rank 0: the sweep's exit code. Problems left waiting (no rank with a GPU was left, or a lost problem holds their
  // key) have a row that says so: exit 3 when ranks found no GPU, else 1.
  int end_of_the_deal() {
    const std::vector<std::size_t> untuned = deal_->waiting();
    if (untuned.empty()) return worst_;
    const int exit_code = deal_->ranks_without_gpu().empty() ? exit_failure : exit_no_gpu;
    fmt::print(stderr, "sweep {}: {} problems not tuned: {}\n", name_, untuned.size(),
               exit_code == exit_no_gpu ? "no rank with a GPU was left" : "a lost rank holds their records");
    for (std::size_t index : untuned)
      rows_[index] = summary_row(labels_[index], workload_.problems[index], fs::path(), exit_code, Json::array());
    return exit_code;
  }

  // A rank starts what rank 0 dealt it over its free devices (a problem dealt while its devices are busy waits).
  void start_dealt() {
    if (stopping_ || dealt_.empty()) return;
    std::vector<std::size_t> problems;
    for (const DealtProblem& dealt : dealt_) problems.push_back(dealt.problem);
    for (const ProblemStart& start : schedule_starts(problems, free_slots())) {
      const auto dealt = std::find_if(dealt_.begin(), dealt_.end(),
                                      [&](const DealtProblem& each) { return each.problem == start.problem; });
      start_problem(start.problem, start.devices, dealt->resume, dealt->priors);
      dealt_.erase(dealt);
    }
  }

  // A rank tells rank 0 that a problem finished and offers its devices again. A rank without a GPU takes no more:
  // it gives back the problem and those dealt to it and not started.
  void finish_on_rank(const FinishedRun& finished) {
    const std::size_t index = finished.problem;
    const std::vector<int> devices = spread_ ? held_slots_.at(index) : devices_;
    std::exception_ptr no_gpu;
    const int status = take_finished(finished, no_gpu);
    const Json row = summary_row(labels_[index], workload_.problems[index], report_file(index), status, devices);
    ranks_->send(0, tag_finished,
                 Json{{"problem", index}, {"exit", status}, {"row", row}, {"no_gpu", no_gpu != nullptr}, {"started", true}}
                     .dump());
    if (!no_gpu) {
      offer();
      return;
    }
    stopping_ = true;
    for (const DealtProblem& dealt : dealt_)
      ranks_->send(0, tag_finished,
                   Json{{"problem", dealt.problem}, {"exit", exit_no_gpu}, {"no_gpu", true}, {"started", false}}.dump());
    dealt_.clear();
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
  bool stopping_ = false;  // a problem found no GPU (or, over ranks, rank 0 fell silent)
  std::exception_ptr no_gpu_;
  // Over ranks (null: the sweep alone).
  Communicator* ranks_;
  const std::string name_;  // the workload's, with the rank over ranks
  std::optional<SweepDeal> deal_;  // rank 0's
  std::vector<std::size_t> problems_sent_;  // rank 0: problems dealt to each rank so far
  std::vector<Clock::time_point> heard_;  // when each rank was last heard from (a rank other than 0: rank 0 alone)
  Clock::time_point last_heartbeat_;
  std::deque<DealtProblem> dealt_;  // dealt to this rank, not started
  std::size_t problems_received_ = 0;
  std::optional<int> end_exit_;  // the sweep's exit code, from rank 0
  bool end_sent_ = false;
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
  command.footer(
      "Under mpirun (mpirun -n R tune sweep WORKLOAD --out SHARED_DIR ...), rank 0 deals the problems to the ranks as "
      "their GPUs come free, in workload order: each problem is tuned once, by one rank, on that rank's --devices (else "
      "--device, else the GPU of its local rank); identical problems never run at once. Every rank writes its "
      "problems' records under --out (a folder the hosts share); rank 0 alone writes state.json and prints the summary "
      "of every problem; every rank exits with rank 0's code. A rank silent for --rank-timeout seconds is lost: its "
      "finished problems are kept, its running ones are resumed by the next sweep (docs/workloads.md).");
}

int SweepCommand::run_sweep(std::FILE* results) const {
  const fs::path file = run.common.spec;
  if (!is_workload_file(file))
    throw InputError(fmt::format("{}: not a workload file (a YAML file with a top-level 'workload:' key)", file.string()));
  if (!run.common.problem.empty()) throw InputError("--problem does not apply to a sweep: the workload names the problems");
  if (!run.replay.empty()) throw InputError("--replay does not apply to a sweep");
  std::optional<LaunchedRank> launched = launched_by_mpirun();
  if (launched && launched->size <= 1) launched.reset();
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
  std::vector<int> devices = sweep_devices(run, launched);  // a bad --devices is bad input before anything is written
  // Under mpirun the sweep deals its problems over the ranks; every rank has read and checked the same workload.
  std::unique_ptr<Communicator> mpi;
  Communicator* over_ranks = ranks;
  if (launched && over_ranks == nullptr) {
    mpi = open_mpi_communicator();
    over_ranks = mpi.get();
  }
  const fs::path state_dir = run.out.empty() ? fs::path("results/workloads") / workload.name : fs::path(run.out);
  check_output_folder("--out", state_dir, "the sweep's state and records");
  fs::create_directories(state_dir);
  const fs::path state_file = state_dir / "state.json";
  // Over ranks, rank 0 alone reads and writes the state.
  const bool keeps_the_state = over_ranks == nullptr || over_ranks->rank() == 0;
  Json state = restart || !keeps_the_state ? Json::object() : read_state(state_file);
  if (!state.contains("problems")) state = {{"workload", workload.name}, {"file", file.string()}, {"problems", Json::object()}};
  return Sweep(run, workload, state_dir, std::move(state), std::move(devices), over_ranks).run(results);
}

}  // namespace kernlathe
