#include "tuner/analysis/t4_export.h"

#include <cctype>
#include <cmath>
#include <ctime>
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/search/t4_dataset.h"
#include "tuner/spec/t1_reader.h"

namespace kernlathe {

namespace {

using Json = nlohmann::ordered_json;

Json value_json(const Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return *integer;
  if (const auto* real = std::get_if<double>(&value)) return *real;
  if (const auto* flag = std::get_if<bool>(&value)) return *flag;
  return std::get<std::string>(value);
}

std::string invalidity_of(Status status) {
  switch (status) {
    case Status::ok: return "correct";
    case Status::compile_error: return "compile";
    case Status::resources_exceeded:  // beyond the device's limits: the launch cannot run
    case Status::launch_error:
    case Status::crashed: return "runtime";
    case Status::wrong_result: return "correctness";
    case Status::timeout: return "timeout";
    case Status::invalid: return "constraints";
  }
  return "runtime";
}

// "2026-11-24 00:56:52.123456+00:00", as the community files write UTC times.
std::string utc_text(double seconds_since_epoch) {
  if (!(seconds_since_epoch > 0)) return "";
  std::time_t whole = static_cast<std::time_t>(seconds_since_epoch);
  std::tm utc{};
  gmtime_r(&whole, &utc);
  int micros = static_cast<int>(std::lround((seconds_since_epoch - static_cast<double>(whole)) * 1e6));
  if (micros >= 1000000) micros = 999999;
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}+00:00", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec, micros);
}

std::string file_safe(std::string text) {
  for (char& c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) c = '_';
  return text;
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream output(file, std::ios::binary | std::ios::trunc);
  output << text;
  if (!output) throw TunerError(fmt::format("{}: cannot be written", file.string()));
}

}  // namespace

Json t4_document(const Recording& recording) {
  Json results = Json::array();
  for (const Evaluation& evaluation : recording.evaluations) {
    Json configuration = Json::object();
    for (std::size_t index = 0; index < recording.parameters.size() && index < evaluation.configuration.size(); ++index)
      configuration[recording.parameters[index].name] = value_json(evaluation.configuration[index]);
    const bool correct = is_valid_measurement(evaluation);
    Json result;
    result["timestamp"] = utc_text(evaluation.timestamp);
    result["configuration"] = std::move(configuration);
    result["times"] = Json{{"compilation", evaluation.compile_ms}};
    result["invalidity"] = correct ? "correct" : invalidity_of(evaluation.status == Status::ok ? Status::invalid : evaluation.status);
    result["correctness"] = correct ? 1 : 0;
    Json measurements = Json::array();
    if (correct) {
      const TimeStatistics& time = evaluation.time;
      measurements.push_back(Json{{"name", "time"}, {"value", time.median_ms}, {"unit", "ms"}});
      measurements.push_back(Json{{"name", "time_min"}, {"value", time.min_ms}, {"unit", "ms"}});
      measurements.push_back(Json{{"name", "time_max"}, {"value", time.max_ms}, {"unit", "ms"}});
      measurements.push_back(Json{{"name", "relative_spread"}, {"value", time.relative_spread}, {"unit", ""}});
      measurements.push_back(Json{{"name", "samples"}, {"value", time.samples}, {"unit", ""}});
    }
    result["measurements"] = std::move(measurements);
    result["objectives"] = Json::array({"time"});
    if (!correct && !evaluation.message.empty()) result["message"] = evaluation.message;
    results.push_back(std::move(result));
  }
  Json metadata{{"timeunit", "milliseconds"},
                {"objective_direction", "minimize"},
                {"kernel", recording.kernel},
                {"device", recording.device},
                {"arch", recording.arch},
                {"problem", recording.problem},
                {"source", recording.source.string()},
                {"tool", fmt::format("kernlathe {}", KERNLATHE_VERSION)}};
  return Json{{"schema_version", "1.0.0"}, {"metadata", std::move(metadata)}, {"results", std::move(results)}};
}

namespace {

// text with every identifier that replacements names written as its replacement in parentheses; quoted strings and
// numbers are left as they are.
std::string replace_names(const std::string& text, const std::map<std::string, std::string>& replacements) {
  auto identifier_character = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string result;
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at];
    std::size_t end = at + 1;
    if (c == '\'' || c == '"') {
      end = text.find(c, at + 1);
      end = end == std::string::npos ? text.size() : end + 1;
    } else if (identifier_character(c)) {
      while (end < text.size() && (identifier_character(text[end]) || (std::isdigit(static_cast<unsigned char>(c)) && text[end] == '.')))
        ++end;
      const auto found = replacements.find(text.substr(at, end - at));
      if (!std::isdigit(static_cast<unsigned char>(c)) && found != replacements.end()) {
        result += "(" + found->second + ")";
        at = end;
        continue;
      }
    }
    result += text.substr(at, end - at);
    at = end;
  }
  return result;
}

