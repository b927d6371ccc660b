#include "kernlathe/database.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/expr/expression.h"
#include "tuner/runtime/description_scope.h"

namespace kernlathe {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------- JSON <-> values

// An integer field: absent gives fallback; a real or a text is an error (a real out of the integer's range would
// convert with undefined behaviour: 8.9e50 as a format number, found by the database fuzz target).
std::int64_t integer_field(const json& object, const char* key, std::int64_t fallback) {
  auto found = object.find(key);
  if (found == object.end()) return fallback;
  if (!found->is_number_integer()) throw DatabaseError(fmt::format("{} is {}, not an integer", key, found->dump()));
  return found->get<std::int64_t>();
}

json value_to_json(const Value& value) {
  return std::visit([](const auto& held) { return json(held); }, value);
}

Value value_from_json(const json& value, const std::string& what) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  throw DatabaseError(fmt::format("{}: {} is neither a number, a boolean nor a string", what, value.dump()));
}

json configuration_to_json(const ConfigurationValues& configuration) {
  json object = json::object();
  for (const auto& [name, value] : configuration) object[name] = value_to_json(value);
  return object;
}

ConfigurationValues configuration_from_json(const json& object, const std::string& what) {
  ConfigurationValues configuration;
  for (const auto& [name, value] : object.items()) configuration[name] = value_from_json(value, what + "." + name);
  return configuration;
}

// Format 1 stored every value as text: "256", "true", "two_pass".
Value value_from_text(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  try {
    std::size_t used = 0;
    long long integer = std::stoll(text, &used);
    if (used == text.size()) return static_cast<std::int64_t>(integer);
    double real = std::stod(text, &used);
    if (used == text.size()) return real;
  } catch (const std::exception&) {
  }
  return text;
}

json description_to_json(const KernelDescription& description) {
  json parameters = json::array();
  for (const auto& parameter : description.parameters) {
    json values = json::array();
    for (const auto& value : parameter.values) values.push_back(value_to_json(value));
    parameters.push_back({{"name", parameter.name}, {"type", parameter.type}, {"values", values}});
  }
  json derived = json::array();
  for (const auto& value : description.derived) derived.push_back({{"name", value.name}, {"expression", value.expression}});
  json problem = json::array();
  for (const auto& [name, value] : description.problem) problem.push_back({{"name", name}, {"default", value}});
  json arguments = json::array();
  for (const auto& argument : description.arguments) {
    json object{{"name", argument.name}, {"kind", argument.kind}, {"dtype", argument.dtype}};
    if (argument.kind == "buffer") {
      object["role"] = argument.role;
      object["count"] = argument.count;
      if (argument.scratch) object["scratch"] = true;
    } else if (argument.kind == "scalar") {
      object["value"] = argument.value;
    } else {
      object["buffer"] = argument.buffer;
      object["dims"] = argument.dims;
      object["box"] = argument.box;
      object["swizzle"] = argument.swizzle;
      if (!argument.strides.empty()) object["strides"] = argument.strides;  // absent: dense, as before strides existed
    }
    arguments.push_back(object);
  }
  json described{{"kernel", description.kernel},
              {"template", description.template_name},
              {"template_hash", description.template_hash},
              {"spec_hash", description.spec_hash},
              {"entry_point", description.entry_point},
              {"template_arguments", description.template_arguments},
              {"compile_options", description.compile_options},
              {"arch_specific", description.arch_specific},
              {"problem", problem},
              {"parameters", parameters},
              {"derived", derived},
              {"constraints", description.constraints},
              {"launch", {{"grid", description.grid}, {"block", description.block}, {"shared_memory", description.shared_memory}}},
              {"arguments", arguments},
              {"default_configuration", configuration_to_json(description.default_configuration)},
              {"default_origin", description.default_origin},
              {"loader", description.loader}};
  if (!description.problem_defaults.empty()) {  // absent where the space declares none, as in older databases
    json problem_defaults = json::array();
    for (const ProblemDefaultDescription& problem_default : description.problem_defaults) {
      problem_defaults.push_back(
          {{"when", problem_default.when}, {"configuration", configuration_to_json(problem_default.configuration)}});
    }
    described["problem_defaults"] = problem_defaults;
  }
  if (description.stream) {
    const StreamDescription& stream = *description.stream;
    described["stream"] = json{{"input", stream.input},   {"output", stream.output}, {"dtype", stream.dtype},
                               {"item_shape", stream.item_shape}, {"items", stream.items}};
  }
  return described;
}

