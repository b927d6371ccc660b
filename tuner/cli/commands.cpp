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
#include <filesystem>
#include <cstdio>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tuner/cache/best_cache.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/record/build_commit.h"
#include "tuner/cache/export.h"
#include "tuner/cli/analyze_command.h"
#include "tuner/cli/best_command.h"
#include "tuner/cli/ceilings_command.h"
#include "tuner/cli/configuration_listing.h"
#include "tuner/cli/t4_command.h"
#include "tuner/cli/replay_command.h"
#include "tuner/cli/report_command.h"
#include "tuner/cli/run_command.h"
#include "tuner/cli/sweep_command.h"
#include "tuner/cli/cover_command.h"
#include "tuner/cli/spec_options.h"
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
    // The reference configuration meets the constraints; buffer counts, launch geometry and shared memory of the
    // run's default configuration evaluate to usable values (and type errors surface here).
    check_spec_configurations(spec, space);
    const RunDefault run_default = run_default_configuration(spec, space);
    if (!run_default.fallback_note.empty()) fmt::print(stderr, "tune: note: {}\n", run_default.fallback_note);
    // Template arguments of the default configuration evaluate.
    instantiate(spec, space, run_default.values, arch);
    if (json) {
      Json output{{"spec", spec.file.string()}, {"kernel", spec.name}, {"valid", space.valid_count()}, {"ok", true}};
      output["default"] = configuration_to_json(spec.space, run_default.values);
      if (!run_default.fallback_note.empty()) output["default_note"] = run_default.fallback_note;
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
      const Configuration fallback = run_default_configuration(spec, space).values;
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
    int failures = 0, cached = 0;
    Json failed = Json::array();
    Json slow = Json::array();  // compiled, with ptxas's "Potential Performance Loss" lines
    double compile_ms = 0;
    for (std::size_t i = 0; i < futures.size(); ++i) {
      CompileResult result = futures[i].get();
      compile_ms += result.compile_ms;
      cached += result.cached ? 1 : 0;
      if (result.ok) {
        std::vector<std::string> warnings = performance_warnings(result.log);
        if (warnings.empty()) continue;
        const std::string configuration = to_string(spec.space, configurations[i]);
        slow.push_back({{"configuration", configuration}, {"warnings", warnings}});
        if (!common.json)
          for (const std::string& warning : warnings)
            fmt::print(stderr, "performance warning: {} {}: {}\n", spec.name, configuration, warning);
        continue;
      }
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
      Json output{{"kernel", spec.name}, {"arch", arch},          {"compiled", configurations.size()},
                  {"failed", failures},   {"seconds", seconds},    {"failures", failed},
                  {"cached", cached},     {"performance_warnings", slow}};
      fmt::print("{}\n", output.dump(2));
    } else {
      fmt::print("{}: {} of {} configurations compiled for {} in {:.2f} s ({} compile processes)\n", spec.name,
                 configurations.size() - failures, configurations.size(), arch, seconds, pool.jobs());
      // Cubins from the cache come without their compile log, so their warnings cannot be shown here.
      if (!slow.empty() || cached > 0)
        fmt::print("{}: {} with ptxas performance warnings (not failures); {} from the cubin cache, whose logs are "
                   "not kept\n", spec.name, slow.size(), cached);
    }
    return failures == 0 ? exit_ok : exit_failure;
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
  app.set_version_flag("--version", version_text());
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
  compile->add_option("--jobs", compile_command.jobs, "compile processes (default 0: one per core)")
      ->check(zero_or_more());

  RunCommand run_command;
  CLI::App* run = app.add_subcommand("run", "tune a kernel spec on the GPU (or replay a recorded run)");
  run_command.add_to(*run);

  SweepCommand sweep_command;
  CLI::App* sweep = app.add_subcommand("sweep", "tune every problem of a workload file, one after the other, resumably");
  sweep_command.add_to(*sweep);

  CoverCommand cover_command;
  CLI::App* cover = app.add_subcommand("cover", "the few configurations that serve every tuned problem of a kernel (no GPU)");
  cover_command.add_to(*cover);

  BestCommand best_command;
  CLI::App* best = app.add_subcommand(
      "best", "print the stored best configurations of a kernel, or (--select) what the runtime would launch");
  best_command.add_to(*best);

  ExportCommand export_command;
  CLI::App* export_app = app.add_subcommand("export", "write what an application ships: databases, sources, cubins");
  export_app->add_option("kernels", export_command.options.kernels, "kernel names (results/best/<name>.json)")->required();
  export_app->add_option("--arch", export_command.archs, "archs to build cubins for, comma-separated (default sm_90)");
  export_app->add_option("-o,--out", export_command.options.out, "output directory")->required();
  export_app->add_option("--dir", export_command.options.best_directory, "best-configuration directory (default results/best)");
  export_app->add_option("--specs", export_command.options.specs, "folder of the kernels' specs, <kernel>.yaml (default kernels)");
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

  // A first word that is no command is a mistyped one; CLI11 alone would say only that a command is required.
  if (argc >= 2 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
      names.push_back(command->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string suggestion = expr::closest_match(argv[1], names);
      fmt::print(stderr, "tune: unknown command '{}'{}; the commands are {} (tune --help describes each)\n", argv[1],
                 suggestion.empty() ? "" : fmt::format(" (did you mean {}?)", suggestion), fmt::join(names, ", "));
      return exit_bad_input;
    }
  }
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
  if (sweep->parsed()) return sweep_command.run_sweep();
  if (cover->parsed()) return cover_command.run();
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
