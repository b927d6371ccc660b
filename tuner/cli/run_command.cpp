#include "tuner/cli/run_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>
#include <string_view>
#include <nlohmann/json.hpp>

#include "tuner/space/json_values.h"
#include "tuner/cluster/cluster_run.h"
#include "tuner/cluster/communicator.h"
#include "tuner/common/output_folder.h"
#include "tuner/gpu/device.h"
#include "tuner/measure/measurement.h"
#include "tuner/search/stop_condition.h"
#include "tuner/search/strategy.h"
#include "tuner/space/configuration_checks.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {

std::vector<int> parse_device_list(const std::string& text, bool replay) {
  std::vector<int> indices;
  if (text == "all") {
    if (replay) throw InputError("--devices all needs a GPU to count; with --replay give indices, such as 0,1,2");
    const int count = gpu::device_count();
    if (count == 0) throw NoGpuError("--devices all: the driver reports no CUDA device");
    for (int index = 0; index < count; ++index) indices.push_back(index);
    return indices;
  }
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    int index = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || index < 0)
      throw InputError(fmt::format("--devices {}: expected all or GPU indices such as 0,1 ('{}' is not an index)",
                                   text, item));
    indices.push_back(index);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return indices;
}

namespace {

using Json = nlohmann::ordered_json;

// --replay names a record file (evaluations.csv): a folder or a missing file is refused by name.
void check_record_file(const std::string& replay) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(replay, error);
  if (status.type() == std::filesystem::file_type::not_found)
    throw InputError(fmt::format("--replay {}: no such file", replay));
  if (status.type() == std::filesystem::file_type::directory)
    throw InputError(fmt::format("--replay {}: is a folder; name its evaluations.csv", replay));
}

Json chosen_json(const TuneReport& report) {
  if (report.best.empty()) return nullptr;
  Json values = Json::object();
  const Configuration& configuration = report.best.front().evaluation.configuration;
  for (std::size_t i = 0; i < configuration.size(); ++i) values[report.parameter_names.at(i)] = value_to_json(configuration[i]);
  return values;
}

// A rank other than 0 under mpirun: the configuration rank 0 chose for its GPU model.
Json evaluator_outcome_json(const EvaluatorOutcome& outcome) {
  Json output = {{"label", outcome.label},
                 {"device", outcome.device_name},
                 {"kernel", outcome.kernel},
                 {"measured", outcome.measured},
                 {"chosen", outcome.chosen ? Json::parse(outcome.chosen->dump()) : Json(nullptr)}};
  if (!outcome.failure.empty()) output["reason"] = outcome.failure;
  return output;
}

void print_evaluator_outcome(std::FILE* out, const EvaluatorOutcome& outcome) {
  if (!outcome.chosen) {
    fmt::print(out, "{} ({}): no configuration chosen: {}\n", outcome.label, outcome.device_name, outcome.failure);
    return;
  }
  std::vector<std::string> values;
  for (const auto& [name, value] : outcome.chosen->items()) values.push_back(fmt::format("{}={}", name, value.dump()));
  fmt::print(out, "{} ({}): measured {}; chosen for {}: {}\n", outcome.label, outcome.device_name, outcome.measured,
             outcome.kernel, fmt::join(values, " "));
}

// One line per GPU of an evaluator rank; --json: the outcome as an object, or an array of them for a rank of
// several GPUs.
void print_evaluator_outcomes(std::FILE* out, const std::vector<EvaluatorOutcome>& outcomes, bool json) {
  if (json) {
    Json printed = Json::array();
    for (const EvaluatorOutcome& outcome : outcomes) printed.push_back(evaluator_outcome_json(outcome));
    fmt::print(out, "{}\n", (printed.size() == 1 ? printed[0] : printed).dump(2));
    return;
  }
  for (const EvaluatorOutcome& outcome : outcomes) print_evaluator_outcome(out, outcome);
}

std::string format_ms(double ms) { return ms > 0 ? fmt::format("{:.4f}", ms) : "-"; }

std::string configuration_text(const TuneReport& report, const Evaluation& evaluation) {
  std::vector<std::string> values;
  for (std::size_t i = 0; i < evaluation.configuration.size(); ++i)
    values.push_back(report.parameter_names.at(i) + "=" + expr::to_string(evaluation.configuration[i]));
  return fmt::format("{}", fmt::join(values, " "));
}

