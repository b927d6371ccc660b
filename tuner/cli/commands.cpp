// The subcommands of `tune`. Each one parses its options with CLI11, calls the library, and prints results on
// stdout (a table, or JSON with --json) and progress on stderr. Errors become exceptions that main() maps to the
// documented exit codes.
#include "tuner/cli/commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tuner/cache/best_cache.h"
#include "tuner/cache/export.h"
#include "tuner/cli/analyze_command.h"
#include "tuner/cli/ceilings_command.h"
#include "tuner/cli/configuration_listing.h"
#include "tuner/cli/t4_command.h"
#include "tuner/cli/replay_command.h"
#include "tuner/cli/report_command.h"
#include "tuner/compile/compile_pool.h"
#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/search/stop_condition.h"
#include "tuner/search/strategy.h"
#include "tuner/session/device_query.h"
#include "tuner/session/tuning_session.h"
#include "tuner/space/configuration_checks.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

using Json = nlohmann::ordered_json;
using SteadyClock = std::chrono::steady_clock;

Json value_to_json(const Value& value) {
  return std::visit([](const auto& v) -> Json { return v; }, value);
}

Json configuration_to_json(const Space& space, const Configuration& configuration) {
  Json object = Json::object();
  for (std::size_t i = 0; i < space.parameters.size(); ++i)
    object[space.parameters[i].name] = value_to_json(configuration[i]);
  return object;
}

std::string parameter_type_name(ParameterType type) {
  switch (type) {
    case ParameterType::integer: return "int";
    case ParameterType::boolean: return "bool";
    case ParameterType::enumeration: return "enum";
  }
  return "?";
}

// Device properties for expressions: the named built-in profile, else the real GPU.
DeviceProperties resolve_device(const std::string& arch, int device_index) {
  if (!arch.empty()) return device_profile(arch);
  try {
    return query_gpu_properties(device_index);
  } catch (const NoGpuError& error) {
    throw NoGpuError(fmt::format("{}; pass --arch ({}) to use a built-in device profile instead", error.what(),
                                 fmt::join(known_device_profiles(), "|")));
  }
}

struct CommonSpecOptions {
  std::string spec;
  std::string arch;
  std::string problem;
  int device = 0;
  bool json = false;

  void add_to(CLI::App& command, bool with_device) {
    command
        .add_option("spec", spec,
                    "kernel spec (a path, or a name under kernels/); a path ending in .json is a community T1 file")
        ->required();
    command.add_option("--arch", arch, "use a built-in device profile: sm_80, sm_86, sm_89 or sm_90");
    command.add_option("--problem", problem, "override problem symbols, e.g. M=1024,N=2048");
    if (with_device) command.add_option("--device", device, "GPU index")->check(CLI::NonNegativeNumber);
    command.add_flag("--json", json, "machine-readable output on stdout");
  }
  KernelSpec load() const { return load_kernel_spec(find_spec(spec), parse_problem_overrides(problem)); }
};

// ---------------------------------------------------------------- tune space

struct SpaceCommand {
  CommonSpecOptions common;
  std::string list_text;  // N or "all"
  std::uint64_t sample = 0;
  std::uint64_t seed = 1;

  // A space file on its own (spaces/*.yaml: parameters and no template) stands for a spec with that space and the
  // --problem symbols, so a space can be counted and listed before any kernel uses it.
  KernelSpec load() const {
    const std::filesystem::path file = find_spec(common.spec);
    if (file.extension() == ".yaml" || file.extension() == ".yml") {
      YAML::Node document;
      try {
        document = YAML::LoadFile(file.string());
      } catch (const YAML::Exception&) {
        return common.load();  // the spec loader reports the syntax error with its location
      }
      if (document.IsMap() && document["parameters"] && !document["template"] && !document["space"]) {
        KernelSpec spec;
        spec.space = load_space(file);
        spec.name = spec.space.name;
        spec.file = file;
        for (const auto& [symbol, value] : parse_problem_overrides(common.problem)) {
          auto found = std::find_if(spec.problem.begin(), spec.problem.end(),
                                    [&](const auto& entry) { return entry.first == symbol; });
          if (found != spec.problem.end()) {
            found->second = value;
          } else {
            spec.problem.emplace_back(symbol, value);
          }
        }
        return spec;
      }
    }
    return common.load();
  }

  std::uint64_t list_count() const {
    if (list_text.empty()) return 0;
    if (list_text == "all") return std::numeric_limits<std::uint64_t>::max();
    std::uint64_t count = 0;
    const auto [end, error] = std::from_chars(list_text.data(), list_text.data() + list_text.size(), count);
    if (error != std::errc() || end != list_text.data() + list_text.size())
      throw InputError(fmt::format("--list {}: expected a count of configurations or 'all'", list_text));
    return count;
  }