KernelDescription description_from_json(const json& object) {
  KernelDescription description;
  description.kernel = object.at("kernel").get<std::string>();
  description.template_name = object.at("template").get<std::string>();
  description.template_hash = object.at("template_hash").get<std::string>();
  description.spec_hash = object.at("spec_hash").get<std::string>();
  description.entry_point = object.at("entry_point").get<std::string>();
  description.template_arguments = object.value("template_arguments", std::vector<std::string>{});
  description.compile_options = object.value("compile_options", std::vector<std::string>{});
  description.arch_specific = object.value("arch_specific", false);
  for (const auto& symbol : object.at("problem"))
    description.problem.emplace_back(symbol.at("name").get<std::string>(), integer_field(symbol, "default", 0));
  for (const auto& parameter : object.at("parameters")) {
    ParameterDescription described{parameter.at("name").get<std::string>(), parameter.at("type").get<std::string>(), {}};
    for (const auto& value : parameter.at("values")) described.values.push_back(value_from_json(value, "parameter " + described.name));
    description.parameters.push_back(std::move(described));
  }
  for (const auto& value : object.value("derived", json::array()))
    description.derived.push_back({value.at("name").get<std::string>(), value.at("expression").get<std::string>()});
  description.constraints = object.value("constraints", std::vector<std::string>{});
  const json& launch = object.at("launch");
  description.grid = launch.at("grid").get<std::array<std::string, 3>>();
  description.block = launch.at("block").get<std::array<std::string, 3>>();
  description.shared_memory = launch.value("shared_memory", "0");
  for (const auto& argument : object.at("arguments")) {
    ArgumentDescription described;
    described.name = argument.at("name").get<std::string>();
    described.kind = argument.at("kind").get<std::string>();
    described.dtype = argument.value("dtype", "");
    described.role = argument.value("role", "");
    described.count = argument.value("count", "");
    described.value = argument.value("value", "");
    described.scratch = argument.value("scratch", false);
    described.buffer = argument.value("buffer", "");
    described.dims = argument.value("dims", std::vector<std::string>{});
    described.box = argument.value("box", std::vector<std::string>{});
    described.swizzle = argument.value("swizzle", "0");
    described.strides = argument.value("strides", std::vector<std::string>{});
    if (described.kind != "buffer" && described.kind != "scalar" && described.kind != "tensor_map")
      throw DatabaseError(fmt::format("argument '{}' has kind '{}' (buffer, scalar or tensor_map)", described.name, described.kind));
    description.arguments.push_back(std::move(described));
  }
  description.default_configuration =
      configuration_from_json(object.at("default_configuration"), "default_configuration");
  description.default_origin = object.value("default_origin", "");
  description.loader = object.value("loader", std::map<std::string, std::string>{});
  if (object.contains("problem_defaults")) {
    const json& problem_defaults = object.at("problem_defaults");
    if (!problem_defaults.is_array())
      throw DatabaseError(fmt::format("problem_defaults is {}, not a list", problem_defaults.dump()));
    for (const json& problem_default : problem_defaults) {
      description.problem_defaults.push_back(
          {problem_default.at("when").get<std::string>(),
           configuration_from_json(problem_default.at("configuration"), "problem_defaults.configuration")});
    }
  }
  if (object.contains("stream")) {
    const json& stream = object.at("stream");
    StreamDescription described;
    described.input = stream.at("input").get<std::string>();
    described.output = stream.at("output").get<std::string>();
    described.dtype = stream.at("dtype").get<std::string>();
    described.item_shape = stream.at("item_shape").get<std::vector<std::string>>();
    described.items = stream.at("items").get<std::string>();
    description.stream = std::move(described);
  }
  return description;
}