// Streamed specs (tuner/loader): where each pass's time went, for the top configurations and the default (the
// naive loader in the shipped spaces), against the pinned host-to-device ceiling (the ceilings', cached or measured
// in this run: report.pinned_copy_in_source says which).
void print_stream_breakdown(std::FILE* out, const TuneReport& report) {
  fmt::print(out, "\nstream breakdown per pass; pinned host-to-device ceiling ({}): {}\n",
             report.replay ? "recorded" : (report.pinned_copy_in_source.empty() ? "source unknown" : report.pinned_copy_in_source),
             report.pinned_copy_in_gbps > 0 ? fmt::format("{:.1f} GB/s", report.pinned_copy_in_gbps) : "unknown");
  fmt::print(out, "{:<6} {:>10} {:>11} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}  {}\n", "rank", "total ms", "items/s",
             "in GB/s", "of H2D", "read ms", "H2D ms", "kernel ms", "D2H ms", "idle ms", "configuration");
  auto row = [&](const std::string& label, const Evaluation& evaluation) {
    const StreamStages& s = evaluation.stream;
    double fraction = report.pinned_copy_in_gbps > 0 ? s.input_gbps / report.pinned_copy_in_gbps : 0;
    fmt::print(out, "{:<6} {:>10.3f} {:>11.4g} {:>8.2f} {:>7} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f}  {}\n", label,
               s.end_to_end_ms, s.items_per_second, s.input_gbps,
               fraction > 0 ? fmt::format("{:.1f}%", 100 * fraction) : "-", s.host_read_ms, s.copy_in_ms, s.kernel_ms,
               s.copy_out_ms, s.gpu_idle_ms, configuration_text(report, evaluation));
  };
  for (std::size_t i = 0; i < report.best.size(); ++i) row(std::to_string(i + 1), report.best[i].evaluation);
  if (report.default_evaluation && report.default_evaluation->ok()) row("naive", *report.default_evaluation);
  if (!report.best.empty()) {
    const StreamStages& s = report.best.front().evaluation.stream;
    double bound = std::max({s.copy_in_ms, s.kernel_ms, s.copy_out_ms});
    if (bound > 0)
      fmt::print(out, "best total / max(H2D, kernel, D2H) = {:.3f} (1.0 is perfect overlap)\n", s.end_to_end_ms / bound);
  }
}

Json stream_json(const StreamStages& s) {
  return {{"end_to_end_ms", s.end_to_end_ms}, {"host_read_ms", s.host_read_ms}, {"copy_in_ms", s.copy_in_ms},
          {"kernel_ms", s.kernel_ms},         {"copy_out_ms", s.copy_out_ms},   {"gpu_idle_ms", s.gpu_idle_ms},
          {"items_per_second", s.items_per_second}, {"bytes_per_second", s.bytes_per_second},
          {"input_gbps", s.input_gbps}};
}

Json final_round_json(const FinalFigures& figures) {
  Json document = {{"mean_ms", figures.mean_ms}, {"low_ms", figures.low_ms}, {"high_ms", figures.high_ms},
                   {"round_ms", figures.round_ms}};
  if (figures.energy_mj > 0) {
    document["energy_mj"] = figures.energy_mj;
    document["energy_low_mj"] = figures.energy_low_mj;
    document["energy_high_mj"] = figures.energy_high_mj;
    document["round_energy_mj"] = figures.round_energy_mj;
  }
  return document;
}