  int run() const {
    const auto started = SteadyClock::now();
    const std::uint64_t list = list_count();
    KernelSpec spec = load();
    DeviceProperties device = resolve_device(common.arch, common.device);
    const bool bare_space = spec.template_file.empty();
    std::optional<SpaceEnumerator> enumerated;
    try {
      // Counting and listing walk the space in order, so its first group of parameters is counted without keeping
      // its tuples (space.h EnumeratorKind); a sample needs the index.
      enumerated.emplace(spec.space, run_constants(spec, device), EnumerationLimits{},
                         sample > 0 ? EnumeratorKind::indexed : EnumeratorKind::in_order);
    } catch (const InputError& error) {
      // A space file has no problem of its own: the symbols its constraints read come from --problem.
      if (!bare_space || std::string(error.what()).find("unknown name") == std::string::npos) throw;
      throw InputError(fmt::format("{} (a space file's problem symbols are given with --problem, e.g. "
                                   "--problem M=4096,N=4096)",
                                   error.what()));
    }
    const SpaceEnumerator& space = *enumerated;
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();

    // Checked before anything is printed: a sample is drawn without repeats, so its indices are held in memory.
    if (std::min(sample, space.valid_count()) > max_sample_size)
      throw InputError(fmt::format("--sample {}: at most {} configurations can be drawn at once ({} are valid); "
                                   "--list N prints any number, one by one",
                                   sample, max_sample_size, space.valid_count()));
    // Configurations are written as they are enumerated, never collected: --list all on a space of 17 million needs
    // no more memory than --list 1 (configuration_listing.h).
    const auto for_each_shown = [&](ListingFormat format, const std::function<void(const Configuration&)>& print) {
      if (list > 0) {
        std::fflush(stdout);  // the summary printed before goes first
        ConfigurationListing::write(space, 0, list, format, stdout);
      }
      if (sample > 0) space.for_each_sample(sample, seed, print);
    };

    if (common.json) {
      Json output;
      output["kernel"] = spec.name;
      output["device"] = device.name;
      output["arch"] = device.arch_name();
      output["problem"] = problem_text(spec);
      output["total"] = space.total_combinations();
      output["valid"] = space.valid_count();
      output["seconds"] = seconds;
      Json parameters = Json::array();
      for (const Parameter& parameter : spec.space.parameters) {
        Json values = Json::array();
        for (const Value& value : parameter.values) values.push_back(value_to_json(value));
        Json described{{"name", parameter.name},
                       {"type", parameter_type_name(parameter.type)},
                       {"values", values},
                       {"default", value_to_json(parameter.default_value)}};
        if (!parameter.relevant_when.empty()) described["when"] = parameter.relevant_when.text();
        parameters.push_back(std::move(described));
      }
      output["parameters"] = parameters;
      if (list == 0 && sample == 0) {
        fmt::print("{}\n", output.dump(2));
        return exit_ok;
      }
      // JSON lines: the summary on the first line, then one object per configuration.
      fmt::print("{}\n", output.dump());
      for_each_shown(ListingFormat::json_lines, [&](const Configuration& configuration) {
        fmt::print("{}\n", configuration_to_json(spec.space, configuration).dump());
      });
      return exit_ok;
    }
    fmt::print("kernel        {}\n", spec.name);
    fmt::print("device        {} ({}{})\n", device.name, device.arch_name(), device.from_hardware ? "" : ", built-in profile");
    fmt::print("problem       {}\n", problem_text(spec));
    fmt::print("combinations  {:.0f}\n", space.total_combinations());
    fmt::print("valid         {} ({:.3g}%)\n", space.valid_count(),
               100.0 * static_cast<double>(space.valid_count()) / space.total_combinations());
    fmt::print("time          {:.3f} s\n", seconds);
    fmt::print("parameters\n");
    for (const Parameter& parameter : spec.space.parameters) {
      std::vector<std::string> values;
      for (const Value& value : parameter.values) values.push_back(expr::to_string(value));
      fmt::print("  {:<16} {:<5} [{}] default {}{}\n", parameter.name, parameter_type_name(parameter.type),
                 fmt::join(values, ", "), expr::to_string(parameter.default_value),
                 parameter.relevant_when.empty() ? "" : " when " + parameter.relevant_when.text());
    }
    for_each_shown(ListingFormat::text,
                   [&](const Configuration& configuration) { fmt::print("{}\n", to_string(spec.space, configuration)); });
    return exit_ok;
  }
};

// ---------------------------------------------------------------- tune validate

struct ValidateCommand {
  std::string spec_name;
  std::string arch = "sm_90";
  bool json = false;