json entry_to_json(const KernelDescription& description, const DatabaseEntry& entry) {
  return json{{"device_name", entry.device_name},
              {"arch", entry.arch},
              {"driver", entry.driver},
              {"problem", problem_text(description, entry.problem)},
              {"configuration", configuration_to_json(entry.configuration)},
              {"time", {{"median_ms", entry.time.median_ms}, {"spread", entry.time.spread}, {"samples", entry.time.samples}}},
              {"gflops", entry.gflops},
              {"gbps", entry.gbps},
              {"date", entry.date},
              {"spec_hash", entry.spec_hash},
              {"tool_version", entry.tool_version}};
}

DatabaseEntry entry_from_json(const json& object, int format) {
  DatabaseEntry entry;
  entry.device_name = object.value("device_name", "");
  entry.arch = object.at("arch").get<std::string>();
  entry.problem = parse_problem_text(object.at("problem").get<std::string>());
  entry.date = object.value("date", "");
  entry.spec_hash = object.value("spec_hash", "");
  entry.gflops = object.value("gflops", 0.0);
  entry.gbps = object.value("gbps", 0.0);
  if (format == 1) {
    for (const auto& [name, text] : object.at("configuration").items()) entry.configuration[name] = value_from_text(text.get<std::string>());
    entry.time.median_ms = object.at("time_ms").get<double>();
    entry.tool_version = "format 1";
    return entry;
  }
  entry.driver = object.value("driver", "");
  entry.configuration = configuration_from_json(object.at("configuration"), "configuration");
  const json& time = object.at("time");
  entry.time.median_ms = time.at("median_ms").get<double>();
  entry.time.spread = time.value("spread", 0.0);
  entry.time.samples = static_cast<int>(std::clamp<std::int64_t>(integer_field(time, "samples", 0), 0, 1 << 30));
  entry.tool_version = object.value("tool_version", "");
  return entry;
}

// ---------------------------------------------------------------- expressions at selection time

// Sum over symbols of |log2(requested / tuned)|; infinity when the tuned problem lacks a symbol. A symbol that differs
// where either value is not positive (a switch such as CAUSAL 0 / 1, or a 0 meaning "packed" against a row stride of
// 6144) has no ratio: it counts as kUnscaledDifference doublings, beyond any nearest-problem distance, so such an
// entry serves as "same arch, any problem" (after the space's problem defaults) rather than not at all.
double problem_distance(const Problem& requested, const Problem& tuned) {
  constexpr double kUnscaledDifference = 16;
  double distance = 0;
  for (const auto& [name, value] : requested) {
    auto found = tuned.find(name);
    if (found == tuned.end()) return std::numeric_limits<double>::infinity();
    if (found->second == value) continue;
    if (value <= 0 || found->second <= 0) {
      distance += kUnscaledDifference;
      continue;
    }
    distance += std::abs(std::log2(static_cast<double>(value) / static_cast<double>(found->second)));
  }
  return distance;
}

std::string arch_major_of(const std::string& arch) {
  // "sm_90" -> "9", "sm_100" -> "10", "sm_86" -> "8"
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5) return "";
  std::string digits = arch.substr(3);
  while (!digits.empty() && !std::isdigit(static_cast<unsigned char>(digits.back()))) digits.pop_back();
  return digits.size() >= 2 ? digits.substr(0, digits.size() - 1) : "";
}

// An entry usable here, as select() ranks it.
struct Candidate {
  const DatabaseEntry* entry;
  double distance;
  bool same_arch;
  bool same_name;
};

struct Candidates {
  std::vector<Candidate> usable;  // best first
  std::string passed_over;        // "; 2 stale entries passed over; 1 entry unusable here, e.g. ..." or ""
};

