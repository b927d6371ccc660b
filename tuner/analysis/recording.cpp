#include "tuner/analysis/recording.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"
#include "tuner/search/t4_dataset.h"

namespace kernlathe {
namespace {

using Json = nlohmann::json;

std::optional<std::int64_t> parse_integer(const std::string& text) {
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<bool> parse_boolean(const std::string& text) {
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  return std::nullopt;
}

// The first line of a record: its column names. Written by RecordWriter from parameter names and fixed measurement
// column names, none of which holds a comma or a quote, so the line splits on commas; the reader checks the header
// again against the space built from it.
std::vector<std::string> header_columns(const std::filesystem::path& csv) {
  std::ifstream input(csv);
  if (!input) throw InputError(SourceLocation{csv.string()}, "cannot open the record file for reading");
  std::string line;
  if (!std::getline(input, line) || line.empty() || line == "\r")
    throw InputError(SourceLocation{csv.string(), 1}, "the record is empty: no header, no rows");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::vector<std::string> columns;
  std::stringstream fields(line);
  std::string field;
  while (std::getline(fields, field, ',')) columns.push_back(field);
  const auto status = std::find(columns.begin(), columns.end(), "status");
  if (columns.empty() || columns.front() != "hash" || status == columns.end())
    throw InputError(SourceLocation{csv.string(), 1},
                     "not a record of `tune run`: the header must start with 'hash' and hold a 'status' column");
  return columns;
}

// run.json's "parameters": name -> (type, values as text), written by append_run_metadata.
struct DeclaredParameter {
  ParameterType type = ParameterType::enumeration;
  std::vector<std::string> values;
  std::optional<std::string> default_text;  // absent in records written before issue 36
};

// run.json's space: its parameters by name, and its derived values and constraints as written.
struct DeclaredSpace {
  std::map<std::string, DeclaredParameter> parameters;
  std::vector<std::pair<std::string, std::string>> derived;
  std::vector<std::string> constraints;
};

void read_declared_rules(const Json& document, DeclaredSpace& declared) {
  if (document.contains("derived") && document["derived"].is_array())
    for (const Json& entry : document["derived"])
      if (entry.is_object() && entry.value("name", Json()).is_string() && entry.value("expression", Json()).is_string())
        declared.derived.emplace_back(entry["name"].get<std::string>(), entry["expression"].get<std::string>());
  if (document.contains("constraints") && document["constraints"].is_array())
    for (const Json& entry : document["constraints"])
      if (entry.is_string()) declared.constraints.push_back(entry.get<std::string>());
}

DeclaredSpace declared_space(const std::filesystem::path& csv) {
  const std::filesystem::path path = metadata_path(csv);
  DeclaredSpace space;
  if (!std::filesystem::exists(path)) return space;
  std::ifstream input(path);
  Json document = Json::parse(input, nullptr, false);
  if (document.is_discarded() || !document.is_object())
    throw InputError(SourceLocation{path.string()}, "not valid JSON (the run metadata beside the record)");
  read_declared_rules(document, space);
  std::map<std::string, DeclaredParameter>& declared = space.parameters;
  if (!document.contains("parameters") || !document["parameters"].is_array()) return space;
  for (const Json& entry : document["parameters"]) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) continue;
    DeclaredParameter parameter;
    const std::string type = entry.value("type", "enumeration");
    parameter.type = type == "integer"   ? ParameterType::integer
                     : type == "boolean" ? ParameterType::boolean
                                         : ParameterType::enumeration;
    if (entry.contains("values") && entry["values"].is_array())
      for (const Json& value : entry["values"])
        parameter.values.push_back(value.is_string() ? value.get<std::string>() : value.dump());
    if (entry.contains("default")) {
      const Json& text = entry["default"];
      parameter.default_text = text.is_string() ? text.get<std::string>() : text.dump();
    }
    declared[entry["name"].get<std::string>()] = std::move(parameter);
  }
  return space;
}

std::optional<Value> typed_value(ParameterType type, const std::string& text) {
  switch (type) {
    case ParameterType::integer:
      if (auto integer = parse_integer(text)) return Value{*integer};
      return std::nullopt;
    case ParameterType::boolean:
      if (auto boolean = parse_boolean(text)) return Value{*boolean};
      return std::nullopt;
    case ParameterType::enumeration:
      return Value{text};
  }
  return std::nullopt;
}

// Records without run.json are read with every parameter as text; a column whose every value is an integer (or
// true/false) then becomes an integer (boolean) parameter.
void infer_types(std::vector<Parameter>& parameters, std::vector<Evaluation>& evaluations) {
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    if (parameters[p].type != ParameterType::enumeration) continue;
    for (ParameterType type : {ParameterType::integer, ParameterType::boolean}) {
      const bool all = std::all_of(evaluations.begin(), evaluations.end(), [&](const Evaluation& evaluation) {
        return typed_value(type, std::get<std::string>(evaluation.configuration[p])).has_value();
      });
      if (!all) continue;
      parameters[p].type = type;
      for (Evaluation& evaluation : evaluations)
        evaluation.configuration[p] = *typed_value(type, std::get<std::string>(evaluation.configuration[p]));
      break;
    }
  }
}