  int run() const {
    KernelSpec spec = load_kernel_spec(find_spec(spec_name));
    // Enumerating with a device profile finds what loading cannot: a constraint that divides by zero for some
    // configuration, or constraints that leave nothing valid.
    SpaceEnumerator space(spec.space, run_constants(spec, device_profile(arch)));
    // The default and reference configurations meet the constraints; buffer counts, launch geometry and shared
    // memory of the default configuration evaluate to usable values (and type errors surface here).
    check_spec_configurations(spec, space);
    // Template arguments of the default configuration evaluate.
    instantiate(spec, space, space.default_configuration(), arch);
    if (json) {
      Json output{{"spec", spec.file.string()}, {"kernel", spec.name}, {"valid", space.valid_count()}, {"ok", true}};
      fmt::print("{}\n", output.dump(2));
    } else {
      fmt::print("{}: ok: kernel {}, {} parameters, {} valid configurations for {}\n", spec.file.string(), spec.name,
                 spec.space.parameters.size(), space.valid_count(), arch);
    }
    return exit_ok;
  }
};

// ---------------------------------------------------------------- tune compile-check

struct CompileCheckCommand {
  CommonSpecOptions common;
  bool all = false;
  std::uint64_t sample = 16;
  std::uint64_t seed = 1;
  int jobs = 0;

  int run() const {
    KernelSpec spec = common.load();
    const std::string arch = common.arch.empty() ? "sm_90" : common.arch;
    DeviceProperties device = device_profile(arch);
    SpaceEnumerator space(spec.space, run_constants(spec, device));
    std::vector<Configuration> configurations;
    if (all) {
      for (std::uint64_t i = 0; i < space.valid_count(); ++i) configurations.push_back(space.at(i));
    } else {
      configurations = space.sample(sample, seed);
      const Configuration fallback = space.default_configuration();
      if (space.is_valid(fallback) &&
          std::find(configurations.begin(), configurations.end(), fallback) == configurations.end())
        configurations.insert(configurations.begin(), fallback);
    }
    CompilePoolOptions pool_options;
    pool_options.jobs = jobs;
    pool_options.cache_dir = default_cubin_cache_dir();
    pool_options.worker_executable = current_executable();
    CompilePool pool(pool_options);
    const auto started = SteadyClock::now();
    std::vector<std::future<CompileResult>> futures;
    for (const Configuration& configuration : configurations)
      futures.push_back(pool.submit(instantiate(spec, space, configuration, arch_for(device, spec.needs_arch_specific))));
    int failures = 0;
    Json failed = Json::array();
    double compile_ms = 0;
    for (std::size_t i = 0; i < futures.size(); ++i) {
      CompileResult result = futures[i].get();
      compile_ms += result.compile_ms;
      if (result.ok) continue;
      ++failures;
      const std::string configuration = to_string(spec.space, configurations[i]);
      if (common.json) {
        failed.push_back({{"configuration", configuration}, {"error", result.error}, {"log", result.log}});
      } else {
        fmt::print(stderr, "compile error: {} {}\n{}\n", spec.name, configuration, result.log);
      }
    }
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();
    if (common.json) {
      Json output{{"kernel", spec.name}, {"arch", arch}, {"compiled", configurations.size()},
                  {"failed", failures}, {"seconds", seconds}, {"failures", failed}};
      fmt::print("{}\n", output.dump(2));
    } else {
      fmt::print("{}: {} of {} configurations compiled for {} in {:.2f} s ({} compile processes)\n", spec.name,
                 configurations.size() - failures, configurations.size(), arch, seconds, pool.jobs());
    }
    return failures == 0 ? exit_ok : exit_failure;
  }
};

// ---------------------------------------------------------------- tune run

std::string format_ms(double ms) { return ms > 0 ? fmt::format("{:.4f}", ms) : "-"; }

struct RunCommand {
  CommonSpecOptions common;
  std::string strategy = default_strategy_name();  // chosen by cross-validation (README "Search strategies")
  std::uint64_t budget = 0;
  std::string time_budget;
  std::string out;
  bool resume = false;
  bool cold = false;
  bool warm = false;
  MeasurementOverrides measurement;  // --min-samples and the rest; unset: the defaults of the spec's kind
  std::string energy;
  std::string objective = "time";
  std::uint64_t seed = 1;
  int jobs = 0;
  std::string replay;
  bool no_cubin_cache = false;
  bool fresh_ceilings = false;
  std::string ceiling_cache;
  double timeout = 10;
  std::string best_dir = "results/best";
  int final_candidates = 5;
  int final_rounds = 3;

