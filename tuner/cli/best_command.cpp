#include "tuner/cli/best_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernlathe/runtime.h"
#include "tuner/cache/best_cache.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/space/json_values.h"
#include "tuner/common/error.h"
#include "tuner/expr/expression.h"
#include "tuner/runtime/kernel_plan.h"
#include "tuner/session/tuning_session.h"  // run_constants
#include "tuner/space/space.h"
#include "tuner/spec/model.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {

namespace {

using Json = nlohmann::ordered_json;


// A configuration in the description's parameter order (values it has beyond those follow, sorted).
std::vector<std::pair<std::string, Value>> ordered_configuration(const KernelDescription& description,
                                                                 const ConfigurationValues& configuration) {
  std::vector<std::pair<std::string, Value>> ordered;
  for (const ParameterDescription& parameter : description.parameters) {
    if (auto found = configuration.find(parameter.name); found != configuration.end()) ordered.emplace_back(*found);
  }
  for (const auto& [name, value] : configuration) {
    bool declared = std::any_of(description.parameters.begin(), description.parameters.end(),
                                [&key = name](const ParameterDescription& parameter) { return parameter.name == key; });
    if (!declared) ordered.emplace_back(name, value);
  }
  return ordered;
}

// --problem for --select: "" is the kernel's default problem; a symbol the kernel does not have is bad input, not a
// problem that no entry matches.
Problem requested_problem(const KernelDescription& description, const std::string& text) {
  Problem requested;
  try {
    requested = parse_problem_text(text);
  } catch (const DatabaseError& error) {
    throw InputError(fmt::format("--problem: {}", error.what()));
  }
  std::vector<std::string> symbols;
  for (const auto& [name, unused] : description.problem) symbols.push_back(name);
  for (const auto& [name, unused] : requested) {
    if (std::find(symbols.begin(), symbols.end(), name) == symbols.end())
      throw InputError(fmt::format("--problem {}: kernel {} has no symbol {} (it has {})", text, description.kernel, name,
                                   fmt::join(symbols, ", ")));
  }
  return requested;
}

}  // namespace

void BestCommand::add_to(CLI::App& command) {
  command.add_option("kernel", kernel, "kernel name")->required();
  command.add_option("--arch", arch, "only this architecture, e.g. sm_90; with --select: the arch's built-in profile");
  command.add_option("--problem", problem,
                     "only this problem, e.g. N=1048576; with --select: the problem to select for (symbols not named "
                     "take the kernel's defaults)");
  command.add_option("--dir", directory, "cache directory (default results/best)");
  command.add_option("--specs", specs,
                     "where <kernel>.yaml lives (default kernels): entries of an older spec, space or template are stale");
  CLI::Option* select_flag = command.add_flag(
      "--select", select,
      "print what the runtime would launch for --problem on --arch or --device, no GPU needed: the rung of the "
      "ladder, the configuration and the reason, or the runtime's error (exit 1) when nothing is usable there");
  command.add_option("--device", device,
                     fmt::format("with --select: a board instead of the arch's profile, by the name the driver "
                                 "reports; known: {}", fmt::join(known_device_names(), ", ")))
      ->needs(select_flag);
  CLI::Option* refresh_flag = command.add_flag(
      "--refresh-description", refresh,
      "rewrite the stored description from the kernel's spec as it is now (--specs), keeping every entry: for a change "
      "that alters no configuration and no measurement, such as a space's problem_defaults; refused when it would make "
      "a current entry stale. The default configuration is chosen as the run that stored the newest entry chose it, "
      "on its board at its problem (--arch, --problem: another)");
  refresh_flag->excludes(select_flag);
  command.add_flag("--json", json, "machine-readable output");
}

int BestCommand::run() const {
  if (refresh) return refresh_description();
  return select ? show_selection() : list_entries();
}