// The current entries of this arch or its major arch whose configuration is usable at the problem on this device:
// same arch before other archs; then the nearest problem; at equal distance the same device name; then the faster.
Candidates usable_candidates(const KernelDatabase& database, const DeviceIdentity& device, DescriptionScope& scope,
                             const SelectOptions& options) {
  const KernelDescription& description = database.description;
  const Problem& problem = scope.problem();
  const std::string arch = device.arch();
  const std::string major = arch_major_of(arch);
  int stale = 0, unusable = 0;
  std::string first_unusable;
  Candidates candidates;
  for (const DatabaseEntry& entry : database.entries) {
    bool same_arch = entry.arch == arch;
    if (!same_arch && (major.empty() || arch_major_of(entry.arch) != major)) continue;
    if (!options.use_stale_entries && !stale_reason(database, entry).empty()) {
      ++stale;
      continue;
    }
    double distance = problem_distance(problem, complete_problem(description, entry.problem));
    if (std::isinf(distance)) continue;
    std::string why = unusable_reason(scope, entry.configuration);
    if (!why.empty()) {
      if (unusable++ == 0) first_unusable = fmt::format("the entry of {} for {}: {}", entry.device_name,
                                                        problem_text(description, entry.problem), why);
      continue;
    }
    candidates.usable.push_back({&entry, distance, same_arch, entry.device_name == device.name});
  }
  std::sort(candidates.usable.begin(), candidates.usable.end(), [](const Candidate& a, const Candidate& b) {
    if (a.same_arch != b.same_arch) return a.same_arch;
    if (a.distance != b.distance) return a.distance < b.distance;
    if (a.same_name != b.same_name) return a.same_name;
    return a.entry->time.median_ms < b.entry->time.median_ms;
  });
  if (stale > 0) candidates.passed_over += fmt::format("; {} stale entr{} passed over", stale, stale == 1 ? "y" : "ies");
  if (unusable > 0)
    candidates.passed_over += fmt::format("; {} entr{} unusable here, e.g. {}", unusable, unusable == 1 ? "y" : "ies",
                                          first_unusable);
  return candidates;
}

// The rung of an entry: exact, same arch (nearest or any problem) or same major arch, with the reason.
Selection entry_selection(const KernelDescription& description, const DeviceIdentity& device, const std::string& wanted,
                          const Candidate& best, const SelectOptions& options) {
  const DatabaseEntry& entry = *best.entry;
  Selection selection;
  selection.entry = entry;
  selection.configuration = entry.configuration;
  selection.problem_distance = best.distance;
  const std::string tuned = problem_text(description, entry.problem);
  if (best.same_arch && best.same_name && best.distance == 0) {
    selection.rung = Rung::exact;
    selection.reason = fmt::format("tuned on this device ({}, {}) for this problem ({})", entry.device_name, entry.arch, tuned);
  } else if (best.same_arch) {
    selection.rung = best.distance <= options.nearest_problem_distance ? Rung::same_arch_nearest_problem
                                                                       : Rung::same_arch_any_problem;
    selection.reason = fmt::format("{} has no entry for {}; took the entry of {} ({}) for {}, problem distance {:.2f}",
                                   device.name, wanted, entry.device_name, entry.arch, tuned, best.distance);
  } else {
    selection.rung = Rung::same_major_arch;
    selection.reason = fmt::format("no entry for {}; took the entry of {} ({}) for {}, problem distance {:.2f}",
                                   device.arch(), entry.device_name, entry.arch, tuned, best.distance);
  }
  return selection;
}

// The first problem default whose condition holds at the problem on this device and whose configuration is usable
// there (unusable_reason, as for every rung); nullptr when none is. One whose condition holds but that is unusable
// (wgmma on sm_80), or whose condition cannot be evaluated here, is passed over and said so in passed_over.
const ProblemDefaultDescription* usable_problem_default(DescriptionScope& scope, std::string& passed_over) {
  const std::vector<ProblemDefaultDescription>& problem_defaults = scope.description().problem_defaults;
  for (std::size_t index = 0; index < problem_defaults.size(); ++index) {
    const ProblemDefaultDescription& problem_default = problem_defaults[index];
    bool holds = false;
    try {
      holds = expr::truthy(scope.problem_default_condition(index));
    } catch (const std::exception& error) {
      passed_over += fmt::format("; the space's default for {} cannot be checked here ({})", problem_default.when,
                                 error.what());
      continue;
    }
    if (!holds) continue;
    const std::string why = unusable_reason(scope, problem_default.configuration);
    if (why.empty()) return &problem_default;
    passed_over += fmt::format("; the space's default for {} passed over: {}", problem_default.when, why);
  }
  return nullptr;
}

}  // namespace