  int run() const {
    TuneOptions options;
    options.spec_file = find_spec(common.spec);
    options.problem = parse_problem_overrides(common.problem);
    options.strategy = strategy;
    options.seed = seed;
    if (budget > 0) options.stop.max_evaluations = budget;
    if (!time_budget.empty()) {
      std::optional<double> seconds = parse_duration(time_budget);
      if (!seconds) throw InputError(fmt::format("--time {}: expected a duration such as 90s, 5m or 1h", time_budget));
      options.stop.max_seconds = seconds;
    }
    options.out_dir = out;
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
    options.use_cubin_cache = !no_cubin_cache;
    options.refresh_ceilings = fresh_ceilings;
    options.ceiling_cache_dir = ceiling_cache;
    options.timeout_seconds = timeout;
    options.best_cache_dir = best_dir;
    options.final_candidates = final_candidates;
    options.final_rounds = final_rounds;
    options.show_progress = true;
    if (!common.arch.empty() && replay.empty())
      throw InputError("--arch applies to --replay only: `tune run` measures on the real GPU");

    TuneReport report = tune(options);
    if (!report.torn_row_file.empty())
      fmt::print(stderr,
                 "tune: note: the last row of {} was torn (a run killed while writing it); it was moved to {}\n",
                 report.records.string(), report.torn_row_file.string());
    fmt::print(stderr, "{}", format_profile(report.profile));
    if (common.json) {
      print_json(report);
    } else {
      print_table(report);
    }
    return report.best.empty() ? exit_failure : exit_ok;
  }

  static void print_table(const TuneReport& report) {
    if (report.replay) fmt::print("REPLAY of recorded measurements (no GPU was used): {}\n", report.device_name);
    fmt::print("kernel {} | problem {} | {} ({})\n", report.kernel, report.problem,
               report.replay ? "replayed" : report.device_name, report.arch);
    std::vector<std::string> counts;
    for (const auto& [status, count] : report.status_counts) counts.push_back(fmt::format("{} {}", status, count));
    fmt::print("evaluated {} of {} valid configurations in {:.1f} s ({:.1f}/s; {}); stopped: {}\n", report.evaluated,
               report.valid_configurations, report.seconds, report.evaluations_per_second, fmt::join(counts, ", "),
               report.stop_reason);
    if (report.skipped_by_resume)
      fmt::print("resumed: {} configurations recorded before under this spec hash were not measured again; they are "
                 "ranked with this run's\n",
                 report.skipped_by_resume);
    if (report.other_hash_rows)
      fmt::print("resumed: {} recorded rows of another spec hash (another version of the spec, space, template, "
                 "problem or arch) were ignored\n",
                 report.other_hash_rows);
    if (report.copy_bandwidth_gbps > 0)
      fmt::print("device copy bandwidth {}: {:.0f} GB/s\n",
                 report.replay ? "recorded with these measurements" : "measured in this run", report.copy_bandwidth_gbps);
    if (report.baseline_final_round) {
      const FinalFigures& figures = *report.baseline_final_round;
      fmt::print("baseline {} measured in the final round: {} ms [{}, {}]{} (at setup: {} ms)\n",
                 report.baseline_library.empty() ? "library" : report.baseline_library, format_ms(figures.mean_ms),
                 format_ms(figures.low_ms), format_ms(figures.high_ms),
                 figures.energy_mj > 0 ? fmt::format(", {:.4g} mJ per call", figures.energy_mj) : "",
                 format_ms(report.baseline_search_ms));
    } else if (report.baseline_ms > 0) {
      fmt::print("baseline {} {}: {} ms\n", report.baseline_library.empty() ? "library" : report.baseline_library,
                 report.replay ? "recorded with these measurements" : "measured in this run",
                 format_ms(report.baseline_ms));
    }
    if (report.best.empty()) {
      fmt::print("no configuration passed verification\n");
      return;
    }
    // With a baseline the ratio that matters is the fraction of it; otherwise the fraction of the copy ceiling.
    const bool baseline = report.baseline_ms > 0;
    if (report.objective != Objective::time)
      fmt::print("\nranked by {} per launch{}\n", report.objective == Objective::energy ? "energy" : "energy x time",
                 report.final_rounds > 0 ? " in the final round (the energy lines below)" : "");
    if (report.final_rounds > 0)
      fmt::print("\nranked by the final round: the mean of {} interleaved rounds with its 95% interval\n", report.final_rounds);
    fmt::print("\n{:<4} {:>11} {:>21} {:>9} {:>9} {:>8} {:>9} {:>9}  {}\n", "rank", "time ms", "95% interval", "GB/s",
               "GFLOP/s", baseline ? "of base" : "of copy", "vs dflt", "vs median", "configuration");
    for (std::size_t i = 0; i < report.best.size(); ++i) {
      const RankedResult& r = report.best[i];
      const double fraction = baseline ? r.fraction_of_baseline : r.fraction_of_ceiling;
      const std::string interval =
          r.final_round ? fmt::format("[{}, {}]", format_ms(r.final_round->low_ms), format_ms(r.final_round->high_ms)) : "-";
      fmt::print("{:<4} {:>11} {:>21} {:>9.1f} {:>9.1f} {:>8} {:>9} {:>9.2f}  {}\n", i + 1,
                 format_ms(r.evaluation.time.median_ms), interval, r.gbps, r.gflops,
                 fraction > 0 ? fmt::format("{:.1f}%", 100 * fraction) : "-",
                 r.speedup_over_default > 0 ? fmt::format("{:.2f}x", r.speedup_over_default) : "-",
                 r.speedup_over_median, configuration_text(report, r.evaluation));
    }
    if (report.default_evaluation)
      fmt::print("default configuration: {} ms ({})\n", format_ms(report.default_evaluation->time.median_ms),
                 status_name(report.default_evaluation->status));
    // Energy per launch from the final round (mean of the rounds, 95% interval), where it was measured.
    bool energy_shown = false;
    for (std::size_t i = 0; i < report.best.size(); ++i) {
      const RankedResult& r = report.best[i];
      if (!r.final_round || r.final_round->energy_mj <= 0) continue;
      if (!energy_shown) fmt::print("energy per launch (final round, NVML energy counter):\n");
      energy_shown = true;
      const double seconds = r.final_round->mean_ms * 1e-3;
      fmt::print("  rank {}: {:.4g} mJ [{:.4g}, {:.4g}], {:.0f} W\n", i + 1, r.final_round->energy_mj,
                 r.final_round->energy_low_mj, r.final_round->energy_high_mj,
                 seconds > 0 ? r.final_round->energy_mj * 1e-3 / seconds : 0.0);
    }
    std::size_t flagged = 0;
    for (const RankedResult& r : report.best) flagged += clock_policy_flag(r.evaluation.throttle_reasons).empty() ? 0 : 1;
    if (flagged > 0)
      fmt::print("note: {} of the ranked configurations were measured during a thermal or hardware slowdown "
                 "(clock_flag in the record)\n", flagged);
    if (report.streamed) print_stream_breakdown(report);
    if (!report.records.empty()) fmt::print("records: {}\n", report.records.string());
    if (report.best_cache_updated) fmt::print("best configuration stored in the cache under results/best\n");
    if (!report.best_cache_decision.empty()) fmt::print("best cache: {}\n", report.best_cache_decision);
  }