// Adds values the rows hold but the declaration lacks, in the order first met, so every value has an index.
void complete_values(std::vector<Parameter>& parameters, const std::vector<Evaluation>& evaluations) {
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    std::vector<Value>& values = parameters[p].values;
    for (const Evaluation& evaluation : evaluations) {
      const Value& value = evaluation.configuration[p];
      if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
    }
    if (!values.empty()) parameters[p].default_value = values.front();
  }
}

// The space's defaults where run.json gives every parameter's (records before issue 36 give none: the first value
// stands in, as before).
void use_declared_defaults(Recording& recording, const std::map<std::string, DeclaredParameter>& declared) {
  std::vector<Value> defaults;
  for (const Parameter& parameter : recording.parameters) {
    const DeclaredParameter& found = declared.at(parameter.name);
    if (!found.default_text) return;
    std::optional<Value> value = typed_value(parameter.type, *found.default_text);
    if (!value || std::find(parameter.values.begin(), parameter.values.end(), *value) == parameter.values.end()) return;
    defaults.push_back(*value);
  }
  for (std::size_t index = 0; index < defaults.size(); ++index) recording.parameters[index].default_value = defaults[index];
  recording.declared_defaults = true;
}

// Keeps the later row of a configuration recorded twice, at the place of the first.
std::vector<Evaluation> one_per_configuration(std::vector<Evaluation> rows, std::size_t& repeated) {
  std::unordered_map<std::string, std::size_t> index;
  std::vector<Evaluation> kept;
  kept.reserve(rows.size());
  repeated = 0;
  for (Evaluation& row : rows) {
    auto [found, inserted] = index.try_emplace(configuration_key(row.configuration), kept.size());
    if (inserted) {
      kept.push_back(std::move(row));
    } else {
      kept[found->second] = std::move(row);
      ++repeated;
    }
  }
  return kept;
}

void require_valid_rows(const Recording& recording) {
  if (recording.evaluations.empty())
    throw InputError(SourceLocation{recording.source.string()}, "the recording holds no evaluations: nothing to analyse");
  if (std::any_of(recording.evaluations.begin(), recording.evaluations.end(), is_valid_measurement)) return;
  std::map<std::string, std::size_t> statuses;
  for (const Evaluation& evaluation : recording.evaluations) ++statuses[std::string(status_name(evaluation.status))];
  std::vector<std::string> counts;
  for (const auto& [status, count] : statuses) counts.push_back(fmt::format("{} {}", count, status));
  throw InputError(SourceLocation{recording.source.string()},
                   fmt::format("no configuration in the recording ran correctly with a usable time ({} rows: {}); "
                               "nothing to analyse",
                               recording.evaluations.size(), fmt::join(counts, ", ")));
}

void note_unusable_times(Recording& recording) {
  const auto unusable = std::count_if(recording.evaluations.begin(), recording.evaluations.end(),
                                      [](const Evaluation& evaluation) {
                                        return evaluation.ok() && !is_valid_measurement(evaluation);
                                      });
  if (unusable > 0)
    recording.notes.push_back(fmt::format("{} configurations recorded as ok without a positive time are left out of "
                                          "the time figures",
                                          unusable));
}

using ReadingProgress = std::function<void(const std::filesystem::path&)>;

