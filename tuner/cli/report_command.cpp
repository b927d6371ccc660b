#include "tuner/cli/report_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string_view>
#include <vector>

#include "tuner/cli/report_roofline.h"
#include "tuner/common/error.h"
#include "tuner/search/benchmark.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"

extern char** environ;

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

Json value_json(const Value& value) {
  return std::visit([](const auto& held) { return Json(held); }, value);
}

Json finite_or_null(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

// Runs argv[0] with argv (no shell, so nothing in a path or a spec is ever interpreted as a command) and returns its
// exit status, or -1 when it could not be started or did not exit normally. Output goes where ours goes, or, quiet,
// nowhere (probing an interpreter whose failure is explained by our own message).
int run_program(const std::vector<std::string>& arguments, bool quiet = false) {
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  pid_t child = 0;
  const int spawned = posix_spawn(&child, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Where the chart script is, and the checkout it belongs to (empty for an installed copy). First found wins: the
// working directory when it is a checkout; beside an installed tune (<prefix>/share/kernlathe/report/plots.py,
// installed with it); the tree this binary was built from.
struct ChartScript {
  fs::path script;
  fs::path checkout;
};

fs::path installed_report_folder() {
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  return executable.parent_path().parent_path() / "share" / "kernlathe" / "report";
}

ChartScript find_chart_script() {
  std::error_code error;
  if (fs::is_regular_file("scripts/report/plots.py", error))
    return {fs::current_path() / "scripts/report/plots.py", fs::current_path()};
  if (const fs::path installed = installed_report_folder() / "plots.py"; fs::is_regular_file(installed, error))
    return {installed, {}};
  return {fs::path(KERNLATHE_SOURCE_DIR) / "scripts/report/plots.py", fs::path(KERNLATHE_SOURCE_DIR)};
}

// The virtual environment `tune report` looks for outside any checkout: $XDG_DATA_HOME/kernlathe/venv, else
// ~/.local/share/kernlathe/venv.
fs::path user_venv() {
  const char* data_home = std::getenv("XDG_DATA_HOME");
  if (data_home != nullptr && *data_home) return fs::path(data_home) / "kernlathe" / "venv";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home ? home : "/") / ".local" / "share" / "kernlathe" / "venv";
}

// python3 on PATH, or empty.
std::string python_on_path() {
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "";
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const fs::path candidate = fs::path(std::string(rest.substr(0, colon))) / "python3";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return "";
}

bool draws_charts(const std::string& interpreter) {
  return access(interpreter.c_str(), X_OK) == 0 &&
         run_program({interpreter, "-c", "import matplotlib, numpy"}, /*quiet=*/true) == 0;
}

// The interpreter that draws the charts: --python, else $KERNLATHE_PYTHON, else the first of the checkout's .venv,
// the user's environment (user_venv) and python3 on PATH that imports matplotlib and numpy. Checked before any
// figure is computed: a missing matplotlib should cost seconds, not the whole analysis. TunerError (exit 1) saying
// what was tried and how to make an environment, or that there is no Python at all.
std::string chart_interpreter(const std::string& given, const ChartScript& chart) {
  std::string named = given;
  if (named.empty()) {
    const char* from_environment = std::getenv("KERNLATHE_PYTHON");
    if (from_environment != nullptr && *from_environment) named = from_environment;
  }
  if (!named.empty()) {
    if (draws_charts(named)) return named;
    throw TunerError(fmt::format(
        "tune report draws its charts with Python and matplotlib, and {} {}; run scripts/setup-python.sh (a virtual "
        "environment in .venv with the pinned packages of scripts/report/requirements.txt), or name an interpreter "
        "that has them with --python or KERNLATHE_PYTHON",
        named, access(named.c_str(), X_OK) != 0 ? "is not an executable" : "does not import matplotlib and numpy"));
  }
  std::vector<std::string> tried;
  if (!chart.checkout.empty()) tried.push_back((chart.checkout / ".venv" / "bin" / "python").string());
  tried.push_back((user_venv() / "bin" / "python").string());
  const std::string system_python = python_on_path();
  if (!system_python.empty()) tried.push_back(system_python);
  bool any_python = false;
  for (const std::string& candidate : tried) {
    if (access(candidate.c_str(), X_OK) != 0) continue;
    any_python = true;
    if (draws_charts(candidate)) return candidate;
  }
  const fs::path requirements = chart.script.parent_path() / "requirements.txt";
  const std::string make_one =
      chart.checkout.empty()
          ? fmt::format("python3 -m venv {0} && {0}/bin/pip install -r {1}", user_venv().string(),
                        requirements.string())
          : fmt::format("{}/scripts/setup-python.sh", chart.checkout.string());
  if (!any_python)
    throw TunerError(fmt::format("tune report draws its charts with Python and matplotlib, and no Python was found "
                                 "(tried {}); install python3 and python3-venv, then run {}, or name an interpreter "
                                 "with --python or KERNLATHE_PYTHON",
                                 fmt::join(tried, ", "), make_one));
  throw TunerError(fmt::format("tune report draws its charts with Python and matplotlib, and none of {} imports "
                               "matplotlib and numpy; run {}, or name an interpreter that has them with --python or "
                               "KERNLATHE_PYTHON",
                               fmt::join(tried, ", "), make_one));
}

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream stream(file, std::ios::binary);
  stream << text;
  if (!stream) throw TunerError(fmt::format("cannot write {}", file.string()));
}

}  // namespace