std::string unusable_reason(const KernelDescription& description, const DeviceIdentity& device, const Problem& problem,
                            const ConfigurationValues& configuration) {
  DescriptionScope scope(description, device, problem);
  return unusable_reason(scope, configuration);
}

const char* rung_name(Rung rung) {
  switch (rung) {
    case Rung::exact: return "exact";
    case Rung::same_arch_nearest_problem: return "same arch, nearest problem";
    case Rung::same_arch_any_problem: return "same arch, any problem";
    case Rung::same_major_arch: return "same major arch";
    case Rung::problem_default: return "the space's default for this problem";
    case Rung::default_configuration: return "default configuration";
    case Rung::none: return "no usable configuration";
  }
  return "?";
}

std::string problem_text(const KernelDescription& description, const Problem& problem) {
  std::string text;
  auto append = [&](const std::string& name, std::int64_t value) {
    if (!text.empty()) text += ",";
    text += fmt::format("{}={}", name, value);
  };
  for (const auto& [name, unused] : description.problem) {
    if (auto found = problem.find(name); found != problem.end()) append(name, found->second);
  }
  for (const auto& [name, value] : problem) {
    bool declared = std::any_of(description.problem.begin(), description.problem.end(),
                                // An init-capture: clang before 16 cannot capture a structured binding.
                                [&key = name](const auto& symbol) { return symbol.first == key; });
    if (!declared) append(name, value);
  }
  return text;
}

Problem parse_problem_text(const std::string& text) {
  Problem problem;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    auto equals = part.find('=');
    if (equals == std::string::npos || equals == 0) throw DatabaseError(fmt::format("problem '{}': '{}' is not NAME=VALUE", text, part));
    std::string value_text = part.substr(equals + 1);
    std::size_t used = 0;
    std::int64_t value = 0;
    try {
      value = std::stoll(value_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value_text.size()) throw DatabaseError(fmt::format("problem '{}': '{}' is not an integer", text, value_text));
    problem[part.substr(0, equals)] = value;
  }
  return problem;
}

KernelDatabase parse_database(const std::string& json_text, const std::string& origin) {
  json document;
  try {
    document = json::parse(json_text);
  } catch (const json::parse_error& error) {
    throw DatabaseError(fmt::format("{}: not valid JSON (at byte {}): {}", origin, error.byte, error.what()));
  } catch (const json::exception& error) {  // a number out of range (1e663) is out_of_range, not parse_error
    throw DatabaseError(fmt::format("{}: not valid JSON: {}", origin, error.what()));
  }
  try {
    const std::int64_t format = integer_field(document, "format", 1);
    if (format > database_format || format < 1) {
      throw DatabaseError(fmt::format("{}: format {}, this build of kernlathe reads formats 1 to {}", origin, format,
                                      database_format));
    }
    KernelDatabase database;
    database.kernel = document.at("kernel").get<std::string>();
    if (format >= 2) database.description = description_from_json(document.at("description"));
    for (const auto& entry : document.at("entries")) database.entries.push_back(entry_from_json(entry, format));
    return database;
  } catch (const DatabaseError& error) {
    throw DatabaseError(fmt::format("{}: {}", origin, error.what()));
  } catch (const json::exception& error) {
    throw DatabaseError(fmt::format("{}: {}", origin, error.what()));
  }
}

KernelDatabase read_database(const std::filesystem::path& file) {
  std::ifstream input(file, std::ios::binary);
  if (!input) throw DatabaseError(fmt::format("{}: cannot be read", file.string()));
  std::stringstream contents;
  contents << input.rdbuf();
  return parse_database(contents.str(), file.string());
}

std::string database_json(const KernelDatabase& database) {
  std::vector<DatabaseEntry> entries = database.entries;
  std::stable_sort(entries.begin(), entries.end(), [&](const DatabaseEntry& a, const DatabaseEntry& b) {
    return std::tie(a.arch, a.device_name) < std::tie(b.arch, b.device_name) ||
           (std::tie(a.arch, a.device_name) == std::tie(b.arch, b.device_name) && a.problem < b.problem);
  });
  json list = json::array();
  for (const auto& entry : entries) list.push_back(entry_to_json(database.description, entry));
  json document{{"format", database_format},
                {"kernel", database.kernel},
                {"description", description_to_json(database.description)},
                {"entries", list}};
  return document.dump(2) + "\n";
}

