#include "tuner/cli/space_command.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "tuner/cli/configuration_listing.h"
#include "tuner/space/json_values.h"
#include "tuner/common/error.h"
#include "tuner/session/device_query.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_hash.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

using Json = nlohmann::ordered_json;
using SteadyClock = std::chrono::steady_clock;



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

}  // namespace

void SpaceCommand::add_to(CLI::App& command) {
  common.add_to(command, true);
  command.add_option("--list", list_text,
                     "print the first N valid configurations, or all of them, as they are enumerated (with --json: "
                     "JSON lines, the summary first)");
  auto* sample_option = command.add_option(
      "--sample", sample,
      fmt::format("print N random valid configurations, N <= {} (with --json: JSON lines)", max_sample_size));
  command.add_option("--seed", seed, "seed for --sample")->needs(sample_option);
}

// A space file on its own (spaces/*.yaml: parameters and no template) stands for a spec with that space and the
// --problem symbols, so a space can be counted and listed before any kernel uses it.
KernelSpec SpaceCommand::load() const {
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

std::uint64_t SpaceCommand::list_count() const {
  if (list_text.empty()) return 0;
  if (list_text == "all") return std::numeric_limits<std::uint64_t>::max();
  std::uint64_t count = 0;
  const auto [end, error] = std::from_chars(list_text.data(), list_text.data() + list_text.size(), count);
  if (error != std::errc() || end != list_text.data() + list_text.size())
    throw InputError(fmt::format("--list {}: expected a count of configurations or 'all'", list_text));
  return count;
}

int SpaceCommand::run() const {
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

}  // namespace kernlathe