void print_table(std::FILE* out, const TuneReport& report) {
  if (report.replay) fmt::print(out, "REPLAY of recorded measurements (no GPU was used): {}\n", report.device_name);
  fmt::print(out, "kernel {} | problem {} | {} ({})\n", report.kernel, report.problem,
             report.replay ? "replayed" : report.device_name, report.arch);
  std::vector<std::string> counts;
  for (const auto& [status, count] : report.status_counts) counts.push_back(fmt::format("{} {}", status, count));
  fmt::print(out, "evaluated {} of {} valid configurations in {:.1f} s ({:.1f}/s; {}); stopped: {}\n", report.evaluated,
             report.valid_configurations, report.seconds, report.evaluations_per_second, fmt::join(counts, ", "),
             report.stop_reason);
  if (report.devices.size() > 1) {
    std::vector<std::string> shares;
    for (const auto& [device, count] : report.evaluations_per_device) shares.push_back(fmt::format("{}: {}", device, count));
    fmt::print(out, "measured on {} devices ({}); the final round on one\n", report.devices.size(), fmt::join(shares, ", "));
  }
  for (const std::string& lost : report.lost_devices)
    fmt::print(out, "device lost during the run, its configuration measured on another: {}\n", lost);
  if (report.skipped_by_resume)
    fmt::print(out, "resumed: {} configurations recorded before under this spec hash were not measured again; they are "
               "ranked with this run's\n",
               report.skipped_by_resume);
  if (report.other_hash_rows)
    fmt::print(out, "resumed: {} recorded rows of another spec hash (another version of the spec, space, template, "
               "problem or arch) were ignored\n",
               report.other_hash_rows);
  if (report.copy_bandwidth_gbps > 0)
    fmt::print(out, "device copy bandwidth {}: {:.0f} GB/s\n",
               report.replay ? "recorded with these measurements" : "measured in this run", report.copy_bandwidth_gbps);
  if (report.baseline_final_round) {
    const FinalFigures& figures = *report.baseline_final_round;
    fmt::print(out, "baseline {} measured in the final round: {} ms [{}, {}]{} (at setup: {} ms)\n",
               report.baseline_library.empty() ? "library" : report.baseline_library, format_ms(figures.mean_ms),
               format_ms(figures.low_ms), format_ms(figures.high_ms),
               figures.energy_mj > 0 ? fmt::format(", {:.4g} mJ per call", figures.energy_mj) : "",
               format_ms(report.baseline_search_ms));
  } else if (report.baseline_ms > 0) {
    fmt::print(out, "baseline {} {}: {} ms\n", report.baseline_library.empty() ? "library" : report.baseline_library,
               report.replay ? "recorded with these measurements" : "measured in this run",
               format_ms(report.baseline_ms));
  }
  if (report.sustained_ms) {
    std::string baseline;
    if (report.baseline_sustained_ms)
      baseline = fmt::format(", the baseline {} ms (baseline / winner {:.3f})", format_ms(*report.baseline_sustained_ms),
                             *report.baseline_sustained_ms / *report.sustained_ms);
    fmt::print(out, "sustained, back to back for {} s (the second half): the winner {} ms{}; the ranking uses the burst "
               "figures below\n", sustained_seconds, format_ms(*report.sustained_ms), baseline);
  }
  if (report.best.empty()) {
    fmt::print(out, "no configuration passed verification\n");
    return;
  }
  // With a baseline the ratio that matters is the fraction of it; otherwise the fraction of the copy ceiling.
  const bool baseline = report.baseline_ms > 0;
  if (report.objective != Objective::time)
    fmt::print(out, "\nranked by {} per launch{}\n", report.objective == Objective::energy ? "energy" : "energy x time",
               report.final_rounds > 0 ? " in the final round (the energy lines below)" : "");
  if (report.final_rounds > 0) {
    fmt::print(out, "\nranked by the final round: the mean of {} interleaved rounds with its 95% interval\n", report.final_rounds);
    fmt::print(out, "final round stopped: {}; confidence that the winner beats the runner-up {:.3f}; the winner at most "
               "{:.2f}% slower than the fastest\n",
               report.final_round_stop, report.final_round_confidence, 100 * report.final_round_worst_regret);
  }
  fmt::print(out, "\n{:<4} {:>11} {:>21} {:>9} {:>9} {:>8} {:>9} {:>9}  {}\n", "rank", "time ms", "95% interval", "GB/s",
             "GFLOP/s", baseline ? "of base" : "of copy", "vs dflt", "vs median", "configuration");
  for (std::size_t i = 0; i < report.best.size(); ++i) {
    const RankedResult& r = report.best[i];
    const double fraction = baseline ? r.fraction_of_baseline : r.fraction_of_ceiling;
    const std::string interval =
        r.final_round ? fmt::format("[{}, {}]", format_ms(r.final_round->low_ms), format_ms(r.final_round->high_ms)) : "-";
    fmt::print(out, "{:<4} {:>11} {:>21} {:>9.1f} {:>9.1f} {:>8} {:>9} {:>9.2f}  {}\n", i + 1,
               format_ms(r.evaluation.time.median_ms), interval, r.gbps, r.gflops,
               fraction > 0 ? fmt::format("{:.1f}%", 100 * fraction) : "-",
               r.speedup_over_default > 0 ? fmt::format("{:.2f}x", r.speedup_over_default) : "-",
               r.speedup_over_median, configuration_text(report, r.evaluation));
  }
  if (report.default_evaluation)
    fmt::print(out, "default configuration: {} ms ({})\n", format_ms(report.default_evaluation->time.median_ms),
               status_name(report.default_evaluation->status));
  // Energy per launch from the final round (mean of the rounds, 95% interval), where it was measured.
  bool energy_shown = false;
  for (std::size_t i = 0; i < report.best.size(); ++i) {
    const RankedResult& r = report.best[i];
    if (!r.final_round || r.final_round->energy_mj <= 0) continue;
    if (!energy_shown) fmt::print(out, "energy per launch (final round, NVML energy counter):\n");
    energy_shown = true;
    const double seconds = r.final_round->mean_ms * 1e-3;
    fmt::print(out, "  rank {}: {:.4g} mJ [{:.4g}, {:.4g}], {:.0f} W\n", i + 1, r.final_round->energy_mj,
               r.final_round->energy_low_mj, r.final_round->energy_high_mj,
               seconds > 0 ? r.final_round->energy_mj * 1e-3 / seconds : 0.0);
  }
  std::size_t flagged = 0;
  for (const RankedResult& r : report.best) flagged += clock_policy_flag(r.evaluation.throttle_reasons).empty() ? 0 : 1;
  if (flagged > 0)
    fmt::print(out, "note: {} of the ranked configurations were measured during a thermal or hardware slowdown "
               "(clock_flag in the record)\n", flagged);
  if (report.streamed) print_stream_breakdown(out, report);
  if (!report.records.empty()) fmt::print(out, "records: {}\n", report.records.string());
  if (report.best_cache_updated)
    fmt::print(out, "best configuration stored in the cache under {}\n", report.best_cache_dir.string());
  if (!report.best_cache_decision.empty()) fmt::print(out, "best cache: {}\n", report.best_cache_decision);
}

