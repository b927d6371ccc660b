#pragma once
// `tune report`: one self-contained HTML page of charts per kernel (issue 15), drawn from what `tune analyze` and
// `tune replay` compute. The figures are computed here, in-process, and written as JSON to a folder inside the
// output directory; scripts/report/plots.py (matplotlib, run with an explicit interpreter, no shell) draws them.
// No GPU is used, nothing is written outside the output directory, and no command a spec names is run.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/analysis/report.h"

namespace kernlathe {

struct ReportCommand {
  std::vector<std::string> results;
  std::string out;
  std::string python;          // interpreter; default $KERNLATHE_PYTHON, else found (report_command.cpp)
  std::string kernels = "kernels";  // where specs are looked for, by the recorded kernel name
  std::vector<std::string> ceilings;  // ceiling files (one GPU each) for records whose run.json holds none
  std::uint64_t seed = 1;
  int bootstrap = 32;
  int replay_seeds = 10;
  bool no_replay = false;
  bool keep_data = false;

  void add_to(CLI::App& command);
  int run() const;
};

// Groups of recordings of one kernel (same `kernel` name), in the order of their first recording.
struct KernelGroup {
  std::string kernel;
  std::string page_name;  // file name stem: the kernel name with anything but [A-Za-z0-9_-] replaced by '_'
  std::vector<std::size_t> recordings;  // indices into AnalysisReport::recordings
};
std::vector<KernelGroup> group_by_kernel(const std::vector<Recording>& recordings);

// Strategies whose convergence the report draws: a baseline and a few that search differently.
const std::vector<std::string>& report_strategies();

// Evaluation budgets at which convergence is sampled (a roughly geometric grid up to max_budget).
std::vector<std::uint64_t> convergence_budgets(std::uint64_t max_budget);

// Convergence of report_strategies() replayed on one recording, or {"unavailable": reason} where the record has
// no spec under kernels_directory, is a T4 file, or its spec declares other parameters than were recorded.
nlohmann::ordered_json replay_json(const Recording& recording, const std::filesystem::path& kernels_directory, int seeds);

// Every valid and failed configuration of a recording as columns (values, status, time; stage times of streamed
// records), for the charts that need each point rather than a summary.
nlohmann::ordered_json configurations_json(const Recording& recording);

// What plots.py reads for one kernel: its recordings (the analysis figures plus configurations, replay and roofline,
// replays and rooflines in the group's order), the portability groups of its recordings and the settings.
nlohmann::ordered_json kernel_json(const AnalysisReport& report, const KernelGroup& group,
                                   const std::vector<nlohmann::ordered_json>& replays,
                                   const std::vector<nlohmann::ordered_json>& rooflines);

}  // namespace kernlathe