void collect(const std::filesystem::path& path, std::vector<Recording>& recordings, const ReadingProgress& reading) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) throw InputError(SourceLocation{path.string()}, "no such file or folder");
  if (std::filesystem::is_directory(status)) {
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
      if (!entry.is_regular_file()) continue;
      if (entry.path().filename() == "evaluations.csv" || is_t4_file_name(entry.path())) found.push_back(entry.path());
    }
    if (found.empty())
      throw InputError(SourceLocation{path.string()},
                       "the folder holds no record (evaluations.csv) and no T4 file (*.T4.json, *.T4.json.gz)");
    std::sort(found.begin(), found.end());
    for (const auto& file : found) collect(file, recordings, reading);
    return;
  }
  if (reading && (is_t4_file_name(path) || path.extension() == ".csv")) reading(path);
  if (is_t4_file_name(path)) {
    recordings.push_back(load_t4_recording(path, default_t1_for(path)));
  } else if (path.extension() == ".csv") {
    recordings.push_back(load_project_record(path));
  } else {
    throw InputError(SourceLocation{path.string()},
                     "neither a record (evaluations.csv), a T4 file (*.T4.json, *.T4.json.gz) nor a folder of them");
  }
}

}  // namespace

std::string Recording::label() const {
  std::string text = kernel;
  if (!problem.empty()) text += " " + problem;
  return text + " on " + (device.empty() ? std::string("an unnamed GPU") : device);
}

bool is_valid_measurement(const Evaluation& evaluation) {
  return evaluation.ok() && std::isfinite(evaluation.time.median_ms) && evaluation.time.median_ms > 0;
}

double numeric_value(const Parameter& parameter, const Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return static_cast<double>(*integer);
  if (const auto* real = std::get_if<double>(&value)) return *real;
  if (const auto* boolean = std::get_if<bool>(&value)) return *boolean ? 1.0 : 0.0;
  const auto found = std::find(parameter.values.begin(), parameter.values.end(), value);
  return static_cast<double>(found - parameter.values.begin());
}

bool is_t4_file_name(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return name.ends_with(".T4.json") || name.ends_with(".T4.json.gz");
}