int BestCommand::refresh_description() const {
  const std::optional<KernelDatabase> stored = BestCache(directory).read(kernel);
  if (!stored) {
    throw InputError(
        fmt::format("best --refresh-description: no database for kernel '{}' under {}", kernel, directory));
  }
  // The description is written by the run that stored the newest entry, with its problem and device: the default
  // configuration it holds is the one valid there. Refreshed with the same, it changes only where the spec changed.
  const auto newest = std::max_element(stored->entries.begin(), stored->entries.end(),
                                       [](const DatabaseEntry& a, const DatabaseEntry& b) { return a.date < b.date; });
  if (newest == stored->entries.end() && (arch.empty() || problem.empty()))
    throw InputError(fmt::format("best --refresh-description: {} has no entries; name --arch and --problem", kernel));
  const std::string problem_shown = problem.empty() ? problem_text(stored->description, newest->problem) : problem;
  const KernelSpec spec = load_kernel_spec(find_spec((std::filesystem::path(specs) / (kernel + ".yaml")).string()),
                                           parse_problem_overrides(problem_shown));
  DeviceProperties device;
  if (!arch.empty()) {
    device = device_profile(arch);
  } else {
    const std::vector<std::string> boards = known_device_names();
    device = std::find(boards.begin(), boards.end(), newest->device_name) != boards.end()
                 ? named_device_profile(newest->device_name)
                 : device_profile(newest->arch);
  }
  const SpaceEnumerator space(spec.space, run_constants(spec, device));
  const KernelDatabase before = BestCache(directory).refresh_description(describe_kernel(spec, space));
  const KernelDatabase after = *BestCache(directory).read(kernel);

  // What changed, by field of the description as the file stores it.
  const auto description_json = [](const KernelDatabase& database) {
    return Json::parse(database_json(KernelDatabase{database.kernel, database.description, {}}))["description"];
  };
  const Json old_fields = description_json(before), new_fields = description_json(after);
  std::vector<std::string> changed;
  for (const auto& [field, value] : new_fields.items())
    if (!old_fields.contains(field) || old_fields[field] != value) changed.push_back(field);
  for (const auto& [field, value] : old_fields.items())
    if (!new_fields.contains(field)) changed.push_back(field);
  int current = 0;
  for (const DatabaseEntry& entry : after.entries) current += stale_reason(after, entry).empty() ? 1 : 0;
  const std::string file = BestCache(directory).file_for(kernel).string();
  if (json) {
    fmt::print("{}\n", Json{{"kernel", kernel}, {"file", file}, {"spec", spec.file.string()}, {"device", device.name},
                            {"problem", problem_shown}, {"changed", changed}, {"entries", after.entries.size()},
                            {"current", current}}.dump(2));
    return exit_ok;
  }
  const std::string what_changed =
      changed.empty() ? "nothing changed" : fmt::format("changed: {}", fmt::join(changed, ", "));
  fmt::print("{}: description refreshed from {} ({} at {}), {}; {} entries kept, {} current\n", file,
             spec.file.string(), device.name, problem_shown, what_changed, after.entries.size(), current);
  return exit_ok;
}

