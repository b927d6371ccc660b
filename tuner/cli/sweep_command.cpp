#include "tuner/cli/sweep_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/common/error.h"
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

// Runs `run` with stdout sent to `file` (the run's --json report), restoring stdout after.
int run_into(const RunCommand& run, const fs::path& file) {
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  const int target = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (saved < 0 || target < 0) throw TunerError(fmt::format("cannot write {}", file.string()));
  ::dup2(target, STDOUT_FILENO);
  ::close(target);
  struct Restore {
    int saved;
    ~Restore() {
      std::fflush(stdout);
      ::dup2(saved, STDOUT_FILENO);
      ::close(saved);
    }
  } restore{saved};
  return run.run();
}

Json read_state(const fs::path& file) {
  if (!fs::exists(file)) return Json::object();
  std::ifstream in(file);
  try {
    return Json::parse(in);
  } catch (const Json::exception& error) {
    throw InputError(fmt::format("{}: not a sweep state ({}); remove it or pass --restart", file.string(), error.what()));
  }
}

void write_state(const fs::path& file, const Json& state) {
  const fs::path temporary = file.string() + ".tmp";
  std::ofstream(temporary) << state.dump(2) << "\n";
  fs::rename(temporary, file);  // never a half-written state
}

// One summary row from a problem's `tune run --json` report.
Json summary_row(const std::string& label, const WorkloadProblem& problem, const fs::path& report_file, int status) {
  Json row = {{"problem", label}, {"spec", problem.spec.string()}, {"symbols", problem.problem_text()},
              {"exit", status}, {"report", report_file.string()}};
  try {
    std::ifstream in(report_file);
    const Json report = Json::parse(in);
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

}  // namespace

void SweepCommand::add_to(CLI::App& command) {
  run.add_to(command);
  if (CLI::Option* positional = command.get_option_no_throw("spec"))
    positional->description("workload file (tasks of kernel specs and their problems)");
  command.add_flag("--restart", restart, "ignore the state of an earlier sweep and tune every problem again");
}

int SweepCommand::run_sweep() const {
  const fs::path file = run.common.spec;
  if (!is_workload_file(file))
    throw InputError(fmt::format("{}: not a workload file (a YAML file with a top-level 'workload:' key)", file.string()));
  if (!run.common.problem.empty()) throw InputError("--problem does not apply to a sweep: the workload names the problems");
  if (!run.replay.empty()) throw InputError("--replay does not apply to a sweep");
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
  const fs::path state_dir = run.out.empty() ? fs::path("results/workloads") / workload.name : fs::path(run.out);
  fs::create_directories(state_dir);
  const fs::path state_file = state_dir / "state.json";
  Json state = restart ? Json::object() : read_state(state_file);
  if (!state.contains("problems")) state = {{"workload", workload.name}, {"file", file.string()}, {"problems", Json::object()}};

  Json rows = Json::array();
  int worst = exit_ok;
  for (std::size_t index = 0; index < workload.problems.size(); ++index) {
    const WorkloadProblem& problem = workload.problems[index];
    const std::string label = problem_label(index, problem);
    const fs::path report_file = state_dir / (label + ".json");
    const bool known = state["problems"].contains(label);
    const Json before = known ? state["problems"][label] : Json::object();
    if (before.value("status", "") == "done") {
      fmt::print(stderr, "sweep {}: {}/{} {} done before, skipped\n", workload.name, index + 1, workload.problems.size(), label);
      rows.push_back(summary_row(label, problem, report_file, before.value("exit", 0)));
      continue;
    }
    RunCommand one = run;
    one.common.spec = problem.spec.string();
    one.common.problem = problem.problem_text();
    one.common.json = true;
    one.resume = before.value("status", "") == "started";  // interrupted: go on from its records
    if (!run.out.empty()) {
      // Records go under --out, where the results database's default prior does not look: the finished problems of
      // the same spec are handed over as priors instead (unless --no-prior).
      one.out = (state_dir / label).string();
      if (!run.no_prior)
        for (std::size_t earlier = 0; earlier < index; ++earlier) {
          const fs::path records = state_dir / problem_label(earlier, workload.problems[earlier]) / "evaluations.csv";
          if (workload.problems[earlier].spec == problem.spec && fs::exists(records)) one.prior.push_back(records.string());
        }
    }
    fmt::print(stderr, "sweep {}: {}/{} {}{}\n", workload.name, index + 1, workload.problems.size(), label,
               one.resume ? " (resumed)" : "");
    Json& entry = state["problems"][label];
    entry = {{"status", "started"}, {"spec", problem.spec.string()}, {"problem", problem.problem_text()}};
    write_state(state_file, state);
    int status = exit_failure;
    try {
      status = run_into(one, report_file);
    } catch (const NoGpuError&) {
      entry["status"] = "failed";  // no GPU for one problem is no GPU for any: the sweep ends here
      entry["exit"] = exit_no_gpu;
      write_state(state_file, state);
      throw;
    } catch (const std::exception& error) {
      fmt::print(stderr, "sweep {}: {} failed: {}\n", workload.name, label, error.what());
    }
    entry["status"] = status == exit_ok ? "done" : "failed";
    entry["exit"] = status;
    write_state(state_file, state);
    if (status == exit_no_gpu) return exit_no_gpu;
    if (status != exit_ok) worst = exit_failure;
    rows.push_back(summary_row(label, problem, report_file, status));
  }

  if (run.common.json) {
    fmt::print("{}\n", Json{{"workload", workload.name}, {"state", state_file.string()}, {"problems", rows}}.dump(2));
  } else {
    fmt::print("{:<48} {:>5} {:>10} {:>12} {:>8}\n", "problem", "exit", "best ms", "of baseline", "seconds");
    for (const Json& row : rows)
      fmt::print("{:<48} {:>5} {:>10} {:>12} {:>8}\n", row["problem"].get<std::string>(), row["exit"].get<int>(),
                 row.contains("best_ms") ? fmt::format("{:.4f}", row["best_ms"].get<double>()) : "-",
                 row.contains("fraction_of_baseline") && row["fraction_of_baseline"].is_number()
                     ? fmt::format("{:.3f}", row["fraction_of_baseline"].get<double>()) : "-",
                 row.contains("seconds") ? fmt::format("{:.1f}", row["seconds"].get<double>()) : "-");
  }
  return worst;
}

}  // namespace kernlathe