  // Streamed specs (tuner/loader): where each pass's time went, for the top configurations and the default (the
  // naive loader in the shipped spaces), against the pinned host-to-device ceiling measured in the same run.
  static void print_stream_breakdown(const TuneReport& report) {
    fmt::print("\nstream breakdown per pass; pinned host-to-device ceiling {}: {}\n",
               report.replay ? "recorded" : "measured in this run",
               report.pinned_copy_in_gbps > 0 ? fmt::format("{:.1f} GB/s", report.pinned_copy_in_gbps) : "unknown");
    fmt::print("{:<6} {:>10} {:>11} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}  {}\n", "rank", "total ms", "items/s",
               "in GB/s", "of H2D", "read ms", "H2D ms", "kernel ms", "D2H ms", "idle ms", "configuration");
    auto row = [&](const std::string& label, const Evaluation& evaluation) {
      const StreamStages& s = evaluation.stream;
      double fraction = report.pinned_copy_in_gbps > 0 ? s.input_gbps / report.pinned_copy_in_gbps : 0;
      fmt::print("{:<6} {:>10.3f} {:>11.4g} {:>8.2f} {:>7} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f}  {}\n", label,
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
        fmt::print("best total / max(H2D, kernel, D2H) = {:.3f} (1.0 is perfect overlap)\n", s.end_to_end_ms / bound);
    }
  }

  static std::string configuration_text(const TuneReport& report, const Evaluation& evaluation) {
    std::vector<std::string> values;
    for (std::size_t i = 0; i < evaluation.configuration.size(); ++i)
      values.push_back(report.parameter_names.at(i) + "=" + expr::to_string(evaluation.configuration[i]));
    return fmt::format("{}", fmt::join(values, " "));
  }

  static Json stream_json(const StreamStages& s) {
    return {{"end_to_end_ms", s.end_to_end_ms}, {"host_read_ms", s.host_read_ms}, {"copy_in_ms", s.copy_in_ms},
            {"kernel_ms", s.kernel_ms},         {"copy_out_ms", s.copy_out_ms},   {"gpu_idle_ms", s.gpu_idle_ms},
            {"items_per_second", s.items_per_second}, {"bytes_per_second", s.bytes_per_second},
            {"input_gbps", s.input_gbps}};
  }

  static Json final_round_json(const FinalFigures& figures) {
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

  static void print_json(const TuneReport& report) {
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
    output["statuses"] = report.status_counts;
    output["seconds"] = report.seconds;
    output["evaluations_per_second"] = report.evaluations_per_second;
    output["profile"] = profile_to_json(report.profile);
    output["copy_bandwidth_gbps"] = report.copy_bandwidth_gbps;
    if (report.streamed) output["pinned_copy_in_gbps"] = report.pinned_copy_in_gbps;
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
    if (report.streamed && report.default_evaluation) output["default_stream"] = stream_json(report.default_evaluation->stream);
    fmt::print("{}\n", output.dump(2));
  }
};

// ---------------------------------------------------------------- tune best

struct BestCommand {
  std::string kernel;
  std::string arch;
  std::string problem;
  std::string directory = "results/best";
  bool json = false;

  int run() const {
    std::optional<KernelDatabase> database = BestCache(directory).read(kernel);
    std::vector<DatabaseEntry> entries = database ? database->entries : std::vector<DatabaseEntry>{};
    std::erase_if(entries, [&](const DatabaseEntry& entry) {
      return (!arch.empty() && entry.arch != arch) ||
             (!problem.empty() && problem_text(database->description, entry.problem) != problem);
    });
    if (json) {
      Json output = Json::array();
      for (const DatabaseEntry& entry : entries) {
        Json values = Json::object();
        for (const auto& [name, value] : entry.configuration) values[name] = value_to_json(value);
        std::string stale = stale_reason(*database, entry);
        output.push_back({{"kernel", kernel}, {"arch", entry.arch}, {"device", entry.device_name},
                          {"problem", problem_text(database->description, entry.problem)}, {"configuration", values},
                          {"time_ms", entry.time.median_ms}, {"relative_spread", entry.time.spread},
                          {"gbps", entry.gbps}, {"gflops", entry.gflops}, {"date", entry.date},
                          {"spec_hash", entry.spec_hash}, {"stale", !stale.empty()}, {"stale_reason", stale}});
      }
      fmt::print("{}\n", output.dump(2));
      return entries.empty() ? exit_failure : exit_ok;
    }
    if (entries.empty()) {
      fmt::print(stderr, "tune best: nothing stored for kernel '{}'{}{} under {}\n", kernel,
                 arch.empty() ? "" : " on " + arch, problem.empty() ? "" : " for " + problem, directory);
      return exit_failure;
    }
    int stale_count = 0;
    for (const DatabaseEntry& entry : entries) {
      std::vector<std::string> values;
      for (const auto& [name, value] : entry.configuration) values.push_back(name + "=" + expr::to_string(value));
      std::string stale = stale_reason(*database, entry);
      stale_count += stale.empty() ? 0 : 1;
      fmt::print("{} {} {}: {:.4f} ms{} on {} ({}), {}{}\n", kernel, entry.arch,
                 problem_text(database->description, entry.problem), entry.time.median_ms,
                 entry.gbps > 0 ? fmt::format(", {:.0f} GB/s", entry.gbps) : "", entry.device_name, entry.date,
                 fmt::join(values, " "), stale.empty() ? "" : "\n  STALE: " + stale);
    }
    if (stale_count > 0)
      fmt::print(stderr, "tune best: {} of {} entries are stale; `tune run` measures a stale entry's configuration "
                         "again first\n", stale_count, entries.size());
    return exit_ok;
  }
};

// ---------------------------------------------------------------- tune export

struct ExportCommand {
  ExportOptions options;
  std::string archs = "sm_90";
  bool json = false;

  int run() {
    options.archs.clear();
    std::stringstream list(archs);
    for (std::string arch; std::getline(list, arch, ',');) {
      if (!arch.empty()) options.archs.push_back(arch);
    }
    if (options.cubin_cache.empty()) options.cubin_cache = default_cubin_cache_dir();
    std::vector<ExportedKernel> exported = export_kernels(options);
    Json output = Json::array();
    for (const ExportedKernel& kernel : exported) {
      for (const std::string& note : kernel.notes) fmt::print(stderr, "tune export: {}: {}\n", kernel.kernel, note);
      if (json) {
        output.push_back({{"kernel", kernel.kernel}, {"entries", kernel.entries}, {"stale_dropped", kernel.stale_dropped},
                          {"cubins", kernel.cubins}, {"notes", kernel.notes}});
      } else {
        fmt::print("{}: {} entries, {} cubins{}\n", kernel.kernel, kernel.entries, kernel.cubins,
                   kernel.stale_dropped ? fmt::format(", {} stale entries left out", kernel.stale_dropped) : "");
      }
    }
    if (json) fmt::print("{}\n", output.dump(2));
    else fmt::print("exported to {}{}\n", options.out.string(), options.embed ? " (with kernlathe_embedded.cpp)" : "");
    return exit_ok;
  }
};

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"tune: a GPU kernel autotuner. Exit codes: 0 ok, 1 failure, 2 bad input or usage, 3 no usable GPU."};
  app.set_version_flag("--version", std::string(KERNLATHE_VERSION));
  app.require_subcommand(1);