// The values T1 conditions cannot name: the recording's problem symbols ("N=4096,M=64") and the properties of its
// device (its board's where known, else its arch's profile), as Python literals. Says in `device` what stood in.
std::map<std::string, std::string> recorded_constants(const Recording& recording, std::string& device) {
  std::map<std::string, std::string> constants;
  std::optional<DeviceProperties> properties;
  for (const std::string& board : known_device_names())
    if (board == recording.device) properties = named_device_profile(board);
  if (!properties && !recording.arch.empty()) {
    try {
      properties = device_profile(recording.arch);
    } catch (const InputError&) {
    }
  }
  if (properties) {
    device = properties->name;
    for (const auto& [name, value] : device_property_values(*properties)) constants[name] = python_literal(value);
  }
  std::stringstream problem(recording.problem);
  for (std::string assignment; std::getline(problem, assignment, ',');) {
    const std::size_t equals = assignment.find('=');
    if (equals != std::string::npos) constants[assignment.substr(0, equals)] = assignment.substr(equals + 1);
  }
  return constants;
}

// The recorded constraints as T1 Conditions over tuning parameters alone: derived values written out, problem
// symbols and device properties replaced by their recorded values. A constraint that still reads another name (a
// device property of an unknown device) is left out and counted in skipped; one that reads no parameter held for
// the recording (its configurations ran) and is left out too.
Json t1_conditions(const Recording& recording, std::string& device, int& skipped) {
  std::map<std::string, std::string> replacements = recorded_constants(recording, device);
  for (const auto& [name, expression] : recording.derived) replacements[name] = replace_names(expression, replacements);
  std::set<std::string> parameters;
  for (const Parameter& parameter : recording.parameters) parameters.insert(parameter.name);
  Json conditions = Json::array();
  for (const std::string& constraint : recording.constraints) {
    const std::string text = replace_names(constraint, replacements);
    std::vector<std::string> names;
    try {
      names = Expression::parse(text).names();
    } catch (const InputError&) {
      ++skipped;
      continue;
    }
    if (std::any_of(names.begin(), names.end(), [&](const std::string& name) { return !parameters.contains(name); })) {
      ++skipped;
      continue;
    }
    if (!names.empty()) conditions.push_back(Json{{"Parameters", names}, {"Expression", text}});
  }
  return conditions;
}

std::string t1_notes(const Recording& recording, const std::string& device, int skipped) {
  std::string notes = fmt::format("parameters of {} as recorded by kernlathe", recording.label());
  if (recording.constraints.empty() && !recording.declared_defaults)
    return notes + "; the record predates constraints and defaults in run.json, so Conditions is empty and each "
                   "Default is the parameter's first value";
  notes += fmt::format("; Conditions are the space's constraints with its derived values written out and the problem "
                       "{} and the properties of {} in place of their names",
                       recording.problem, device.empty() ? "an unknown device" : device);
  if (skipped > 0) notes += fmt::format("; {} constraints read names no value was recorded for and are left out", skipped);
  return notes;
}

}  // namespace

Json t1_document(const Recording& recording) {
  Json parameters = Json::array();
  for (const Parameter& parameter : recording.parameters) {
    // The schema writes Values as a Python list in a string, as published files do.
    std::vector<std::string> literals;
    for (const Value& value : parameter.values) literals.push_back(python_literal(value));
    const std::string values = fmt::format("[{}]", fmt::join(literals, ", "));
    const char* type = parameter.type == ParameterType::integer ? "int"
                       : parameter.type == ParameterType::boolean ? "bool"
                                                                  : "string";
    parameters.push_back(Json{{"Name", parameter.name}, {"Type", type}, {"Values", values},
                              {"Default", value_json(parameter.default_value)}});
  }
  std::string device;
  int skipped = 0;
  Json conditions = t1_conditions(recording, device, skipped);
  return Json{{"General",
               {{"BenchmarkName", recording.kernel},
                {"OutputFormat", "JSON"},
                {"Notes", t1_notes(recording, device, skipped)}}},
              {"ConfigurationSpace", {{"TuningParameters", std::move(parameters)}, {"Conditions", std::move(conditions)}}}};
}


T4Files write_t4_files(const Recording& recording, const std::filesystem::path& directory) {
  Json t4 = t4_document(recording);
  std::vector<std::string> problems = t4_problems(nlohmann::json::parse(t4.dump()));
  if (!problems.empty()) {
    std::string listed;
    for (const std::string& line : problems) listed += "\n  " + line;
    throw TunerError(fmt::format("{}: the T4 document written is not valid:{}", recording.label(), listed));
  }
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) throw TunerError(fmt::format("{}: cannot be created: {}", directory.string(), error.message()));
  T4Files files;
  // Recordings of one kernel at several problems on one GPU keep apart by the problem in the name.
  std::string name = file_safe(recording.kernel) + "-" + file_safe(recording.device);
  if (!recording.problem.empty()) name += "-" + file_safe(recording.problem);
  files.t4 = directory / (name + ".T4.json");
  files.t1 = default_t1_for(files.t4);
  // Recorded messages are the compiler's and the driver's text: bytes that are not UTF-8 are replaced.
  write_text(files.t4, t4.dump(1, ' ', false, Json::error_handler_t::replace) + "\n");
  write_text(files.t1, t1_document(recording).dump(1, ' ', false, Json::error_handler_t::replace) + "\n");
  return files;
}

}  // namespace kernlathe