Json report_json(const TuneReport& report) {
  Json output;
  output["kernel"] = report.kernel;
  output["problem"] = report.problem;
  output["device"] = report.device_name;
  output["arch"] = report.arch;
  output["replay"] = report.replay;
  output["valid"] = report.valid_configurations;
  output["evaluated"] = report.evaluated;
  output["skipped_by_resume"] = report.skipped_by_resume;
  output["other_hash_rows"] = report.other_hash_rows;
  if (!report.torn_row_file.empty()) output["torn_row_file"] = report.torn_row_file.string();
  if (!report.record_added_columns.empty()) output["record_added_columns"] = report.record_added_columns;
  output["statuses"] = report.status_counts;
  output["seconds"] = report.seconds;
  output["evaluations_per_second"] = report.evaluations_per_second;
  output["profile"] = profile_to_json(report.profile);
  output["copy_bandwidth_gbps"] = report.copy_bandwidth_gbps;
  if (report.streamed) {
    output["pinned_copy_in_gbps"] = report.pinned_copy_in_gbps;
    output["pinned_copy_in_source"] = report.pinned_copy_in_source;
  }
  if (report.baseline_ms > 0) {
    output["baseline_ms"] = report.baseline_ms;
    output["baseline_library"] = report.baseline_library;
  }
  if (report.baseline_final_round) {
    output["baseline_setup_ms"] = report.baseline_search_ms;
    output["baseline_final_round"] = final_round_json(*report.baseline_final_round);
  }
  output["stop_reason"] = report.stop_reason;
  output["best_cache_updated"] = report.best_cache_updated;
  output["final_rounds"] = report.final_rounds;
  output["final_round_stop"] = report.final_round_stop;
  output["final_round_confidence"] = report.final_round_confidence;
  output["final_round_worst_regret"] = report.final_round_worst_regret;
  output["objective"] = std::string(objective_name(report.objective));
  if (!report.best_cache_decision.empty()) output["best_cache_decision"] = report.best_cache_decision;
  output["records"] = report.records.string();
  if (report.default_evaluation) output["default_time_ms"] = report.default_evaluation->time.median_ms;
  if (report.default_final_round) output["default_final_round"] = final_round_json(*report.default_final_round);
  output["median_time_ms"] = report.median_time_ms;
  Json best = Json::array();
  for (const RankedResult& r : report.best) {
    Json values = Json::object();
    for (std::size_t i = 0; i < r.evaluation.configuration.size(); ++i)
      values[report.parameter_names.at(i)] = value_to_json(r.evaluation.configuration[i]);
    best.push_back({{"configuration", values},
                    {"median_ms", r.evaluation.time.median_ms},
                    {"min_ms", r.evaluation.time.min_ms},
                    {"relative_spread", r.evaluation.time.relative_spread},
                    {"samples", r.evaluation.time.samples},
                    {"gbps", r.gbps},
                    {"gflops", r.gflops},
                    {"fraction_of_copy_bandwidth", r.fraction_of_ceiling},
                    {"fraction_of_baseline", r.fraction_of_baseline},
                    {"speedup_over_default", r.speedup_over_default},
                    {"speedup_over_median", r.speedup_over_median}});
    if (report.streamed) best.back()["stream"] = stream_json(r.evaluation.stream);
    best.back()["search_median_ms"] = r.search_median_ms;
    best.back()["time_interval_ms"] = {r.evaluation.time.low_ms, r.evaluation.time.high_ms};
    best.back()["sm_clock_mhz"] = r.evaluation.sm_clock_mhz;
    best.back()["power_w"] = r.evaluation.power_w;
    best.back()["temperature_c"] = r.evaluation.temperature_c;
    best.back()["clock_flag"] = clock_policy_flag(r.evaluation.throttle_reasons);
    if (r.evaluation.energy_mj > 0) best.back()["energy_mj"] = r.evaluation.energy_mj;
    if (r.final_round) best.back()["final_round"] = final_round_json(*r.final_round);
  }
  output["best"] = best;
  if (report.sustained_ms) {
    output["sustained"] = {{"seconds", sustained_seconds}, {"winner_ms", *report.sustained_ms}};
    if (report.baseline_sustained_ms) output["sustained"]["baseline_ms"] = *report.baseline_sustained_ms;
  }
  if (report.streamed && report.default_evaluation) output["default_stream"] = stream_json(report.default_evaluation->stream);
  output["chosen"] = chosen_json(report);
  output["devices"] = report.devices;
  output["evaluations_per_device"] = report.evaluations_per_device;
  output["lost_devices"] = report.lost_devices;
  return output;
}