  SpaceCommand space_command;
  CLI::App* space = app.add_subcommand("space", "count and list a spec's valid configurations");
  space_command.common.add_to(*space, true);
  space->add_option("--list", space_command.list_text,
                    "print the first N valid configurations, or all of them, as they are enumerated (with --json: "
                    "JSON lines, the summary first)");
  auto* sample_option = space->add_option(
      "--sample", space_command.sample,
      fmt::format("print N random valid configurations, N <= {} (with --json: JSON lines)", max_sample_size));
  space->add_option("--seed", space_command.seed, "seed for --sample")->needs(sample_option);

  ValidateCommand validate_command;
  CLI::App* validate = app.add_subcommand("validate", "check a spec, its space and its template without a GPU");
  validate->add_option("spec", validate_command.spec_name, "kernel spec")->required();
  validate->add_option("--arch", validate_command.arch, "device profile used to enumerate the space");
  validate->add_flag("--json", validate_command.json, "machine-readable output");

  CompileCheckCommand compile_command;
  CLI::App* compile = app.add_subcommand("compile-check", "compile configurations with NVRTC (no GPU needed)");
  compile_command.common.add_to(*compile, false);
  auto* all_option = compile->add_flag("--all", compile_command.all, "every valid configuration");
  compile->add_option("--sample", compile_command.sample, "N random valid configurations (default 16)")
      ->excludes(all_option);
  compile->add_option("--seed", compile_command.seed, "seed for --sample");
  compile->add_option("--jobs", compile_command.jobs, "compile processes (default: one per core)");