int BestCommand::show_selection() const {
  if (arch.empty() && device.empty()) throw InputError("best --select: name the device with --arch sm_XX or --device NAME");
  const DeviceProperties properties = device.empty() ? device_profile(arch) : named_device_profile(device);
  if (!arch.empty() && !device.empty() && device_profile(arch).arch_name() != properties.arch_name())
    throw InputError(fmt::format("best --select: --device '{}' is {}, not {}", device, properties.arch_name(), arch));
  const DeviceIdentity identity = runtime_identity(properties);

  const auto fail = [&](const std::string& message) {
    fmt::print(stderr, "tune best: {}\n", message);
    if (json) fmt::print("{}\n", Json{{"error", message}}.dump(2));
    return static_cast<int>(exit_failure);
  };
  const std::optional<KernelDatabase> database = BestCache(directory).read(kernel);
  if (!database) return fail(fmt::format("no database for kernel '{}' under {}", kernel, directory));
  const KernelDescription& description = database->description;
  if (description.entry_point.empty()) {
    return fail(fmt::format("{}: the database has no kernel description (written by an older tune); tune the kernel "
                            "again", kernel));
  }
  const Problem requested = requested_problem(description, problem);
  Selection selection;
  try {
    // The runtime's own selection and its own error: what Runtime::kernel does on a device with these properties.
    selection = select_usable(*database, identity, requested);
  } catch (const RuntimeError& error) {
    return fail(error.what());
  }
  const std::string problem_shown = problem_text(description, complete_problem(description, requested));
  const auto configuration = ordered_configuration(description, selection.configuration);
  if (json) {
    Json values = Json::object();
    for (const auto& [name, value] : configuration) values[name] = value_to_json(value);
    Json output{{"kernel", kernel},
                {"problem", problem_shown},
                {"arch", identity.arch()},
                {"device", identity.name},
                {"rung", rung_name(selection.rung)},
                {"configuration", values},
                {"reason", selection.reason}};
    fmt::print("{}\n", output.dump(2));
    return exit_ok;
  }
  std::vector<std::string> values;
  for (const auto& [name, value] : configuration) values.push_back(name + "=" + expr::to_string(value));
  fmt::print("kernel         {}\n", kernel);
  fmt::print("problem        {}\n", problem_shown);
  fmt::print("device         {} ({}, built-in profile, {} SMs)\n", identity.name, identity.arch(), properties.sm_count);
  fmt::print("rung           {}\n", rung_name(selection.rung));
  fmt::print("configuration  {}\n", fmt::join(values, " "));
  fmt::print("reason         {}\n", selection.reason);
  return exit_ok;
}

int BestCommand::list_entries() const {
  std::optional<KernelDatabase> database = BestCache(directory).read(kernel);
  const std::filesystem::path spec_file = std::filesystem::path(specs) / (kernel + ".yaml");
  if (!database && !std::filesystem::exists(spec_file)) {
    // Neither stored nor specified: a mistyped name, which is bad input; a kernel with a spec and no entries yet
    // is a result ("nothing stored", exit 1).
    std::vector<std::string> known;
    std::error_code error;
    for (const auto& file : std::filesystem::directory_iterator(directory, error))
      if (file.path().extension() == ".json") known.push_back(file.path().stem().string());
    std::sort(known.begin(), known.end());
    const std::string suggestion = expr::closest_match(kernel, known);
    throw InputError(fmt::format("no kernel '{}': nothing stored under {} and no spec {}{}; stored kernels: {}", kernel,
                                 directory, spec_file.string(),
                                 suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                                 known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
  }
  // A --problem that does not parse, or names a symbol the kernel lacks, is bad input, not a problem nothing matches.
  if (database && !problem.empty()) requested_problem(database->description, problem);
  std::vector<DatabaseEntry> entries = database ? database->entries : std::vector<DatabaseEntry>{};
  std::erase_if(entries, [&](const DatabaseEntry& entry) {
    return (!arch.empty() && entry.arch != arch) ||
           (!problem.empty() && problem_text(database->description, entry.problem) != problem);
  });
  // The stored description only says what the entries were measured against; where the kernel's spec is found,
  // its spec, space and template (with every include) as they are now decide too, as they do for `tune export`.
  std::string current_hash;
  if (!entries.empty() && std::filesystem::exists(spec_file)) current_hash = spec_hash(load_kernel_spec(spec_file));
  const auto stale_reason_now = [&](const DatabaseEntry& entry) {
    std::string stale = stale_reason(*database, entry);
    if (stale.empty() && !current_hash.empty() && entry.spec_hash != current_hash) {
      stale = fmt::format("measured against kernel hash {}; {} with its space and template hashes to {} now",
                          entry.spec_hash, spec_file.string(), current_hash);
    }
    return stale;
  };
  if (json) {
    Json output = Json::array();
    for (const DatabaseEntry& entry : entries) {
      Json values = Json::object();
      for (const auto& [name, value] : entry.configuration) values[name] = value_to_json(value);
      std::string stale = stale_reason_now(entry);
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
    std::string stale = stale_reason_now(entry);
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

}  // namespace kernlathe