// Text for stderr with prefix before each of its lines, written at once so that runs printing beside each other
// (tune sweep) do not cut into each other's lines.
void print_to_stderr(const std::string& prefix, const std::string& text) {
  if (prefix.empty()) {
    fmt::print(stderr, "{}", text);
    return;
  }
  std::string prefixed;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t newline = text.find('\n', begin);
    const std::size_t end = newline == std::string::npos ? text.size() : newline + 1;
    prefixed += prefix;
    prefixed.append(text, begin, end - begin);
    begin = end;
  }
  fmt::print(stderr, "{}", prefixed);
}

// Each report: its profile on stderr, its table or JSON on output.results. Exit 0 when every model has a best.
int print_reports(const std::vector<TuneReport>& reports, bool json, const RunOutput& output) {
  std::FILE* out = output.results;
  Json models = Json::array();
  bool every_model_has_a_best = true;
  for (const TuneReport& report : reports) {
    if (!report.torn_row_file.empty())
      print_to_stderr(output.stderr_prefix,
                      fmt::format("tune: note: the last row of {} was torn (a run killed while writing it); it was "
                                  "moved to {}\n", report.records.string(), report.torn_row_file.string()));
    if (!report.record_added_columns.empty())
      print_to_stderr(output.stderr_prefix,
                      fmt::format("tune: note: {} was written before {} joined the space; its rows now hold the "
                                  "default{} of {}\n", report.records.string(),
                                  fmt::join(report.record_added_columns, ", "),
                                  report.record_added_columns.size() > 1 ? "s" : "",
                                  report.record_added_columns.size() > 1 ? "those parameters" : "that parameter"));
    std::string profile = reports.size() > 1 ? fmt::format("{} ({}):\n", report.device_name, report.arch) : "";
    print_to_stderr(output.stderr_prefix, profile + format_profile(report.profile));
    if (json) {
      models.push_back(report_json(report));
    } else {
      if (reports.size() > 1)
        fmt::print(out, "\n== {} ({}), devices {} ==\n", report.device_name, report.arch, fmt::join(report.devices, ","));
      print_table(out, report);
    }
    every_model_has_a_best = every_model_has_a_best && !report.best.empty();
  }
  // One model: its report as ever; several: one report each, in an array.
  if (json) fmt::print(out, "{}\n", (models.size() == 1 ? models.front() : models).dump(2));
  std::fflush(out);
  return every_model_has_a_best ? exit_ok : exit_failure;
}

}  // namespace