void ReportCommand::add_to(CLI::App& command) {
  command.add_option("results", results,
                     "record folders or evaluations.csv files and T4 files, as for `tune analyze`")
      ->required();
  command.add_option("-o,--out", out, "output directory: one <kernel>.html per kernel and index.html")->required();
  command.add_option("--python", python,
                     "Python with matplotlib (default $KERNLATHE_PYTHON, else the first that imports matplotlib of: "
                     "the checkout's .venv/bin/python made by scripts/setup-python.sh, "
                     "$XDG_DATA_HOME/kernlathe/venv/bin/python (~/.local/share/...), python3 on PATH)");
  command.add_option("--kernels", kernels, "where specs are looked for by kernel name, for replay (default kernels)");
  command.add_option("--ceilings", ceilings,
                     "JSON file of one GPU's ceilings (tune ceilings --json plus \"gpu\"), for records whose run.json "
                     "holds none; repeatable, one file per GPU")
      ->check(CLI::ExistingFile);
  command.add_option("--seed", seed, "seed of the bootstrap resamples and forests (default 1)");
  command.add_option("--bootstrap", bootstrap, "bootstrap resamples for the importance intervals (default 32)")
      ->check(CLI::Range(2, 10000));
  command.add_option("--replay-seeds", replay_seeds, "seeds per strategy for the convergence curves (default 10)")
      ->check(CLI::Range(1, 1000));
  command.add_flag("--no-replay", no_replay, "leave out the convergence curves");
  command.add_flag("--keep-data", keep_data, "keep the JSON the charts were drawn from (<out>/.report-data)");
}

const std::vector<std::string>& report_strategies() {
  static const std::vector<std::string> names{"random", "annealing", "genetic", "surrogate"};
  return names;
}

std::vector<std::uint64_t> convergence_budgets(std::uint64_t max_budget) {
  std::vector<std::uint64_t> budgets;
  for (std::uint64_t decade = 1; decade <= max_budget; decade *= 10) {
    for (std::uint64_t step : {1, 2, 3, 5, 7}) {
      const std::uint64_t budget = decade * step;
      if (budget <= max_budget) budgets.push_back(budget);
    }
  }
  if (budgets.empty() || budgets.back() != max_budget) budgets.push_back(max_budget);
  return budgets;
}

std::vector<KernelGroup> group_by_kernel(const std::vector<Recording>& recordings) {
  std::vector<KernelGroup> groups;
  for (std::size_t index = 0; index < recordings.size(); ++index) {
    const std::string& kernel = recordings[index].kernel;
    auto found = std::find_if(groups.begin(), groups.end(), [&](const KernelGroup& group) { return group.kernel == kernel; });
    if (found == groups.end()) {
      KernelGroup group;
      group.kernel = kernel;
      group.page_name = kernel.empty() ? "kernel" : kernel;
      for (char& character : group.page_name)
        if (!std::isalnum(static_cast<unsigned char>(character)) && character != '_' && character != '-') character = '_';
      groups.push_back(std::move(group));
      found = std::prev(groups.end());
    }
    found->recordings.push_back(index);
  }
  // Two kernel names that differ only in replaced characters would share a page: number the later ones.
  std::set<std::string> taken;
  for (KernelGroup& group : groups) {
    std::string name = group.page_name;
    for (int suffix = 2; taken.count(name) > 0 || name == "index"; ++suffix) name = fmt::format("{}-{}", group.page_name, suffix);
    group.page_name = name;
    taken.insert(name);
  }
  return groups;
}

