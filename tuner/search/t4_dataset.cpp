#include "tuner/search/t4_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <optional>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

// Enumeration values are the JSON values as printed, so T1 and T4 agree on them whatever their JSON type.
std::string printed(const Json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

// T1 writes value lists either as JSON arrays or as Python list text ("[16, 32]", "['a', 'b']").
Json value_list(const Json& values, const std::filesystem::path& file, const std::string& name) {
  if (values.is_array()) return values;
  if (values.is_string()) {
    std::string text = values.get<std::string>();
    std::replace(text.begin(), text.end(), '\'', '"');
    Json parsed = Json::parse(text, nullptr, false);
    if (parsed.is_array()) return parsed;
  }
  throw InputError(fmt::format("{}: parameter '{}': Values is neither a list nor list text", file.string(), name));
}

Value parameter_value(const Parameter& parameter, const Json& value) {
  if (parameter.type == ParameterType::integer && value.is_number_integer()) return Value{value.get<std::int64_t>()};
  return Value{printed(value)};
}

Status failure_status(const std::string& invalidity) {
  if (invalidity == "compile") return Status::compile_error;
  if (invalidity == "runtime") return Status::launch_error;
  if (invalidity == "correctness") return Status::wrong_result;
  return Status::invalid;
}

}  // namespace

Space read_t1_space(const std::filesystem::path& t1_file) {
  const Json document = parse_json(t1_file);
  const Json* configuration_space = document.contains("ConfigurationSpace") ? &document["ConfigurationSpace"] : nullptr;
  if (configuration_space == nullptr || !configuration_space->contains("TuningParameters"))
    throw InputError(fmt::format("{}: no ConfigurationSpace.TuningParameters; is this a T1 file?", t1_file.string()));
  Space space;
  space.name = t1_file.filename().string();
  space.file = t1_file;
  for (const Json& entry : (*configuration_space)["TuningParameters"]) {
    Parameter parameter;
    parameter.name = entry.at("Name").get<std::string>();
    parameter.where.file = t1_file.string();
    const std::string type = entry.value("Type", "int");
    const Json values = value_list(entry.at("Values"), t1_file, parameter.name);
    const bool all_integers =
        std::all_of(values.begin(), values.end(), [](const Json& value) { return value.is_number_integer(); });
    parameter.type = type == "int" && all_integers ? ParameterType::integer : ParameterType::enumeration;
    for (const Json& value : values) parameter.values.push_back(parameter_value(parameter, value));
    if (parameter.values.empty())
      throw InputError(fmt::format("{}: parameter '{}' has no values", t1_file.string(), parameter.name));
    parameter.default_value = parameter.values.front();
    if (entry.contains("Default")) {
      Value declared = parameter_value(parameter, entry["Default"]);
      // A declared default outside the values is ignored rather than rejected: the space is still usable.
      if (std::any_of(parameter.values.begin(), parameter.values.end(),
                      [&](const Value& value) { return expr::operator_equal(value, declared); }))
        parameter.default_value = declared;
    }
    space.parameters.push_back(std::move(parameter));
  }
  if (configuration_space->contains("Conditions")) {
    int index = 0;
    for (const Json& condition : (*configuration_space)["Conditions"]) {
      SourceLocation where{fmt::format("{} (Conditions[{}])", t1_file.string(), index++), 0, 0};
      space.constraints.push_back(Constraint{Expression::parse(condition.at("Expression").get<std::string>(), where)});
    }
  }
  return space;
}

std::vector<Evaluation> read_t4_results(const std::filesystem::path& t4_file, const Space& space) {
  const Json document = parse_json(t4_file);
  if (!document.contains("results") || !document["results"].is_array())
    throw InputError(fmt::format("{}: no \"results\" array; is this a T4 file?", t4_file.string()));
  std::vector<Evaluation> evaluations;
  evaluations.reserve(document["results"].size());
  std::size_t position = 0;
  for (const Json& result : document["results"]) {
    ++position;
    const Json& configuration = result.at("configuration");
    Evaluation evaluation;
    for (const Parameter& parameter : space.parameters) {
      if (!configuration.contains(parameter.name))
        throw InputError(fmt::format("{}: result {} has no value for parameter '{}'", t4_file.string(), position,
                                     parameter.name));
      evaluation.configuration.push_back(parameter_value(parameter, configuration[parameter.name]));
    }
    const Json times = result.value("times", Json::object());
    if (times.contains("compilation") && times["compilation"].is_number())
      evaluation.compile_ms = times["compilation"].get<double>();

    std::vector<double> runtimes;
    if (times.contains("runtimes") && times["runtimes"].is_array())
      for (const Json& runtime : times["runtimes"])
        if (runtime.is_number()) runtimes.push_back(runtime.get<double>());
    std::optional<double> objective;
    for (const Json& measurement : result.value("measurements", Json::array()))
      if (measurement.value("name", "") == "time" && measurement.contains("value") && measurement["value"].is_number())
        objective = measurement["value"].get<double>();

    const std::string invalidity = result.value("invalidity", "correct");
    if (invalidity != "correct" || (runtimes.empty() && !objective)) {
      evaluation.status = invalidity == "correct" ? Status::invalid : failure_status(invalidity);
      evaluation.message = fmt::format("recorded as failed: {}", invalidity);
      evaluations.push_back(std::move(evaluation));
      continue;
    }
    if (!runtimes.empty()) {
      std::sort(runtimes.begin(), runtimes.end());
      const std::size_t n = runtimes.size();
      evaluation.time.median_ms = n % 2 == 1 ? runtimes[n / 2] : 0.5 * (runtimes[n / 2 - 1] + runtimes[n / 2]);
      evaluation.time.min_ms = runtimes.front();
      evaluation.time.max_ms = runtimes.back();
      evaluation.time.relative_spread =
          evaluation.time.median_ms > 0 ? (runtimes[3 * n / 4] - runtimes[n / 4]) / evaluation.time.median_ms : 0;
      evaluation.time.samples = static_cast<int>(n);
    } else {
      evaluation.time.median_ms = evaluation.time.min_ms = evaluation.time.max_ms = *objective;
      evaluation.time.samples = 1;
    }
    evaluations.push_back(std::move(evaluation));
  }
  return evaluations;
}

std::filesystem::path default_t1_for(const std::filesystem::path& t4_file) {
  const std::string name = t4_file.filename().string();
  const std::string stem = name.substr(0, name.find_first_of("-."));
  return t4_file.parent_path() / (stem + ".T1.json");
}

}  // namespace kernlathe
