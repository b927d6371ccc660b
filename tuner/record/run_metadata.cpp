#include "tuner/record/run_metadata.h"

#include <charconv>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace kernlathe {

namespace {

using nlohmann::json;

json metadata_to_json(const RunMetadata& metadata) {
  return json{
      {"kernel", metadata.kernel},
      {"spec_hash", metadata.spec_hash},
      {"gpu_name", metadata.gpu_name},
      {"arch", metadata.arch},
      {"driver_version", metadata.driver_version},
      {"nvrtc_version", metadata.nvrtc_version},
      {"project_version", metadata.project_version},
      {"build_commit", metadata.build_commit},
      {"problem", metadata.problem},
      {"strategy", metadata.strategy},
      {"started_at", metadata.started_at},
      {"extra", metadata.extra},
  };
}

RunMetadata metadata_from_json(const json& object) {
  auto text = [&](const char* key) { return object.contains(key) ? object.at(key).get<std::string>() : std::string(); };
  RunMetadata metadata;
  metadata.kernel = text("kernel");
  metadata.spec_hash = text("spec_hash");
  metadata.gpu_name = text("gpu_name");
  metadata.arch = text("arch");
  metadata.driver_version = text("driver_version");
  metadata.nvrtc_version = text("nvrtc_version");
  metadata.project_version = text("project_version");
  metadata.build_commit = text("build_commit");
  metadata.problem = text("problem");
  metadata.strategy = text("strategy");
  metadata.started_at = text("started_at");
  if (object.contains("extra")) metadata.extra = object.at("extra").get<std::map<std::string, std::string>>();
  return metadata;
}

std::string parameter_type_name(ParameterType type) {
  switch (type) {
    case ParameterType::integer: return "integer";
    case ParameterType::boolean: return "boolean";
    case ParameterType::enumeration: return "enumeration";
  }
  return "unknown";
}

json read_json_file(const std::filesystem::path& path) {
  std::ifstream input(path);
  if (!input) throw TunerError(fmt::format("{}: cannot open for reading", path.string()));
  std::stringstream contents;
  contents << input.rdbuf();
  try {
    return json::parse(contents.str());
  } catch (const json::parse_error& error) {
    throw InputError(SourceLocation{path.string()}, fmt::format("not valid JSON: {}", error.what()));
  }
}

}  // namespace

std::filesystem::path metadata_path(const std::filesystem::path& csv) {
  std::string stem = csv.stem().string();
  std::string name = stem == "evaluations" ? std::string("run.json") : stem + ".run.json";
  return csv.parent_path() / name;
}

namespace {

void write_document(const std::filesystem::path& path, const json& document) {
  std::filesystem::path temporary = path;
  temporary += fmt::format(".tmp{}", static_cast<long>(::getpid()));
  {
    std::ofstream output(temporary, std::ios::trunc);
    if (!output) throw TunerError(fmt::format("{}: cannot open for writing", temporary.string()));
    output << document.dump(2) << '\n';
    if (!output) throw TunerError(fmt::format("{}: write failed", temporary.string()));
  }
  std::filesystem::rename(temporary, path);
}

}  // namespace

void add_to_last_run(const std::filesystem::path& csv, const std::map<std::string, std::string>& extra) {
  const std::filesystem::path path = metadata_path(csv);
  read_run_metadata(csv);  // a file that cannot be read is reported, never replaced
  json document = std::filesystem::exists(path) ? read_json_file(path) : json::object();
  if (!document.contains("runs") || !document["runs"].is_array() || document["runs"].empty())
    throw TunerError(fmt::format("{}: no run to add to", path.string()));
  json& last = document["runs"].back();
  if (!last.contains("extra") || !last["extra"].is_object()) last["extra"] = json::object();
  for (const auto& [key, value] : extra) last["extra"][key] = value;
  write_document(path, document);
}

void append_run_metadata(const std::filesystem::path& csv, const Space& space, const RunMetadata& metadata) {
  std::filesystem::path path = metadata_path(csv);
  read_run_metadata(csv);  // a file that cannot be read is reported, never replaced
  json document = json::object();
  if (std::filesystem::exists(path)) document = read_json_file(path);
  document["records"] = csv.filename().string();
  json parameters = json::array();
  for (const Parameter& parameter : space.parameters) {
    json values = json::array();
    for (const Value& value : parameter.values) values.push_back(expr::to_string(value));
    parameters.push_back({{"name", parameter.name},
                          {"type", parameter_type_name(parameter.type)},
                          {"values", values},
                          {"default", expr::to_string(parameter.default_value)}});
  }
  document["parameters"] = parameters;
  // The space's rules as written, so that a record exported as T1 (tuner/analysis/t4_export.h) carries them.
  json derived = json::array();
  for (const DerivedValue& value : space.derived) derived.push_back({{"name", value.name}, {"expression", value.expression.text()}});
  document["derived"] = derived;
  json constraints = json::array();
  for (const Constraint& constraint : space.constraints) constraints.push_back(constraint.expression.text());
  document["constraints"] = constraints;
  if (!document.contains("runs") || !document["runs"].is_array()) document["runs"] = json::array();
  document["runs"].push_back(metadata_to_json(metadata));
  write_document(path, document);
}

std::vector<RunMetadata> read_run_metadata(const std::filesystem::path& csv) {
  std::filesystem::path path = metadata_path(csv);
  if (!std::filesystem::exists(path)) return {};
  json document = read_json_file(path);
  if (!document.is_object())
    throw InputError(SourceLocation{path.string()},
                     fmt::format("expected a JSON object, found {}", document.type_name()));
  std::vector<RunMetadata> runs;
  try {
    if (document.contains("runs")) {
      if (!document["runs"].is_array())
        throw InputError(SourceLocation{path.string()},
                         fmt::format("\"runs\" is {}, expected an array of runs", document["runs"].type_name()));
      for (const json& run : document.at("runs")) runs.push_back(metadata_from_json(run));
    }
  } catch (const json::exception& error) {
    throw InputError(SourceLocation{path.string()}, fmt::format("unexpected run metadata layout: {}", error.what()));
  }
  return runs;
}

std::optional<double> extra_number(const RunMetadata& run, const std::string& key, const std::filesystem::path& csv) {
  const auto found = run.extra.find(key);
  if (found == run.extra.end()) return std::nullopt;
  const std::string& text = found->second;
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw InputError(SourceLocation{metadata_path(csv).string()},
                     fmt::format("extra.{} is '{}', which is not a number", key, text));
  return value;
}

std::string iso8601_now() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace kernlathe