void RunCommand::add_to(CLI::App& command) {
  device_option = common.add_to(command, true);
  auto* config_option = command.add_option(
      "--config", configurations,
      "measure exactly this configuration, given as NAME=VALUE,NAME=VALUE (unnamed parameters at the default); "
      "repeat for several. Each is verified, recorded and ranked; one not in the space, or that breaks a "
      "constraint, is refused");
  config_option->allow_extra_args(false);
  command.add_option("--strategy", strategy,
                     fmt::format("search strategy: {} (default: {})", fmt::join(strategy_names(), ", "),
                                 default_strategy_name()));
  command.add_option("--prior", prior,
                     "records of this kernel measured elsewhere (evaluations.csv with run.json beside, or T4 files): "
                     "their best configurations valid here are tried first (docs/search.md)");
  command.add_flag("--no-prior", no_prior,
                   "no prior from the results database (results/runs/<kernel>/: other problem sizes and GPUs), "
                   "used by default on the GPU");
  command.add_option("--budget", budget, "stop after N evaluations (N >= 1)")->check(above_zero());
  command.add_option("--time", time_budget, "stop after a duration: 90s, 5m, 1h");
  command.add_option("--out", out, "record directory (default results/runs/<kernel>/<arch>/<problem>)");
  command.add_flag("--resume", resume,
                   "go on from the record: configurations recorded under the same spec hash are not measured again "
                   "and are ranked with this run's");
  command.add_flag("--cold", cold, "flush the L2 cache before every timed sample (one launch per sample)");
  command.add_flag("--warm", warm, "time back-to-back launches with warm caches (the default)");
  // Measurement settings (tuner/measure/measurement.h); the defaults differ for streamed specs, whose samples are
  // whole passes over the dataset.
  const char* measurement_group = "Measurement (defaults: kernels / streamed passes)";
  command.add_option("--min-samples", measurement.min_samples, "samples every configuration gets at least (10 / 3)")
      ->group(measurement_group)->check(CLI::PositiveNumber);
  command.add_option("--max-samples", measurement.max_samples, "samples per configuration at most (200 / 10)")
      ->group(measurement_group)->check(CLI::PositiveNumber);
  command.add_option("--noise", measurement.target_relative_spread,
                     "stop sampling once (p75 - p25) / median is at most this (0.02)")
      ->group(measurement_group)->check(CLI::NonNegativeNumber);
  command.add_option("--min-time", measurement.min_seconds, "seconds of sampling every configuration gets (0)")
      ->group(measurement_group)->check(CLI::NonNegativeNumber);
  command.add_option("--max-time", measurement.max_seconds, "seconds of sampling per configuration at most (1.0 / 0.3)")
      ->group(measurement_group)->check(CLI::PositiveNumber);
  command.add_option("--warmup", measurement.warmup_ms,
                     "milliseconds of warm-up launches before sampling when the GPU was idle for 100 ms or more, as for "
                     "the first configuration (20 / 0)")
      ->group(measurement_group)->check(CLI::NonNegativeNumber);
  command.add_option("--busy-warmup", measurement.busy_warmup_ms,
                     "milliseconds of warm-up when the previous configuration kept the GPU busy until just before "
                     "(2; never longer than --warmup; at least two launches either way)")
      ->group(measurement_group)->check(CLI::NonNegativeNumber);
  command.add_option("--energy", energy,
                     "energy per launch: off, auto (the final round's winner; every row and round when --objective needs it) or always "
                     "(every row; costs 0.1-0.3 s per configuration: NVML's counter steps every ~100 ms)")
      ->group(measurement_group);
  command.add_option("--objective", objective,
                     "what the search minimises: time (default), energy (per launch) or edp (energy x time); energy "
                     "and edp measure energy on every row and leave the best cache alone")
      ->group(measurement_group);
  command.add_option("--energy-periods", measurement.energy_periods,
                     "energy-counter periods per energy figure (2)")
      ->group(measurement_group)->check(CLI::PositiveNumber);
  command.add_option("--seed", seed, "seed of the search strategy");
  command.add_option("--jobs", jobs, "compile processes (default 0: one per core)")->check(zero_or_more());
  command.add_option("--replay", replay, "take measurements from a recorded evaluations.csv (no GPU)");
  command.add_option("--strategy-thread", strategy_thread,
                     "where the strategy runs: auto (its own thread with several devices, the loop's with one, so a "
                     "seed gives one run), on or off (default auto)");
  command.add_option("--replay-pace", replay_pace_ms,
                     "with --replay: milliseconds each replayed measurement takes, as on a GPU, so that the lanes "
                     "of --devices wait for the strategy and the profile shows it as a GPU run would (default 0)")
      ->check(CLI::NonNegativeNumber);
  command.add_flag("--no-cubin-cache", no_cubin_cache, "compile every configuration afresh");
  command.add_flag("--fresh-ceilings", fresh_ceilings,
                   "measure the GPU's ceilings again (about a second) instead of taking them from the ceiling cache, "
                   "which keeps them a week per GPU model and driver");
  command.add_option("--ceiling-cache", ceiling_cache,
                     "ceiling cache folder (default $XDG_CACHE_HOME/kernlathe/ceilings or ~/.cache/kernlathe/ceilings)");
  command.add_option("--timeout", timeout, "seconds a configuration may run before it is killed (default 10)")
      ->check(above_zero());
  command.add_option("--best-dir", best_dir, "best-configuration cache directory");
  command.add_option("--final", final_candidates,
                     "final round: the N best of the search, the default and the stored configuration measured again, "
                     "interleaved (default 5; 0: no final round)")
      ->check(CLI::Range(0, 100));
  command.add_option("--devices", devices,
                     "GPUs of this host to measure on at once: all, or indices such as 0,1 (one evaluation worker "
                     "each, one compile pool and strategy; identical GPUs share a record, each other model gets its "
                     "own). Under mpirun, the GPUs of this rank. With --replay: replayed devices, to try the scheduling "
                     "without a GPU")
      ->excludes(device_option);
  command.add_option("--rank-timeout", rank_timeout,
                     "under mpirun: seconds without a message (heartbeats come every 0.5 s) after which a rank is "
                     "lost and its configuration measured by another (10)")
      ->check(CLI::PositiveNumber);
  command.add_option("--final-rounds", final_rounds, "rounds of the final round at least (default 3)")->check(CLI::Range(2, 100));
  command.add_option("--final-max-rounds", final_max_rounds,
                     "rounds of the final round at most, added while its leader is undecided (default 15)")
      ->check(CLI::Range(2, 200));
}

