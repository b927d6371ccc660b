#include "tuner/report/chart_data.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <set>

#include "tuner/common/error.h"
#include "tuner/report/roofline.h"
#include "tuner/search/benchmark.h"
#include "tuner/space/json_values.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

Json finite_or_null(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

}  // namespace

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
      values[p].push_back(p < evaluation.configuration.size() ? value_to_json(evaluation.configuration[p]) : Json(nullptr));
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
    for (const Value& value : parameter.values) declared.push_back(value_to_json(value));
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

Json kernel_page_json(const AnalysisReport& report, const KernelGroup& group, const ChartSettings& settings,
                      const ChartProgress& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  std::vector<Json> replays, rooflines;
  for (std::size_t index_in_report : group.recordings) {
    const Recording& recording = report.recordings[index_in_report];
    rooflines.push_back(roofline_json(recording, report.analyses[index_in_report].landscape,
                                      settings.kernels_directory, settings.ceiling_files));
    if (const std::string warning = rooflines.back().value("warning", ""); !warning.empty())
      say(fmt::format("warning: roofline of {}: {}", recording.label(), warning));
    if (!settings.replay) {
      replays.push_back(Json{{"unavailable", "left out (--no-replay)"}});
      continue;
    }
    say(fmt::format("replaying strategies on {}", recording.label()));
    replays.push_back(replay_json(recording, settings.kernels_directory, settings.replay_seeds));
  }
  return kernel_json(report, group, replays, rooflines);
}

}  // namespace kernlathe