std::string stale_reason(const KernelDatabase& database, const DatabaseEntry& entry) {
  if (entry.tool_version == "format 1")
    return "stored in format 1, before the hash covered the files the template includes";
  if (database.description.spec_hash.empty()) return "the database has no kernel description";
  if (entry.spec_hash != database.description.spec_hash)
    return fmt::format("measured against spec hash {}, the kernel is now {}", entry.spec_hash, database.description.spec_hash);
  return "";
}

Problem complete_problem(const KernelDescription& description, const Problem& requested) {
  Problem problem = requested;
  for (const auto& [name, value] : description.problem) problem.try_emplace(name, value);
  return problem;
}

Selection select(const KernelDatabase& database, const DeviceIdentity& device, const Problem& requested,
                 const SelectOptions& options) {
  DescriptionScope scope(database.description, device, requested);
  return select(database, device, scope, options);
}

Selection select(const KernelDatabase& database, const DeviceIdentity& device, DescriptionScope& scope,
                 const SelectOptions& options) {
  const KernelDescription& description = database.description;
  if (&scope.description() != &description)
    throw std::invalid_argument(fmt::format("{}: select() over a scope of another description", database.kernel));
  const Problem& problem = scope.problem();
  const std::string arch = device.arch();
  const std::string wanted = problem_text(description, problem);
  const std::string origin = description.default_origin.empty() ? "of the spec" : description.default_origin;

  Candidates candidates = usable_candidates(database, device, scope, options);
  std::string passed_over = std::move(candidates.passed_over);
  const Candidate* best = candidates.usable.empty() ? nullptr : &candidates.usable.front();
  if (best != nullptr && best->same_arch && best->distance <= options.nearest_problem_distance) {
    Selection selection = entry_selection(description, device, wanted, *best, options);
    selection.reason += passed_over;
    return selection;
  }
  // No entry is near: the space's default for this kind of problem goes before an entry of a far problem or of another
  // arch (a 16-row decode GEMM: 0.55-0.83 of cuBLAS against 0.41-0.61 with the 4096-row winner, database.h).
  if (const ProblemDefaultDescription* taken = usable_problem_default(scope, passed_over)) {
    Selection selection;
    selection.rung = Rung::problem_default;
    selection.configuration = taken->configuration;
    const std::string preferred_to =
        best != nullptr ? fmt::format("the entry of {} ({}) for {}, problem distance {:.2f}", best->entry->device_name,
                                      best->entry->arch, problem_text(description, best->entry->problem), best->distance)
                        : fmt::format("the default configuration ({})", origin);
    selection.reason = fmt::format("no usable entry of {} within problem distance {:.2f} of {}; took the space's "
                                   "default for this problem ({} holds), preferred to {}{}",
                                   arch, options.nearest_problem_distance, wanted, taken->when, preferred_to,
                                   passed_over);
    return selection;
  }
  if (best != nullptr) {
    Selection selection = entry_selection(description, device, wanted, *best, options);
    selection.reason += passed_over;
    return selection;
  }
  // The last rung is checked like every other: launching defaults that break a constraint is a wrong answer, or
  // an out-of-range grid (issue 30, measured on an H200 with a bf16 GEMM at M=1000 and M=16).
  Selection selection;
  if (std::string why = unusable_reason(scope, description.default_configuration); !why.empty()) {
    selection.rung = Rung::none;
    selection.reason = fmt::format("no usable configuration for {} ({}) at {}: the default configuration ({}): {}{}",
                                   device.name, arch, wanted, origin, why, passed_over);
    return selection;
  }
  selection.rung = Rung::default_configuration;
  selection.configuration = description.default_configuration;
  selection.reason = fmt::format("no usable entry for {} ({}) at {}; took the default configuration ({}){}", device.name,
                                 arch, wanted, origin, passed_over);
  return selection;
}

}  // namespace kernlathe