Recording load_project_record(const std::filesystem::path& csv) {
  if (!std::filesystem::is_regular_file(csv)) throw InputError(SourceLocation{csv.string()}, "no such file");
  const std::vector<std::string> columns = header_columns(csv);
  const DeclaredSpace declared_rules = declared_space(csv);
  const std::map<std::string, DeclaredParameter>& declared = declared_rules.parameters;

  Space space;
  space.name = csv.string();
  space.streamed = std::find(columns.begin(), columns.end(), "stream_end_to_end_ms") != columns.end();
  bool every_parameter_declared = true;
  for (std::size_t column = 1; columns[column] != "status"; ++column) {
    Parameter parameter;
    parameter.name = columns[column];
    parameter.type = ParameterType::enumeration;
    const auto found = declared.find(parameter.name);
    if (found == declared.end()) {
      every_parameter_declared = false;
    } else {
      parameter.type = found->second.type;
      for (const std::string& text : found->second.values)
        if (auto value = typed_value(parameter.type, text)) parameter.values.push_back(*value);
    }
    space.parameters.push_back(std::move(parameter));
  }
  if (!every_parameter_declared)  // read as text, then typed from the values
    for (Parameter& parameter : space.parameters) {
      parameter.type = ParameterType::enumeration;
      parameter.values.clear();
    }

  const std::vector<RunMetadata> runs = read_run_metadata(csv);
  std::vector<RecordedEvaluation> rows = read_records(csv, space);
  Recording recording;
  recording.source = csv;
  if (rows.empty()) throw InputError(SourceLocation{csv.string()}, "the record holds a header but no rows: nothing to analyse");

  // The newest run with rows decides which rows measured the kernel as it is described (a run stopped before its
  // first evaluation has none); without run.json, the hash of the last row.
  std::string hash = rows.back().hash;
  const RunMetadata* run = nullptr;
  for (auto it = runs.rbegin(); it != runs.rend() && run == nullptr; ++it)
    if (std::any_of(rows.begin(), rows.end(), [&](const RecordedEvaluation& row) { return row.hash == it->spec_hash; })) {
      hash = it->spec_hash;
      run = &*it;
    }
  std::vector<Evaluation> evaluations;
  std::size_t other_hash = 0;
  for (RecordedEvaluation& row : rows) {
    if (row.hash == hash) {
      evaluations.push_back(std::move(row.evaluation));
    } else {
      ++other_hash;
    }
  }
  if (other_hash > 0)
    recording.notes.push_back(fmt::format("{} rows recorded under another spec hash than {} (another version of the "
                                          "kernel) are left out",
                                          other_hash, hash));
  std::size_t repeated = 0;
  recording.evaluations = one_per_configuration(std::move(evaluations), repeated);
  if (repeated > 0)
    recording.notes.push_back(fmt::format("{} configurations were recorded more than once; the later row counts",
                                          repeated));
  recording.parameters = std::move(space.parameters);
  if (!every_parameter_declared) {
    infer_types(recording.parameters, recording.evaluations);
    recording.notes.push_back("no parameter list in run.json: parameter types were taken from the recorded values");
  }
  complete_values(recording.parameters, recording.evaluations);
  if (every_parameter_declared) use_declared_defaults(recording, declared);
  recording.derived = declared_rules.derived;
  recording.constraints = declared_rules.constraints;

  if (run != nullptr) {
    recording.kernel = run->kernel;
    recording.device = run->gpu_name;
    recording.arch = run->arch;
    recording.problem = run->problem;
  }
  // results/runs/<kernel>/<arch>/<problem>/evaluations.csv names what run.json would.
  const std::filesystem::path folder = csv.parent_path();
  if (recording.kernel.empty())
    recording.kernel = folder.has_parent_path() && folder.parent_path().has_parent_path()
                           ? folder.parent_path().parent_path().filename().string()
                           : csv.stem().string();
  if (recording.problem.empty() && run == nullptr) recording.problem = folder.filename().string();
  std::vector<std::string> names;
  for (const Parameter& parameter : recording.parameters) names.push_back(parameter.name);
  recording.family = fmt::format("record {} | {} | {}", recording.kernel, recording.problem, fmt::join(names, ","));
  note_unusable_times(recording);
  require_valid_rows(recording);
  return recording;
}

Recording load_t4_recording(const std::filesystem::path& t4_file, const std::filesystem::path& t1_file) {
  if (!std::filesystem::is_regular_file(t1_file))
    throw InputError(SourceLocation{t4_file.string()},
                     fmt::format("its T1 space file {} does not exist (expected beside the T4 file, named after the "
                                 "part of the name before the first '-')",
                                 t1_file.string()));
  const Space space = read_t1_space(t1_file);
  Recording recording;
  recording.source = t4_file;
  std::size_t repeated = 0;
  T4Results results = read_t4(t4_file, space);
  // Analysis speaks of times (importance of log time, portability ratios); another objective would be misread.
  if (!results.objective.is_time)
    throw InputError(SourceLocation{t4_file.string()},
                     fmt::format("its objective is '{}'; tune analyze reads time objectives only",
                                 results.objective.name));
  recording.evaluations = one_per_configuration(std::move(results.evaluations), repeated);
  if (repeated > 0)
    recording.notes.push_back(fmt::format("{} configurations appear more than once; the later result counts", repeated));
  recording.parameters = space.parameters;
  complete_values(recording.parameters, recording.evaluations);

  std::string name = t4_file.filename().string();
  name = name.substr(0, name.find(".T4.json"));
  const std::size_t dash = name.find('-');
  recording.kernel = name.substr(0, dash);
  recording.device = dash == std::string::npos ? std::string() : name.substr(dash + 1);
  std::error_code error;
  const std::filesystem::path canonical_t1 = std::filesystem::weakly_canonical(t1_file, error);
  recording.family = "T1 " + (error ? t1_file.string() : canonical_t1.string());
  note_unusable_times(recording);
  require_valid_rows(recording);
  return recording;
}

std::vector<Recording> load_recordings(const std::vector<std::filesystem::path>& paths, const ReadingProgress& reading) {
  std::vector<Recording> recordings;
  for (const auto& path : paths) collect(path, recordings, reading);
  return recordings;
}

}  // namespace kernlathe
