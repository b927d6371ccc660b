#include "tuner/cli/report_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/common/error.h"
#include "tuner/common/output_folder.h"
#include "tuner/report/chart_data.h"

extern char** environ;

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

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

int ReportCommand::run() const {
  const auto started = std::chrono::steady_clock::now();
  check_output_folder("-o", out, "the pages");
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

  ChartSettings settings;
  settings.kernels_directory = kernels;
  settings.ceiling_files = ceiling_files;
  settings.replay = !no_replay;
  settings.replay_seeds = replay_seeds;
  const std::vector<KernelGroup> groups = group_by_kernel(report.recordings);
  Json index = Json::array();
  for (const KernelGroup& group : groups) {
    const Json page = kernel_page_json(report, group, settings, [](const std::string& line) {
      fmt::print(stderr, "{}\n", line);
    });
    const fs::path file = data_directory / (group.page_name + ".json");
    // Recorded messages are the compiler's and the driver's text: bytes that are not UTF-8 are replaced.
    write_text(file, page.dump(1, ' ', false, Json::error_handler_t::replace));
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