int RunCommand::run(const RunOutput& output) const {
  TuneOptions options;
  options.spec_file = find_spec(common.spec);
  options.problem = parse_problem_overrides(common.problem);
  options.strategy = strategy;
  if (!strategy.empty()) check_strategy_name(strategy);  // before a GPU is opened: bad input is exit 2 anywhere
  if (!configurations.empty()) {
    // What a --config can be refused for without the problem's device (constraints wait for it).
    const KernelSpec spec = load_kernel_spec(options.spec_file, options.problem);
    for (const std::string& text : configurations) configuration_assignments(text, spec);
  }
  options.seed = seed;
  options.prior_files.assign(prior.begin(), prior.end());
  options.use_database_prior = !no_prior;
  if (budget > 0) options.stop.max_evaluations = budget;
  if (!time_budget.empty()) {
    std::optional<double> seconds = parse_duration(time_budget);
    if (!seconds || *seconds <= 0)
      throw InputError(fmt::format("--time {}: expected a duration above zero such as 90s, 5m or 1h", time_budget));
    options.stop.max_seconds = seconds;
  }
  check_output_folder("--out", out, "the record");
  if (!replay.empty()) check_record_file(replay);
  options.out_dir = out;
  options.given_configurations = configurations;
  options.resume = resume;
  options.device = common.device;
  options.jobs = jobs;
  options.measurement = measurement;
  if (cold && warm) throw InputError("--cold and --warm exclude each other");
  if (cold) options.measurement.cold = true;
  if (warm) options.measurement.cold = false;
  if (std::optional<Objective> parsed = parse_objective(objective)) {
    options.objective = *parsed;
  } else {
    throw InputError(fmt::format("--objective {}: expected time, energy or edp", objective));
  }
  if (options.objective != Objective::time && energy == "off")
    throw InputError(fmt::format("--objective {} needs energy per launch: drop --energy off", objective));
  if (!energy.empty()) {
    if (energy == "off") options.measurement.energy = EnergyMeasurement::off;
    else if (energy == "auto") options.measurement.energy = EnergyMeasurement::automatic;
    else if (energy == "always") options.measurement.energy = EnergyMeasurement::always;
    else throw InputError(fmt::format("--energy {}: expected off, auto or always", energy));
  }
  options.replay_csv = replay;
  options.replay_arch = common.arch;
  if (replay_pace_ms > 0 && replay.empty()) throw InputError("--replay-pace needs --replay");
  options.replay_pace_ms = replay_pace_ms;
  if (strategy_thread == "on") options.strategy_in_background = true;
  else if (strategy_thread == "off") options.strategy_in_background = false;
  else if (strategy_thread != "auto")
    throw InputError(fmt::format("--strategy-thread {}: expected auto, on or off", strategy_thread));
  options.use_cubin_cache = !no_cubin_cache;
  options.refresh_ceilings = fresh_ceilings;
  options.ceiling_cache_dir = ceiling_cache;
  options.timeout_seconds = timeout;
  options.best_cache_dir = best_dir;
  options.final_candidates = final_candidates;
  options.final_rounds = final_rounds;
  options.final_max_rounds = final_max_rounds;
  options.show_progress = output.progress;
  options.message_prefix = output.stderr_prefix;
  options.open_device = open_device;
  if (!common.arch.empty() && replay.empty())
    throw InputError("--arch applies to --replay only: `tune run` measures on the real GPU");

  if (!devices.empty()) options.devices = parse_device_list(devices, !replay.empty());

  std::vector<TuneReport> reports;
  if (std::optional<LaunchedRank> launched = launched_by_mpirun(); launched && launched->size > 1 && !alone_under_mpirun) {
    // Under mpirun: rank 0 tunes with every rank's GPUs; the others measure for it and print what it chose. Each
    // rank measures on its --devices (ranks on one host each give their own, mpirun's "A : B" form), else on one
    // GPU: --device, or the GPU of its local rank.
    const int device = device_option != nullptr && device_option->count() > 0 ? common.device : launched->local_rank;
    options.device = device;
    std::unique_ptr<Communicator> communicator = open_mpi_communicator();
    ClusterOptions cluster;
    cluster.silence_seconds = rank_timeout;
    if (communicator->rank() != 0) {
      const std::vector<EvaluatorOutcome> outcomes =
          serve_as_evaluator(*communicator, options, devices.empty() ? std::vector<int>{device} : options.devices, cluster);
      print_evaluator_outcomes(output.results, outcomes, common.json);
      const bool chosen = std::all_of(outcomes.begin(), outcomes.end(), [](const auto& each) { return each.chosen.has_value(); });
      return chosen ? exit_ok : exit_failure;
    }
    ClusterCoordinator coordinator(*communicator, cluster);
    options.device_label_prefix = replay.empty() ? "rank 0, gpu " : "rank 0, replayed gpu ";
    options.remote_devices = [&](const KernelSpec&) { return coordinator.remote_devices(replay.empty()); };
    try {
      reports = tune_each_model(options);
    } catch (const std::exception& error) {
      coordinator.abort(fmt::format("rank 0 failed: {}", error.what()));
      throw;
    }
    coordinator.finish(reports);
  } else {
    reports = tune_each_model(options);
  }
  return print_reports(reports, common.json, output);
}

}  // namespace kernlathe