  RunCommand run_command;
  CLI::App* run = app.add_subcommand("run", "tune a kernel spec on the GPU (or replay a recorded run)");
  run_command.common.add_to(*run, true);
  run->add_option("--strategy", run_command.strategy,
                  fmt::format("search strategy: {} (default: {})", fmt::join(strategy_names(), ", "),
                              default_strategy_name()));
  run->add_option("--budget", run_command.budget, "stop after N evaluations");
  run->add_option("--time", run_command.time_budget, "stop after a duration: 90s, 5m, 1h");
  run->add_option("--out", run_command.out, "record directory (default results/runs/<kernel>/<arch>/<problem>)");
  run->add_flag("--resume", run_command.resume,
                "go on from the record: configurations recorded under the same spec hash are not measured again "
                "and are ranked with this run's");
  run->add_flag("--cold", run_command.cold, "flush the L2 cache before every timed sample (one launch per sample)");
  run->add_flag("--warm", run_command.warm, "time back-to-back launches with warm caches (the default)");
  // Measurement settings (tuner/measure/measurement.h); the defaults differ for streamed specs, whose samples are
  // whole passes over the dataset.
  const char* measurement_group = "Measurement (defaults: kernels / streamed passes)";
  run->add_option("--min-samples", run_command.measurement.min_samples, "samples every configuration gets at least (10 / 3)")
      ->group(measurement_group)->check(CLI::PositiveNumber);
  run->add_option("--max-samples", run_command.measurement.max_samples, "samples per configuration at most (200 / 10)")
      ->group(measurement_group)->check(CLI::PositiveNumber);
  run->add_option("--noise", run_command.measurement.target_relative_spread,
                  "stop sampling once (p75 - p25) / median is at most this (0.02)")
      ->group(measurement_group)->check(CLI::NonNegativeNumber);
  run->add_option("--min-time", run_command.measurement.min_seconds, "seconds of sampling every configuration gets (0)")
      ->group(measurement_group)->check(CLI::NonNegativeNumber);
  run->add_option("--max-time", run_command.measurement.max_seconds, "seconds of sampling per configuration at most (1.0 / 0.3)")
      ->group(measurement_group)->check(CLI::PositiveNumber);
  run->add_option("--warmup", run_command.measurement.warmup_ms,
                  "milliseconds of warm-up launches before sampling when the GPU was idle for 100 ms or more, as for "
                  "the first configuration (20 / 0)")
      ->group(measurement_group)->check(CLI::NonNegativeNumber);
  run->add_option("--busy-warmup", run_command.measurement.busy_warmup_ms,
                  "milliseconds of warm-up when the previous configuration kept the GPU busy until just before "
                  "(2; never longer than --warmup; at least two launches either way)")
      ->group(measurement_group)->check(CLI::NonNegativeNumber);
  run->add_option("--energy", run_command.energy,
                  "energy per launch: off, auto (the final round's winner; every row and round when --objective needs it) or always "
                  "(every row; costs 0.1-0.3 s per configuration: NVML's counter steps every ~100 ms)")
      ->group(measurement_group);
  run->add_option("--objective", run_command.objective,
                  "what the search minimises: time (default), energy (per launch) or edp (energy x time); energy "
                  "and edp measure energy on every row and leave the best cache alone")
      ->group(measurement_group);
  run->add_option("--energy-periods", run_command.measurement.energy_periods,
                  "energy-counter periods per energy figure (2)")
      ->group(measurement_group)->check(CLI::PositiveNumber);
  run->add_option("--seed", run_command.seed, "seed of the search strategy");
  run->add_option("--jobs", run_command.jobs, "compile processes (default: one per core)");
  run->add_option("--replay", run_command.replay, "take measurements from a recorded evaluations.csv (no GPU)");
  run->add_flag("--no-cubin-cache", run_command.no_cubin_cache, "compile every configuration afresh");
  run->add_flag("--fresh-ceilings", run_command.fresh_ceilings,
                "measure the GPU's ceilings again (about a second) instead of taking them from the ceiling cache, "
                "which keeps them a week per GPU model and driver");
  run->add_option("--ceiling-cache", run_command.ceiling_cache,
                  "ceiling cache folder (default $XDG_CACHE_HOME/kernlathe/ceilings or ~/.cache/kernlathe/ceilings)");
  run->add_option("--timeout", run_command.timeout, "seconds a configuration may run before it is killed");
  run->add_option("--best-dir", run_command.best_dir, "best-configuration cache directory");
  run->add_option("--final", run_command.final_candidates,
                  "final round: the N best of the search, the default and the stored configuration measured again, "
                  "interleaved (default 5; 0: no final round)")
      ->check(CLI::Range(0, 100));
  run->add_option("--final-rounds", run_command.final_rounds, "rounds of the final round (default 3)")->check(CLI::Range(1, 50));

