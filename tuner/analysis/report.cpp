#include "tuner/analysis/report.h"

#include <algorithm>

#include <fmt/format.h>

namespace kernlathe {
namespace {

using Json = nlohmann::ordered_json;

// The text lists the strongest pairs; --json has them all.
constexpr std::size_t interactions_shown = 5;

Json value_json(const Value& value) {
  return std::visit([](const auto& alternative) -> Json { return alternative; }, value);
}

Json configuration_json(const std::vector<Parameter>& parameters, const Configuration& configuration) {
  Json object = Json::object();
  for (std::size_t p = 0; p < parameters.size() && p < configuration.size(); ++p)
    object[parameters[p].name] = value_json(configuration[p]);
  return object;
}

std::string configuration_text(const std::vector<Parameter>& parameters, const Configuration& configuration) {
  std::vector<std::string> assignments;
  for (std::size_t p = 0; p < parameters.size() && p < configuration.size(); ++p)
    assignments.push_back(fmt::format("{}={}", parameters[p].name, expr::to_string(configuration[p])));
  return fmt::format("{}", fmt::join(assignments, " "));
}

Json estimate_json(const Estimate& estimate) {
  return Json{{"mean", estimate.mean}, {"low", estimate.low}, {"high", estimate.high}};
}

std::string_view cell_state_name(PortabilityCell::State state) {
  switch (state) {
    case PortabilityCell::State::measured: return "measured";
    case PortabilityCell::State::failed: return "failed";
    case PortabilityCell::State::not_measured: return "not_measured";
  }
  return "unknown";
}

Json cell_json(const PortabilityCell& cell) {
  Json object{{"state", cell_state_name(cell.state)}};
  if (cell.state == PortabilityCell::State::measured) {
    object["time_ms"] = cell.time_ms;
    object["fraction_of_optimum"] = cell.fraction_of_optimum;
    object["rank"] = cell.rank;
  } else if (cell.state == PortabilityCell::State::failed) {
    object["status"] = status_name(cell.status);
  }
  return object;
}

std::string cell_text(const PortabilityCell& cell) {
  switch (cell.state) {
    case PortabilityCell::State::measured: return fmt::format("{:.3f} (#{})", cell.fraction_of_optimum, cell.rank);
    case PortabilityCell::State::failed: return fmt::format("failed: {}", status_name(cell.status));
    case PortabilityCell::State::not_measured: return "not measured";
  }
  return "";
}

Json importance_json(const ImportanceResult& importance) {
  Json object{{"method", "functional ANOVA of log(time) on a random forest"},
              {"samples", importance.samples},
              {"resamples", importance.resamples},
              {"interval", importance.interval}};
  if (!importance.not_computed.empty()) {
    object["not_computed"] = importance.not_computed;
    return object;
  }
  object["constant_parameters"] = importance.constant_parameters;
  object["explained"] = estimate_json(importance.explained);
  Json parameters = Json::array();
  for (const ParameterImportance& parameter : importance.parameters)
    parameters.push_back({{"parameter", parameter.parameter},
                          {"main_effect", estimate_json(parameter.main_effect)},
                          {"with_interactions", estimate_json(parameter.with_interactions)}});
  object["parameters"] = parameters;
  Json interactions = Json::array();
  for (const InteractionImportance& pair : importance.interactions)
    interactions.push_back({{"parameters", {pair.first, pair.second}}, {"share", estimate_json(pair.share)}});
  object["interactions"] = interactions;
  return object;
}

Json recording_json(const Recording& recording, const RecordingAnalysis& analysis) {
  const LandscapeSummary& landscape = analysis.landscape;
  Json object{{"source", recording.source.string()},
              {"kernel", recording.kernel},
              {"device", recording.device},
              {"arch", recording.arch},
              {"problem", recording.problem},
              {"notes", recording.notes}};
  Json parameters = Json::array();
  for (const Parameter& parameter : recording.parameters) parameters.push_back(parameter.name);
  object["parameters"] = parameters;
  object["evaluations"] = landscape.evaluations;
  object["valid"] = landscape.valid;
  object["failed"] = landscape.failed;
  Json by_status = Json::object();
  for (const auto& [status, count] : landscape.failures_by_status) by_status[std::string(status_name(status))] = count;
  object["failures_by_status"] = by_status;
  object["best_ms"] = landscape.best_ms;
  object["median_ms"] = landscape.median_ms;
  object["worst_ms"] = landscape.worst_ms;
  object["best_configuration"] = configuration_json(recording.parameters, landscape.best_configuration);
  object["within_5_percent"] = {{"count", landscape.within_5_percent}, {"share", landscape.share_within_5_percent}};
  object["within_10_percent"] = {{"count", landscape.within_10_percent}, {"share", landscape.share_within_10_percent}};
  object["importance"] = importance_json(analysis.importance);

  Json effects = Json::array();
  for (const MainEffect& effect : landscape.main_effects) {
    Json values = Json::array();
    for (const ValueEffect& value : effect.values) {
      Json entry{{"value", value_json(value.value)}, {"valid", value.valid}, {"failed", value.failed}};
      if (value.valid > 0) {
        entry["median_ms"] = value.median_ms;
        entry["lower_quartile_ms"] = value.lower_quartile_ms;
        entry["upper_quartile_ms"] = value.upper_quartile_ms;
        entry["best_ms"] = value.best_ms;
      } else {
        entry["median_ms"] = entry["lower_quartile_ms"] = entry["upper_quartile_ms"] = entry["best_ms"] = nullptr;
      }
      values.push_back(std::move(entry));
    }
    effects.push_back({{"parameter", effect.parameter}, {"values", values}});
  }
  object["main_effects"] = effects;

  Json failures = Json::array();
  for (const FailureExplanation& explanation : analysis.failures) {
    Json statuses = Json::object();
    for (const auto& [status, count] : explanation.statuses) statuses[std::string(status_name(status))] = count;
    Json suggestions = Json::array();
    for (const ConstraintSuggestion& suggestion : explanation.suggestions)
      suggestions.push_back({{"constraint", suggestion.constraint},
                             {"explained", suggestion.explained},
                             {"failures", suggestion.failures},
                             {"valid_excluded", suggestion.valid_excluded},
                             {"valid", suggestion.valid},
                             {"other_failures_excluded", suggestion.other_failures_excluded},
                             {"score", suggestion.score},
                             {"sentence", suggestion.sentence(explanation.kind)}});
    failures.push_back({{"kind", failure_kind_name(explanation.kind)},
                        {"count", explanation.count},
                        {"statuses", statuses},
                        {"example_message", explanation.example_message},
                        {"suggestions", suggestions}});
  }
  object["failures"] = failures;
  return object;
}

Json portability_json(const AnalysisReport& report, const PortabilityGroup& group) {
  const std::vector<Parameter>& parameters = report.recordings[group.recordings.front()].parameters;
  Json object{{"kernel", group.kernel}, {"problem", group.problem}, {"devices", group.devices}};
  Json sources = Json::array();
  for (std::size_t index : group.recordings) sources.push_back(report.recordings[index].source.string());
  object["sources"] = sources;
  Json best = Json::array();
  for (std::size_t g = 0; g < group.devices.size(); ++g)
    best.push_back({{"device", group.devices[g]},
                    {"configuration", configuration_json(parameters, group.best[g])},
                    {"optimum_ms", group.optimum_ms[g]},
                    {"valid", group.valid[g]}});
  object["best"] = best;
  Json matrix = Json::array();
  for (const auto& row : group.matrix) {
    Json cells = Json::array();
    for (const PortabilityCell& cell : row) cells.push_back(cell_json(cell));
    matrix.push_back(std::move(cells));
  }
  object["matrix"] = matrix;
  object["valid_everywhere"] = group.valid_everywhere;
  if (group.portable_default) {
    Json on = Json::array();
    for (const PortabilityCell& cell : group.portable_default->on) on.push_back(cell_json(cell));
    object["portable_default"] = {
        {"configuration", configuration_json(parameters, group.portable_default->configuration)},
        {"worst_fraction", group.portable_default->worst_fraction},
        {"on", on}};
  } else {
    object["portable_default"] = nullptr;
  }
  object["notes"] = group.notes;
  return object;
}

// ---------------------------------------------------------------- text

void recording_text(std::string& out, const Recording& recording, const RecordingAnalysis& analysis) {
  const LandscapeSummary& landscape = analysis.landscape;
  out += fmt::format("== {}{}\n   {}\n", recording.label(), recording.arch.empty() ? "" : " (" + recording.arch + ")",
                     recording.source.string());
  for (const std::string& note : recording.notes) out += fmt::format("   note: {}\n", note);
  std::vector<std::string> statuses;
  for (const auto& [status, count] : landscape.failures_by_status)
    statuses.push_back(fmt::format("{} {}", count, status_name(status)));
  out += fmt::format("{} configurations evaluated: {} valid, {} failed{}\n", landscape.evaluations, landscape.valid,
                     landscape.failed, statuses.empty() ? "" : fmt::format(" ({})", fmt::join(statuses, ", ")));
  out += fmt::format("time: best {:.4g} ms, median {:.4g} ms, worst {:.4g} ms\n", landscape.best_ms,
                     landscape.median_ms, landscape.worst_ms);
  out += fmt::format("valid configurations within 5% of the best: {} ({:.1f}%); within 10%: {} ({:.1f}%)\n",
                     landscape.within_5_percent, 100 * landscape.share_within_5_percent, landscape.within_10_percent,
                     100 * landscape.share_within_10_percent);
  out += fmt::format("best: {}\n", configuration_text(recording.parameters, landscape.best_configuration));

  const ImportanceResult& importance = analysis.importance;
  if (!importance.not_computed.empty()) {
    out += fmt::format("\nparameter importance: not computed ({})\n", importance.not_computed);
  } else {
    const int percent = static_cast<int>(importance.interval * 100 + 0.5);
    out += fmt::format(
        "\nparameter importance: share of the variance of log time (functional ANOVA on a random forest; mean and "
        "{}% interval over {} bootstrap resamples of {} valid configurations)\n",
        percent, importance.resamples, importance.samples);
    out += fmt::format("  {:<28} {:>11}  {:<17} {:>17}\n", "parameter", "main effect", fmt::format("{}% interval", percent),
                       "with interactions");
    for (const ParameterImportance& parameter : importance.parameters)
      out += fmt::format("  {:<28} {:>11.3f}  [{:.3f}, {:.3f}]    {:>17.3f}\n", parameter.parameter,
                         parameter.main_effect.mean, parameter.main_effect.low, parameter.main_effect.high,
                         parameter.with_interactions.mean);
    if (!importance.constant_parameters.empty())
      out += fmt::format("  one value only, not analysed: {}\n", fmt::join(importance.constant_parameters, ", "));
    out += fmt::format("  main effects and pairs together: {:.3f} [{:.3f}, {:.3f}]\n", importance.explained.mean,
                       importance.explained.low, importance.explained.high);
    if (!importance.interactions.empty()) {
      out += "strongest interactions (variance of the two-way effect beyond the main effects, same share)\n";
      const std::size_t shown = std::min(importance.interactions.size(), interactions_shown);
      for (std::size_t i = 0; i < shown; ++i) {
        const InteractionImportance& pair = importance.interactions[i];
        out += fmt::format("  {:<28} {:>11.3f}  [{:.3f}, {:.3f}]\n", pair.first + " x " + pair.second, pair.share.mean,
                           pair.share.low, pair.share.high);
      }
    }
  }

  if (!landscape.main_effects.empty()) {
    out += "\ntime by value (valid configurations; median and interquartile range in ms)\n";
    out += fmt::format("  {:<20} {:<14} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10}\n", "parameter", "value", "valid",
                       "failed", "median", "q1", "q3", "best");
    for (const MainEffect& effect : landscape.main_effects) {
      bool first = true;
      for (const ValueEffect& value : effect.values) {
        const std::string name = first ? effect.parameter : "";
        first = false;
        if (value.valid == 0) {
          out += fmt::format("  {:<20} {:<14} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10}\n", name,
                             expr::to_string(value.value), value.valid, value.failed, "-", "-", "-", "-");
        } else {
          out += fmt::format("  {:<20} {:<14} {:>6} {:>6} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g}\n", name,
                             expr::to_string(value.value), value.valid, value.failed, value.median_ms,
                             value.lower_quartile_ms, value.upper_quartile_ms, value.best_ms);
        }
      }
    }
  }

  if (analysis.failures.empty()) {
    out += "\nfailures: none\n";
  } else {
    out += "\nfailures, and the constraints that would have excluded them\n";
    for (const FailureExplanation& explanation : analysis.failures) {
      std::vector<std::string> counts;
      for (const auto& [status, count] : explanation.statuses) counts.push_back(fmt::format("{} {}", count, status_name(status)));
      // The first line of the first message: compile errors carry the first lines of the log.
      const std::string example = explanation.example_message.substr(0, explanation.example_message.find('\n'));
      out += fmt::format("  {} {} ({}){}\n", explanation.count, failure_kind_noun(explanation.kind),
                         fmt::join(counts, ", "), example.empty() ? "" : fmt::format(", e.g. \"{:.100}\"", example));
      if (explanation.suggestions.empty()) out += "    no single-parameter or product constraint excludes any of them\n";
      for (const ConstraintSuggestion& suggestion : explanation.suggestions)
        out += fmt::format("    {}\n", suggestion.sentence(explanation.kind));
    }
  }
  out += "\n";
}

void portability_text(std::string& out, const AnalysisReport& report, const PortabilityGroup& group) {
  const std::vector<Parameter>& parameters = report.recordings[group.recordings.front()].parameters;
  out += fmt::format("== portability: {}{} on {}\n", group.kernel, group.problem.empty() ? "" : " " + group.problem,
                     fmt::join(group.devices, ", "));
  for (const std::string& note : group.notes) out += fmt::format("   note: {}\n", note);
  std::size_t width = 12;
  for (const std::string& device : group.devices) width = std::max(width, device.size() + 2);
  out += "best configuration of each GPU\n";
  for (std::size_t g = 0; g < group.devices.size(); ++g)
    out += fmt::format("  {:<{}} {:>10.4g} ms  {}\n", group.devices[g], width, group.optimum_ms[g],
                       configuration_text(parameters, group.best[g]));
  out += "portability matrix: the row GPU's best configuration as measured on the column GPU, as that GPU's optimum / "
         "its time (#rank there)\n";
  out += fmt::format("  {:<{}}", "best of \\ on", width);
  for (const std::string& device : group.devices) out += fmt::format(" {:>{}}", device, std::max<std::size_t>(width, 16));
  out += "\n";
  for (std::size_t row = 0; row < group.matrix.size(); ++row) {
    out += fmt::format("  {:<{}}", group.devices[row], width);
    for (const PortabilityCell& cell : group.matrix[row])
      out += fmt::format(" {:>{}}", cell_text(cell), std::max<std::size_t>(width, 16));
    out += "\n";
  }
  if (group.portable_default) {
    std::vector<std::string> fractions;
    for (std::size_t g = 0; g < group.devices.size(); ++g)
      fractions.push_back(fmt::format("{} {}", group.devices[g], cell_text(group.portable_default->on[g])));
    out += fmt::format("portable default (the best worst case among {} configurations valid on every GPU): {}\n",
                       group.valid_everywhere, configuration_text(parameters, group.portable_default->configuration));
    out += fmt::format("  worst fraction of optimum {:.3f}; {}\n", group.portable_default->worst_fraction,
                       fmt::join(fractions, ", "));
  } else {
    out += "portable default: no configuration was recorded valid on every GPU\n";
  }
  out += "\n";
}

}  // namespace

AnalysisReport analyse_recordings(std::vector<Recording> recordings, const ImportanceOptions& options,
                                  const AnalysisProgress& progress) {
  AnalysisReport report;
  report.options = options;
  report.recordings = std::move(recordings);
  for (const Recording& recording : report.recordings) {
    if (progress)
      progress(fmt::format("analysing {} ({} configurations)", recording.label(), recording.evaluations.size()));
    RecordingAnalysis analysis;
    analysis.landscape = summarize_landscape(recording);
    analysis.importance = analyse_importance(recording, options);
    analysis.failures = explain_failures(recording.parameters, recording.evaluations);
    report.analyses.push_back(std::move(analysis));
  }
  report.portability = analyse_portability(report.recordings);
  return report;
}

nlohmann::ordered_json report_to_json(const AnalysisReport& report) {
  Json recordings = Json::array();
  for (std::size_t index = 0; index < report.recordings.size(); ++index)
    recordings.push_back(recording_json(report.recordings[index], report.analyses[index]));
  Json portability = Json::array();
  for (const PortabilityGroup& group : report.portability) portability.push_back(portability_json(report, group));
  return Json{{"settings",
               {{"seed", report.options.seed},
                {"resamples", report.options.resamples},
                {"trees", report.options.trees},
                {"interval", report.options.interval}}},
              {"recordings", recordings},
              {"portability", portability}};
}

std::string report_to_text(const AnalysisReport& report) {
  std::string out;
  for (std::size_t index = 0; index < report.recordings.size(); ++index)
    recording_text(out, report.recordings[index], report.analyses[index]);
  for (const PortabilityGroup& group : report.portability) portability_text(out, report, group);
  return out;
}

}  // namespace kernlathe
