#include "tuner/analysis/t4_export.h"

#include <cctype>
#include <cmath>
#include <ctime>
#include <fstream>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/search/t4_dataset.h"

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
  return Json{{"General",
               {{"BenchmarkName", recording.kernel},
                {"OutputFormat", "JSON"},
                {"Notes", fmt::format("parameters of {} as recorded by kernlathe; the spec's constraints are not part "
                                      "of a record, so Conditions is empty", recording.label())}}},
              {"ConfigurationSpace", {{"TuningParameters", std::move(parameters)}, {"Conditions", Json::array()}}}};
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