  BestCommand best_command;
  CLI::App* best = app.add_subcommand("best", "print the stored best configurations of a kernel");
  best->add_option("kernel", best_command.kernel, "kernel name")->required();
  best->add_option("--arch", best_command.arch, "only this architecture, e.g. sm_90");
  best->add_option("--problem", best_command.problem, "only this problem, e.g. N=1048576");
  best->add_option("--dir", best_command.directory, "cache directory (default results/best)");
  best->add_flag("--json", best_command.json, "machine-readable output");

  ExportCommand export_command;
  CLI::App* export_app = app.add_subcommand("export", "write what an application ships: databases, sources, cubins");
  export_app->add_option("kernels", export_command.options.kernels, "kernel names (results/best/<name>.json)")->required();
  export_app->add_option("--arch", export_command.archs, "archs to build cubins for, comma-separated (default sm_90)");
  export_app->add_option("-o,--out", export_command.options.out, "output directory")->required();
  export_app->add_option("--dir", export_command.options.best_directory, "best-configuration directory (default results/best)");
  export_app->add_flag("--embed", export_command.options.embed, "also write kernlathe_embedded.cpp to compile into the application");
  export_app->add_flag("--include-stale", export_command.options.include_stale, "export stale entries too");
  export_app->add_flag("--json", export_command.json, "machine-readable output");

  ReplayCommand replay_command;
  CLI::App* replay = app.add_subcommand("replay", "benchmark search strategies on recorded data (no GPU)");
  replay_command.add_to(*replay);

  AnalyzeCommand analyze_command;
  CLI::App* analyze = app.add_subcommand("analyze", "which parameters matter on which GPU, from recorded data (no GPU)");
  analyze_command.add_to(*analyze);

  T4Command t4_command;
  CLI::App* t4 = app.add_subcommand("t4", "write records as community T4 result files with their T1 spaces (no GPU)");
  t4_command.add_to(*t4);

  CeilingsCommand ceilings_command;
  CLI::App* ceilings = app.add_subcommand("ceilings", "measure the GPU's copy, host-transfer, FMA and tensor-core ceilings");
  ceilings_command.add_to(*ceilings);

  ReportCommand report_command;
  CLI::App* report = app.add_subcommand("report", "HTML pages of charts per kernel from recorded data (no GPU)");
  report_command.add_to(*report);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return exit_bad_input;
  }

  if (space->parsed()) return space_command.run();
  if (validate->parsed()) return validate_command.run();
  if (compile->parsed()) return compile_command.run();
  if (run->parsed()) return run_command.run();
  if (best->parsed()) return best_command.run();
  if (replay->parsed()) return replay_command.run();
  if (analyze->parsed()) return analyze_command.run();
  if (t4->parsed()) return t4_command.run();
  if (report->parsed()) return report_command.run();
  if (ceilings->parsed()) return ceilings_command.run();
  if (export_app->parsed()) return export_command.run();
  return exit_bad_input;
}

}  // namespace kernlathe