Json replay_json(const Recording& recording, const fs::path& kernels_directory, int seeds) {
  if (recording.arch.empty())
    return Json{{"unavailable", "a community T4 file: its kernel has no spec here"}};
  const fs::path spec_file = kernels_directory / (recording.kernel + ".yaml");
  std::error_code error;
  if (recording.kernel.empty() || !fs::is_regular_file(spec_file, error))
    return Json{{"unavailable", fmt::format("no spec {} to replay the record with", spec_file.string())}};
  try {
    std::string problem = recording.problem;
    const KernelSpec kernel = load_kernel_spec(spec_file, parse_problem_overrides(problem));
    std::vector<std::string> spec_names, recorded_names;
    for (const Parameter& parameter : kernel.space.parameters) spec_names.push_back(parameter.name);
    for (const Parameter& parameter : recording.parameters) recorded_names.push_back(parameter.name);
    if (spec_names != recorded_names)
      return Json{{"unavailable", fmt::format("{} declares the parameters {}, the record holds {}", spec_file.string(),
                                              fmt::join(spec_names, ", "), fmt::join(recorded_names, ", "))}};
    const SpaceEnumerator space(kernel.space, run_constants(kernel, device_profile(recording.arch)));
    // The recording's rows (newest spec hash only, the later row of a configuration measured twice): what the
    // analysis saw, so the optimum here is the landscape's best.
    const ReplaySource source(recording.evaluations, space);  // rows recorded before `when:` fold onto canonical forms
    const std::uint64_t largest = std::min<std::uint64_t>(200, std::max<std::uint64_t>(1, space.valid_count()));
    const std::vector<std::uint64_t> budgets = convergence_budgets(largest);
    const std::vector<BenchmarkRow> rows = run_benchmark(space, source, report_strategies(), seeds, budgets);
    Json strategies = Json::object();
    for (const BenchmarkRow& row : rows) {
      Json& curve = strategies[row.strategy];
      if (curve.is_null()) curve = Json{{"budget", Json::array()}, {"median", Json::array()},
                                        {"lower_quartile", Json::array()}, {"upper_quartile", Json::array()}};
      curve["budget"].push_back(row.budget);
      curve["median"].push_back(finite_or_null(row.median_best_over_optimum));
      curve["lower_quartile"].push_back(finite_or_null(row.lower_quartile_best_over_optimum));
      curve["upper_quartile"].push_back(finite_or_null(row.upper_quartile_best_over_optimum));
    }
    return Json{{"spec", spec_file.string()},
                {"seeds", seeds},
                {"valid_in_space", space.valid_count()},
                {"recorded", source.size()},
                {"optimum_ms", source.optimum_ms()},
                {"strategies", strategies}};
  } catch (const TunerError& problem) {
    return Json{{"unavailable", fmt::format("{} could not be replayed: {}", spec_file.string(), problem.what())}};
  }
}

Json configurations_json(const Recording& recording) {
  Json values = Json::array();
  for (std::size_t p = 0; p < recording.parameters.size(); ++p) values.push_back(Json::array());
  Json status = Json::array(), time_ms = Json::array();
  bool streamed = false;
  for (const Evaluation& evaluation : recording.evaluations) streamed = streamed || evaluation.stream.end_to_end_ms > 0;
  Json stages{{"host_read_ms", Json::array()}, {"copy_in_ms", Json::array()}, {"kernel_ms", Json::array()},
              {"copy_out_ms", Json::array()}, {"gpu_idle_ms", Json::array()}, {"end_to_end_ms", Json::array()}};
  for (const Evaluation& evaluation : recording.evaluations) {
    for (std::size_t p = 0; p < recording.parameters.size(); ++p)
      values[p].push_back(p < evaluation.configuration.size() ? value_json(evaluation.configuration[p]) : Json(nullptr));
    status.push_back(std::string(status_name(evaluation.status)));
    time_ms.push_back(is_valid_measurement(evaluation) ? Json(evaluation.time.median_ms) : Json(nullptr));
    if (streamed) {
      const StreamStages& stream = evaluation.stream;
      stages["host_read_ms"].push_back(stream.host_read_ms);
      stages["copy_in_ms"].push_back(stream.copy_in_ms);
      stages["kernel_ms"].push_back(stream.kernel_ms);
      stages["copy_out_ms"].push_back(stream.copy_out_ms);
      stages["gpu_idle_ms"].push_back(stream.gpu_idle_ms);
      stages["end_to_end_ms"].push_back(stream.end_to_end_ms);
    }
  }
  Json parameter_values = Json::array();
  for (const Parameter& parameter : recording.parameters) {
    Json declared = Json::array();
    for (const Value& value : parameter.values) declared.push_back(value_json(value));
    parameter_values.push_back({{"name", parameter.name}, {"values", declared}});
  }
  Json object{{"parameters", parameter_values}, {"values", values}, {"status", status}, {"time_ms", time_ms}};
  object["stream_stages"] = streamed ? stages : Json(nullptr);
  return object;
}

