#pragma once
// What `tune report` draws, computed in-process and without Python (issue 15): the recordings grouped into one page
// per kernel, and for each page the JSON that scripts/report/plots.py reads (the analysis figures, every
// configuration, the convergence of search strategies replayed on the record, the roofline of roofline.h). Finding
// the chart script and its interpreter, writing the files and drawing are the command's (tuner/cli/report_command.h).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/analysis/report.h"
#include "tuner/analysis/roofline.h"

namespace kernlathe {

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

// The figures of a page that are not the analysis's own: where specs are found (replays and rooflines), the ceiling
// files for records whose run.json holds none, and the convergence curves' seeds, or none at all.
struct ChartSettings {
  std::filesystem::path kernels_directory = "kernels";
  std::vector<RooflineCeilings> ceiling_files;
  bool replay = true;  // false: each replay is {"unavailable": "left out (--no-replay)"}
  int replay_seeds = 10;
};

// Called with one line of progress: a warning for each roofline point above its roof, and a line before each replay
// (replays take seconds each).
using ChartProgress = std::function<void(const std::string& line)>;

// kernel_json of one group with its rooflines and replays computed, recording by recording.
nlohmann::ordered_json kernel_page_json(const AnalysisReport& report, const KernelGroup& group,
                                        const ChartSettings& settings, const ChartProgress& progress = {});

}  // namespace kernlathe
