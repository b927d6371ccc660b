#include "tuner/search/t4_dataset.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

namespace kernlathe {
namespace {

using Json = nlohmann::json;

// gzread reads plain files unchanged, so one path serves both .json and .json.gz.
std::string read_maybe_gzipped(const std::filesystem::path& file) {
  gzFile handle = gzopen(file.c_str(), "rb");
  if (handle == nullptr) throw InputError(fmt::format("{}: cannot open the file", file.string()));
  std::string text;
  char buffer[1 << 16];
  int read = 0;
  while ((read = gzread(handle, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(read));
  const bool failed = read < 0;
  gzclose(handle);
  if (failed) throw InputError(fmt::format("{}: the file is not valid gzip data", file.string()));
  return text;
}

Json parse_json(const std::filesystem::path& file) {
  try {
    return Json::parse(read_maybe_gzipped(file));
  } catch (const Json::parse_error& error) {
    throw InputError(fmt::format("{}: not valid JSON: {}", file.string(), error.what()));
  }
}

// A configuration's value as the space holds it: integers and booleans typed, other parameters by their printed
// value (Python's repr, as the T1 reader prints the Values it evaluates).
Value parameter_value(const Parameter& parameter, const Json& value) {
  if (parameter.type == ParameterType::integer && value.is_number_integer()) return Value{value.get<std::int64_t>()};
  if (parameter.type == ParameterType::boolean) {
    if (value.is_boolean()) return Value{value.get<bool>()};
    if (value.is_number_integer() && (value.get<std::int64_t>() == 0 || value.get<std::int64_t>() == 1))
      return Value{value.get<std::int64_t>() == 1};
  }
  if (value.is_string()) return Value{value.get<std::string>()};
  if (value.is_number_integer()) return Value{python_literal(Value{value.get<std::int64_t>()})};
  if (value.is_number()) return Value{python_literal(Value{value.get<double>()})};
  if (value.is_boolean()) return Value{python_literal(Value{value.get<bool>()})};
  return Value{value.dump()};
}

Status failure_status(const std::string& invalidity) {
  if (invalidity == "compile") return Status::compile_error;
  if (invalidity == "runtime") return Status::launch_error;
  if (invalidity == "correctness") return Status::wrong_result;
  if (invalidity == "timeout") return Status::timeout;
  return Status::invalid;
}

// Milliseconds per unit of metadata.timeunit ("miliseconds" is how published files spell it).
double milliseconds_per(const Json& document, const std::filesystem::path& file) {
  if (!document.contains("metadata") || !document["metadata"].is_object() || !document["metadata"].contains("timeunit"))
    return 1.0;
  const Json& unit_json = document["metadata"]["timeunit"];
  std::string unit = unit_json.is_string() ? unit_json.get<std::string>() : unit_json.dump();
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  if (unit == "milliseconds" || unit == "miliseconds" || unit == "ms") return 1.0;
  if (unit == "seconds" || unit == "s") return 1e3;
  if (unit == "microseconds" || unit == "us") return 1e-3;
  if (unit == "nanoseconds" || unit == "ns") return 1e-6;
  throw InputError(
      fmt::format("{}: metadata.timeunit '{}' is not one of seconds, milliseconds, microseconds, "
                  "nanoseconds",
                  file.string(), unit));
}

// The objective the results declare: the one name every result's "objectives" lists, or options.objective.
std::string declared_objective(const Json& results, const T4ReadOptions& options, const std::filesystem::path& file) {
  std::set<std::string> declared;
  std::size_t position = 0;
  for (const Json& result : results) {
    ++position;
    if (!result.contains("objectives")) continue;
    if (!result["objectives"].is_array())
      throw InputError(fmt::format("{}: results[{}].objectives is not an array", file.string(), position - 1));
    for (const Json& name : result["objectives"])
      if (name.is_string()) declared.insert(name.get<std::string>());
  }
  if (!options.objective.empty()) {
    if (!declared.empty() && !declared.contains(options.objective))
      throw InputError(fmt::format("{}: --t4-objective {}: the file's objectives are {}", file.string(),
                                   options.objective, fmt::join(declared, ", ")));
    return options.objective;
  }
  if (declared.empty())
    throw InputError(
        fmt::format("{}: no result declares its objective (\"objectives\"); name the measurement to "
                    "use with --t4-objective NAME",
                    file.string()));
  if (declared.size() > 1)
    throw InputError(fmt::format("{}: the results declare several objectives ({}); pick one with --t4-objective NAME",
                                 file.string(), fmt::join(declared, ", ")));
  return *declared.begin();
}

// The direction: the caller's, the metadata's, or minimise for a time. nullopt-free: throws when none is known.
std::pair<ObjectiveDirection, std::string> objective_direction(const Json& document, const std::string& objective,
                                                               const T4ReadOptions& options,
                                                               const std::filesystem::path& file) {
  if (options.direction) return {*options.direction, "the caller"};
  if (document.contains("metadata") && document["metadata"].is_object()) {
    const Json& metadata = document["metadata"];
    if (metadata.contains("objective_direction")) {
      const Json& declared = metadata["objective_direction"];
      std::optional<ObjectiveDirection> direction =
          declared.is_string() ? parse_objective_direction(declared.get<std::string>()) : std::nullopt;
      if (!direction)
        throw InputError(fmt::format("{}: metadata.objective_direction {} is neither \"minimize\" nor \"maximize\"",
                                     file.string(), declared.dump()));
      return {*direction, "the file's metadata"};
    }
    if (metadata.contains("objective_higher_is_better")) {
      const Json& declared = metadata["objective_higher_is_better"];
      if (!declared.is_boolean())
        throw InputError(fmt::format("{}: metadata.objective_higher_is_better {} is not true or false", file.string(),
                                     declared.dump()));
      return {declared.get<bool>() ? ObjectiveDirection::maximize : ObjectiveDirection::minimize,
              "the file's metadata"};
    }
  }
  if (objective == "time") return {ObjectiveDirection::minimize, "a time objective"};
  throw InputError(
      fmt::format("{}: the objective is '{}' and the file does not say whether to minimize or maximize "
                  "it (the T4 schema has no field for it; metadata.objective_direction would say); pass "
                  "--t4-direction maximize or --t4-direction minimize",
                  file.string(), objective));
}

double median_of_sorted(const std::vector<double>& sorted) {
  const std::size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

}  // namespace

std::vector<std::string> t4_problems(const nlohmann::json& document) {
  std::vector<std::string> problems;
  auto problem = [&](std::string text) { problems.push_back(std::move(text)); };
  if (!document.is_object()) return {"the document is not a JSON object"};
  // The schema does not require schema_version (every published file and `tune t4` write it); when present it is
  // major.minor.patch.
  if (document.contains("schema_version") && !document["schema_version"].is_string()) {
    problem("schema_version: not a string");
  } else if (document.contains("schema_version")) {
    const std::string version = document["schema_version"].get<std::string>();
    int major = 0, minor = 0, patch = 0;
    char rest = 0;
    if (std::sscanf(version.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &rest) != 3)
      problem(fmt::format("schema_version: '{}' is not major.minor.patch", version));
  }
  if (!document.contains("results") || !document["results"].is_array()) {
    problem("results: missing or not an array");
    return problems;
  }
  static const std::set<std::string> invalidities{"correct",     "compile", "runtime",
                                                  "correctness", "timeout", "constraints"};
  std::size_t index = 0;
  for (const auto& result : document["results"]) {
    const std::string where = fmt::format("results[{}]", index++);
    if (!result.is_object()) {
      problem(where + ": not an object");
      continue;
    }
    for (const char* required : {"configuration", "times", "invalidity", "correctness"})
      if (!result.contains(required)) problem(fmt::format("{}: no \"{}\"", where, required));
    if (result.contains("configuration") && !result["configuration"].is_object())
      problem(where + ".configuration: not an object");
    if (result.contains("timestamp") && !result["timestamp"].is_string()) problem(where + ".timestamp: not a string");
    if (result.contains("times")) {
      const auto& times = result["times"];
      if (!times.is_object()) {
        problem(where + ".times: not an object");
      } else {
        for (const auto& [key, value] : times.items()) {
          if (key == "runtimes") {
            if (!value.is_array())
              problem(where + ".times.runtimes: not an array");
            else
              for (const auto& runtime : value)
                if (!runtime.is_number()) problem(where + ".times.runtimes: holds a value that is not a number");
          } else if (!value.is_number()) {
            problem(fmt::format("{}.times.{}: not a number", where, key));
          }
        }
      }
    }
    if (result.contains("invalidity") &&
        (!result["invalidity"].is_string() || !invalidities.count(result["invalidity"].get<std::string>())))
      problem(fmt::format("{}.invalidity: {} is none of correct, compile, runtime, correctness, timeout, constraints",
                          where, result["invalidity"].dump()));
    if (result.contains("correctness") && !result["correctness"].is_number())
      problem(where + ".correctness: not a number");
    if (result.contains("objectives") && !result["objectives"].is_array()) problem(where + ".objectives: not an array");
    if (result.contains("measurements")) {
      if (!result["measurements"].is_array()) {
        problem(where + ".measurements: not an array");
      } else {
        std::size_t position = 0;
        for (const auto& measurement : result["measurements"]) {
          const std::string at = fmt::format("{}.measurements[{}]", where, position++);
          if (!measurement.is_object()) {
            problem(at + ": not an object");
            continue;
          }
          if (measurement.contains("name") && !measurement["name"].is_string()) problem(at + ".name: not a string");
          // The community's files name the failure in place of the value of a failed result ("RuntimeFailedConfig").
          const bool failed = result.contains("invalidity") && result["invalidity"] != "correct";
          if (measurement.contains("value") && !measurement["value"].is_number() &&
              !(failed && measurement["value"].is_string()))
            problem(at + ".value: not a number");
          if (measurement.contains("unit") && !measurement["unit"].is_string()) problem(at + ".unit: not a string");
        }
      }
    }
  }
  return problems;
}

std::optional<ObjectiveDirection> parse_objective_direction(std::string_view text) {
  if (text == "minimize" || text == "minimise" || text == "min") return ObjectiveDirection::minimize;
  if (text == "maximize" || text == "maximise" || text == "max") return ObjectiveDirection::maximize;
  return std::nullopt;
}

std::optional<ObjectiveSource> parse_objective_source(std::string_view text) {
  if (text == "recorded") return ObjectiveSource::recorded;
  if (text == "median") return ObjectiveSource::median;
  return std::nullopt;
}

std::string_view objective_direction_name(ObjectiveDirection direction) {
  return direction == ObjectiveDirection::minimize ? "minimize" : "maximize";
}

T4Results read_t4(const std::filesystem::path& t4_file, const Space& space, const T4ReadOptions& options) {
  const Json document = parse_json(t4_file);
  if (!document.is_object() || !document.contains("results") || !document["results"].is_array())
    throw InputError(fmt::format("{}: no \"results\" array; is this a T4 file?", t4_file.string()));
  if (const std::vector<std::string> problems = t4_problems(document); !problems.empty()) {
    constexpr std::size_t shown = 8;
    std::string listing =
        fmt::format("{}", fmt::join(problems.begin(), problems.begin() + std::min(shown, problems.size()), "; "));
    if (problems.size() > shown) listing += fmt::format("; and {} more", problems.size() - shown);
    throw InputError(fmt::format("{}: not a T4 file by the published schema: {}", t4_file.string(), listing));
  }
  const Json& results = document["results"];
  T4Results read;
  T4Objective& objective = read.objective;
  objective.name = declared_objective(results, options, t4_file);
  std::tie(objective.direction, objective.direction_from) =
      objective_direction(document, objective.name, options, t4_file);
  objective.is_time = objective.name == "time";
  objective.source = options.source;
  if (options.source == ObjectiveSource::median && !objective.is_time)
    throw InputError(
        fmt::format("{}: --t4-objective-source median takes the median of the runtimes, which only "
                    "stands for a time objective; this file's objective is '{}'",
                    t4_file.string(), objective.name));
  const double to_milliseconds = milliseconds_per(document, t4_file);

  read.evaluations.reserve(results.size());
  std::size_t position = 0;
  for (const Json& result : results) {
    const std::size_t index = position++;
    if (!result.is_object() || !result.contains("configuration") || !result["configuration"].is_object())
      throw InputError(fmt::format("{}: results[{}] has no \"configuration\" object", t4_file.string(), index));
    const Json& configuration = result["configuration"];
    Evaluation evaluation;
    for (const Parameter& parameter : space.parameters) {
      if (!configuration.contains(parameter.name))
        throw InputError(
            fmt::format("{}: results[{}] has no value for parameter '{}'", t4_file.string(), index, parameter.name));
      evaluation.configuration.push_back(parameter_value(parameter, configuration[parameter.name]));
    }
    const Json times = result.value("times", Json::object());
    if (times.is_object() && times.contains("compilation") && times["compilation"].is_number())
      evaluation.compile_ms = times["compilation"].get<double>() * to_milliseconds;

    std::vector<double> runtimes;
    if (times.is_object() && times.contains("runtimes") && times["runtimes"].is_array())
      for (const Json& runtime : times["runtimes"])
        if (runtime.is_number()) runtimes.push_back(runtime.get<double>() * to_milliseconds);
    std::sort(runtimes.begin(), runtimes.end());
    std::optional<double> recorded;
    for (const Json& measurement : result.value("measurements", Json::array()))
      if (measurement.is_object() && measurement.value("name", "") == objective.name && measurement.contains("value") &&
          measurement["value"].is_number())
        recorded = measurement["value"].get<double>() * (objective.is_time ? to_milliseconds : 1.0);

    const Json invalidity_json = result.value("invalidity", Json("correct"));
    const std::string invalidity =
        invalidity_json.is_string() ? invalidity_json.get<std::string>() : invalidity_json.dump();
    std::optional<double> value = recorded;
    if (options.source == ObjectiveSource::median)
      value = runtimes.empty() ? std::nullopt : std::optional(median_of_sorted(runtimes));
    if (invalidity != "correct" || !value) {
      evaluation.status = invalidity == "correct" ? Status::invalid : failure_status(invalidity);
      evaluation.message =
          invalidity == "correct"
              ? (options.source == ObjectiveSource::median
                     ? std::string("recorded as correct, but without runtimes")
                     : fmt::format("recorded as correct, but without a numeric '{}' measurement", objective.name))
              : fmt::format("recorded as failed: {}", invalidity);
      read.evaluations.push_back(std::move(evaluation));
      continue;
    }
    if (!std::isfinite(*value) || *value <= 0)
      throw InputError(
          fmt::format("{}: results[{}] records objective '{}' = {}; replay compares best/optimum ratios, "
                      "which need positive values, so this objective is not usable",
                      t4_file.string(), index, objective.name, *value));
    if (!objective.best_value || (objective.direction == ObjectiveDirection::minimize ? *value < *objective.best_value
                                                                                      : *value > *objective.best_value))
      objective.best_value = *value;
    const double cost = objective.direction == ObjectiveDirection::minimize ? *value : 1.0 / *value;
    evaluation.time.median_ms = cost;
    evaluation.time.min_ms = evaluation.time.max_ms = cost;
    evaluation.time.samples = 1;
    if (objective.is_time && !runtimes.empty()) {
      const std::size_t n = runtimes.size();
      evaluation.time.min_ms = runtimes.front();
      evaluation.time.max_ms = runtimes.back();
      evaluation.time.relative_spread = (runtimes[3 * n / 4] - runtimes[n / 4]) / cost;
      evaluation.time.samples = static_cast<int>(n);
    }
    read.evaluations.push_back(std::move(evaluation));
  }
  if (!objective.best_value && !read.evaluations.empty()) {
    throw InputError(
        fmt::format("{}: no result has a usable value of objective '{}' (every result failed or has no "
                    "{})",
                    t4_file.string(), objective.name,
                    options.source == ObjectiveSource::median ? "runtimes" : "numeric measurement of that name"));
  }
  return read;
}

std::vector<Evaluation> read_t4_results(const std::filesystem::path& t4_file, const Space& space,
                                        const T4ReadOptions& options) {
  return read_t4(t4_file, space, options).evaluations;
}

std::filesystem::path default_t1_for(const std::filesystem::path& t4_file) {
  const std::string name = t4_file.filename().string();
  const std::string stem = name.substr(0, name.find_first_of("-."));
  return t4_file.parent_path() / (stem + ".T1.json");
}

std::vector<std::filesystem::path> t1_candidates_for(const std::filesystem::path& t4_file) {
  std::vector<std::filesystem::path> candidates{default_t1_for(t4_file)};
  const std::filesystem::path folder = std::filesystem::absolute(t4_file).lexically_normal().parent_path();
  const std::string benchmark = folder.filename().string();
  if (benchmark.empty()) return candidates;
  std::filesystem::path where = t4_file.parent_path().empty() ? std::filesystem::path(".") : t4_file.parent_path();
  // The folder, its parent and its grandparent, as written (relative stays relative in messages).
  for (int level = 0; level < 3; ++level) {
    for (const std::filesystem::path& directory : {where, where / "kernels"})
      for (const std::string& name : {benchmark + ".T1.json", benchmark + ".json"}) {
        const std::filesystem::path candidate = (directory / name).lexically_normal();
        if (std::find(candidates.begin(), candidates.end(), candidate) == candidates.end())
          candidates.push_back(candidate);
      }
    where /= "..";
  }
  return candidates;
}

std::filesystem::path find_t1_for(const std::filesystem::path& t4_file) {
  const std::vector<std::filesystem::path> candidates = t1_candidates_for(t4_file);
  std::error_code error;
  for (const std::filesystem::path& candidate : candidates)
    if (std::filesystem::is_regular_file(candidate, error)) return candidate;
  std::vector<std::string> tried;
  for (const std::filesystem::path& candidate : candidates) tried.push_back(candidate.string());
  throw InputError(fmt::format("{}: no T1 space file found for it; name it with --t1 FILE (tried {})",
                               t4_file.string(), fmt::join(tried, ", ")));
}

}  // namespace kernlathe