Json kernel_json(const AnalysisReport& report, const KernelGroup& group, const std::vector<Json>& replays,
                 const std::vector<Json>& rooflines) {
  const Json everything = report_to_json(report);
  Json recordings = Json::array();
  for (std::size_t position = 0; position < group.recordings.size(); ++position) {
    const std::size_t index = group.recordings[position];
    Json recording = everything["recordings"][index];
    recording["configurations"] = configurations_json(report.recordings[index]);
    recording["replay"] = position < replays.size() ? replays[position] : Json(nullptr);
    recording["roofline"] = position < rooflines.size() ? rooflines[position] : Json(nullptr);
    recordings.push_back(std::move(recording));
  }
  Json portability = Json::array();
  for (const Json& entry : everything["portability"])
    if (entry["kernel"] == group.kernel) portability.push_back(entry);
  return Json{{"kernel", group.kernel},
              {"page", group.page_name + ".html"},
              {"settings", everything["settings"]},
              {"recordings", recordings},
              {"portability", portability}};
}

int ReportCommand::run() const {
  const auto started = std::chrono::steady_clock::now();
  const ChartScript chart = find_chart_script();
  const fs::path& script = chart.script;
  std::error_code error;
  if (!fs::is_regular_file(script, error))
    throw TunerError(fmt::format("the chart script {} is missing: install tune (it installs the script in "
                                 "share/kernlathe/report) or run tune report from a checkout of the project",
                                 script.string()));
  const std::string interpreter = chart_interpreter(python, chart);

  // Read before any figure is computed: a bad ceiling file is exit 2 in a second, not after the analysis.
  const std::vector<RooflineCeilings> ceiling_files =
      read_ceiling_files(std::vector<fs::path>(ceilings.begin(), ceilings.end()));

  std::vector<fs::path> paths(results.begin(), results.end());
  std::vector<Recording> recordings =
      load_recordings(paths, [](const fs::path& file) { fmt::print(stderr, "reading {}\n", file.string()); });
  ImportanceOptions options;
  options.seed = seed;
  options.resamples = bootstrap;
  const AnalysisReport report = analyse_recordings(std::move(recordings), options, [](const std::string& line) {
    fmt::print(stderr, "{}\n", line);
  });

  const fs::path out_directory(out);
  const fs::path data_directory = out_directory / ".report-data";
  fs::create_directories(data_directory, error);
  if (error) throw InputError(fmt::format("cannot create {}: {}", data_directory.string(), error.message()));

  const std::vector<KernelGroup> groups = group_by_kernel(report.recordings);
  Json index = Json::array();
  for (const KernelGroup& group : groups) {
    std::vector<Json> replays, rooflines;
    for (std::size_t index_in_report : group.recordings) {
      const Recording& recording = report.recordings[index_in_report];
      rooflines.push_back(roofline_json(recording, report.analyses[index_in_report].landscape, kernels, ceiling_files));
      if (const std::string warning = rooflines.back().value("warning", ""); !warning.empty())
        fmt::print(stderr, "warning: roofline of {}: {}\n", recording.label(), warning);
      if (no_replay) {
        replays.push_back(Json{{"unavailable", "left out (--no-replay)"}});
        continue;
      }
      fmt::print(stderr, "replaying strategies on {}\n", recording.label());
      replays.push_back(replay_json(recording, kernels, replay_seeds));
    }
    const fs::path file = data_directory / (group.page_name + ".json");
    // Recorded messages are the compiler's and the driver's text: bytes that are not UTF-8 are replaced.
    write_text(file, kernel_json(report, group, replays, rooflines).dump(1, ' ', false, Json::error_handler_t::replace));
    index.push_back(file.filename().string());
  }
  write_text(data_directory / "index.json", Json{{"kernels", index}}.dump(1));

  const int status = run_program({interpreter, script.string(), "--data", data_directory.string(), "--out", out_directory.string()});
  if (status != 0)
    throw TunerError(fmt::format("{} {} failed (exit status {}); the data it was given is in {}", interpreter,
                                 script.string(), status, data_directory.string()));
  if (!keep_data) fs::remove_all(data_directory, error);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (const KernelGroup& group : groups) fmt::print("{}\n", (out_directory / (group.page_name + ".html")).string());
  fmt::print(stderr, "report of {} kernel(s) written to {} in {:.1f} s\n", groups.size(), out_directory.string(), seconds);
  return exit_ok;
}

}  // namespace kernlathe
