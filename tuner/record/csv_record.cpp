#include "tuner/record/csv_record.h"

#include <charconv>
#include <exception>
#include <fstream>
#include <sstream>
#include <system_error>

#include <csv.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace kernlathe {

namespace {

// ---------------------------------------------------------------- writing

bool needs_quoting(std::string_view field) {
  if (field.empty()) return false;
  // libcsv trims unquoted leading and trailing blanks when reading, so such fields are quoted to survive.
  if (field.front() == ' ' || field.front() == '\t' || field.back() == ' ' || field.back() == '\t') return true;
  return field.find_first_of(",\"\r\n") != std::string_view::npos;
}

void append_field(std::string& row, std::string_view field) {
  if (!row.empty()) row += ',';
  if (!needs_quoting(field)) {
    row += field;
    return;
  }
  // Worst case: every character a doubled quote, plus the enclosing quotes.
  std::string quoted(field.size() * 2 + 2, '\0');
  std::size_t written = csv_write(quoted.data(), quoted.size(), field.data(), field.size());
  quoted.resize(written);
  row += quoted;
}

std::string format_number(double value) { return fmt::format("{}", value); }

void write_all(int descriptor, std::string_view bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    ssize_t written = ::write(descriptor, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      throw TunerError(fmt::format("{}: write failed: {}", path.string(), std::generic_category().message(errno)));
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream input(path, std::ios::binary);
  if (!input) throw InputError(SourceLocation{path.string()}, "cannot open the record file for reading");
  std::stringstream contents;
  contents << input.rdbuf();
  return contents.str();
}

// ---------------------------------------------------------------- reading

using RowHandler = std::function<void(std::vector<std::string>& fields, int line)>;

struct ParserState {
  std::vector<std::string> fields;
  int current_line = 1;
  int row_start_line = 1;
  const RowHandler* on_row = nullptr;
  // Exceptions must not unwind through libcsv's C frames; the first one is kept and rethrown afterwards.
  std::exception_ptr error;
};

void on_field(void* data, std::size_t size, void* state_pointer) {
  auto& state = *static_cast<ParserState*>(state_pointer);
  if (state.error) return;
  if (state.fields.empty()) state.row_start_line = state.current_line;
  state.fields.emplace_back(data == nullptr ? std::string() : std::string(static_cast<const char*>(data), size));
}

void on_row_end(int, void* state_pointer) {
  auto& state = *static_cast<ParserState*>(state_pointer);
  if (state.error) return;
  try {
    (*state.on_row)(state.fields, state.row_start_line);
  } catch (...) {
    state.error = std::current_exception();
  }
  state.fields.clear();
}

// A row ended by csv_fini has no line terminator: a writer was killed while writing it. It is dropped.
void drop_partial_field(void*, std::size_t, void*) {}
void drop_partial_row(int, void*) {}

// Feeds contents one physical line at a time so that rows know their line numbers. Returns the number of
// bytes up to the end of the last complete row.
std::size_t scan_csv(const std::string& contents, const std::filesystem::path& path, const RowHandler& on_row) {
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT) != 0) throw TunerError("csv_init failed");
  ParserState state;
  state.on_row = &on_row;
  std::size_t complete_bytes = 0;
  std::size_t offset = 0;
  while (offset < contents.size()) {
    std::size_t newline = contents.find('\n', offset);
    std::size_t end = newline == std::string::npos ? contents.size() : newline + 1;
    std::size_t parsed = csv_parse(&parser, contents.data() + offset, end - offset, on_field, on_row_end, &state);
    if (state.error) {
      csv_free(&parser);
      std::rethrow_exception(state.error);
    }
    if (parsed != end - offset) {
      std::string reason = csv_strerror(csv_error(&parser));
      csv_free(&parser);
      throw InputError(SourceLocation{path.string(), state.current_line},
                       fmt::format("malformed CSV: {} (a stray double quote inside an unquoted field?)", reason));
    }
    if (state.fields.empty() && newline != std::string::npos) complete_bytes = end;
    offset = end;
    ++state.current_line;
  }
  csv_fini(&parser, drop_partial_field, drop_partial_row, nullptr);
  csv_free(&parser);
  return complete_bytes;
}

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

void check_header(const std::vector<std::string>& found, const Space& space, const std::filesystem::path& path) {
  std::vector<std::string> expected = record_columns(space);
  if (found == expected) return;
  // Name the parameter columns: the usual cause is a space edited between a run and its resume.
  auto parameter_part = [](const std::vector<std::string>& columns) {
    std::vector<std::string> parameters;
    for (std::size_t index = 1; index < columns.size() && columns[index] != "status"; ++index) {
      parameters.push_back(columns[index]);
    }
    return parameters;
  };
  throw InputError(SourceLocation{path.string(), 1},
                   fmt::format("the header does not match the space '{}': expected parameter columns [{}], the file "
                               "has [{}]; record into a new file or restore the space",
                               space.name, join(parameter_part(expected)), join(parameter_part(found))));
}

template <typename Number>
bool parse_integer(const std::string& text, Number& value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

bool parse_double(const std::string& text, double& value) {
  if (text.empty()) {
    value = 0;
    return true;
  }
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

std::optional<bool> parse_boolean(const std::string& text) {
  if (text == "true" || text == "True" || text == "1") return true;
  if (text == "false" || text == "False" || text == "0") return false;
  return std::nullopt;
}

class RowParser {
 public:
  RowParser(const Space& space, const std::filesystem::path& path) : space_(space), path_(path) {
    columns_ = record_columns(space);
  }

  RecordedEvaluation parse(std::vector<std::string>& fields, int line) const {
    if (fields.size() != columns_.size()) {
      throw InputError(SourceLocation{path_.string(), line},
                       fmt::format("expected {} fields, found {}", columns_.size(), fields.size()));
    }
    RecordedEvaluation record;
    record.hash = std::move(fields[0]);
    Evaluation& evaluation = record.evaluation;
    evaluation.configuration.reserve(space_.parameters.size());
    std::size_t column = 1;
    for (const Parameter& parameter : space_.parameters) {
      evaluation.configuration.push_back(parse_value(parameter, fields[column], line));
      ++column;
    }
    const std::string& status_text = fields[column++];
    std::optional<Status> status = parse_status(status_text);
    if (!status) fail(line, "status", status_text, "a status such as ok or compile_error");
    evaluation.status = *status;
    evaluation.message = std::move(fields[column++]);
    evaluation.time.median_ms = number(fields, column++, line);
    evaluation.time.min_ms = number(fields, column++, line);
    evaluation.time.max_ms = number(fields, column++, line);
    evaluation.time.relative_spread = number(fields, column++, line);
    evaluation.time.samples = integer<int>(fields, column++, line);
    evaluation.compile_ms = number(fields, column++, line);
    std::optional<bool> cached = parse_boolean(fields[column]);
    if (!cached) fail(line, columns_[column], fields[column], "true or false");
    evaluation.cubin_cached = *cached;
    ++column;
    evaluation.registers = integer<int>(fields, column++, line);
    evaluation.static_shared_bytes = integer<int>(fields, column++, line);
    evaluation.dynamic_shared_bytes = integer<std::int64_t>(fields, column++, line);
    evaluation.threads_per_block = integer<int>(fields, column++, line);
    evaluation.occupancy = number(fields, column++, line);
    evaluation.sm_clock_mhz = integer<int>(fields, column++, line);
    evaluation.throttle_reasons = integer<std::uint64_t>(fields, column++, line);
    evaluation.max_error = number(fields, column++, line);
    evaluation.timestamp = number(fields, column++, line);
    if (space_.streamed) {
      StreamStages& stream = evaluation.stream;
      for (double* field : {&stream.end_to_end_ms, &stream.host_read_ms, &stream.copy_in_ms, &stream.kernel_ms,
                            &stream.copy_out_ms, &stream.gpu_idle_ms, &stream.items_per_second,
                            &stream.bytes_per_second, &stream.input_gbps}) {
        *field = number(fields, column++, line);
      }
    }
    return record;
  }

 private:
  Value parse_value(const Parameter& parameter, const std::string& text, int line) const {
    switch (parameter.type) {
      case ParameterType::integer: {
        std::int64_t value = 0;
        if (!parse_integer(text, value)) fail(line, parameter.name, text, "an integer");
        return value;
      }
      case ParameterType::boolean: {
        std::optional<bool> value = parse_boolean(text);
        if (!value) fail(line, parameter.name, text, "true or false");
        return *value;
      }
      case ParameterType::enumeration:
        return text;
    }
    return text;
  }

  double number(const std::vector<std::string>& fields, std::size_t column, int line) const {
    double value = 0;
    if (!parse_double(fields[column], value)) fail(line, columns_[column], fields[column], "a number");
    return value;
  }

  template <typename Integer>
  Integer integer(const std::vector<std::string>& fields, std::size_t column, int line) const {
    Integer value = 0;
    if (fields[column].empty()) return 0;
    if (!parse_integer(fields[column], value)) fail(line, columns_[column], fields[column], "an integer");
    return value;
  }

  [[noreturn]] void fail(int line, const std::string& column, const std::string& text, const char* wanted) const {
    throw InputError(SourceLocation{path_.string(), line},
                     fmt::format("column '{}': '{}' is not {}", column, text, wanted));
  }

  const Space& space_;
  const std::filesystem::path& path_;
  std::vector<std::string> columns_;
};

}  // namespace

// ---------------------------------------------------------------- columns and keys

const std::vector<std::string>& measurement_columns() {
  static const std::vector<std::string> columns{
      "status",         "message",          "time_median_ms",      "time_min_ms",          "time_max_ms",
      "relative_spread", "samples",         "compile_ms",          "cubin_cached",         "registers",
      "static_shared_bytes", "dynamic_shared_bytes", "threads_per_block", "occupancy",    "sm_clock_mhz",
      "throttle_reasons", "max_error",      "timestamp",
  };
  return columns;
}

const std::vector<std::string>& stream_columns() {
  static const std::vector<std::string> columns{
      "stream_end_to_end_ms", "stream_host_read_ms",      "stream_copy_in_ms",       "stream_kernel_ms",
      "stream_copy_out_ms",   "stream_gpu_idle_ms",       "stream_items_per_second", "stream_bytes_per_second",
      "stream_input_gbps",
  };
  return columns;
}

std::vector<std::string> record_columns(const Space& space) {
  std::vector<std::string> columns{"hash"};
  for (const Parameter& parameter : space.parameters) columns.push_back(parameter.name);
  const auto& measurement = measurement_columns();
  columns.insert(columns.end(), measurement.begin(), measurement.end());
  if (space.streamed) {
    const auto& stream = stream_columns();
    columns.insert(columns.end(), stream.begin(), stream.end());
  }
  return columns;
}

std::string configuration_key(const Configuration& configuration) {
  std::string key;
  for (const Value& value : configuration) {
    // A type tag keeps 1, true and "1" apart; the unit separator cannot occur in a parameter value.
    std::visit(
        [&key](const auto& alternative) {
          using Type = std::decay_t<decltype(alternative)>;
          if constexpr (std::is_same_v<Type, std::int64_t>) {
            key += 'i';
            key += std::to_string(alternative);
          } else if constexpr (std::is_same_v<Type, double>) {
            key += 'f';
            key += fmt::format("{}", alternative);
          } else if constexpr (std::is_same_v<Type, bool>) {
            key += alternative ? "b1" : "b0";
          } else {
            key += 's';
            key += alternative;
          }
        },
        value);
    key += '\x1f';
  }
  return key;
}

// ---------------------------------------------------------------- RecordWriter

RecordWriter::RecordWriter(std::filesystem::path csv, const Space& space, const RunMetadata& metadata)
    : path_(std::move(csv)), parameter_count_(space.parameters.size()), streamed_(space.streamed) {
  std::size_t keep_bytes = 0;
  bool has_header = false;
  if (std::filesystem::exists(path_) && std::filesystem::file_size(path_) > 0) {
    std::string contents = read_file(path_);
    RowHandler check_first_row = [&](std::vector<std::string>& fields, int) {
      if (has_header) return;
      check_header(fields, space, path_);
      has_header = true;
    };
    keep_bytes = scan_csv(contents, path_, check_first_row);
    if (keep_bytes < contents.size()) std::filesystem::resize_file(path_, keep_bytes);
  }
  descriptor_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (descriptor_ < 0) {
    throw TunerError(
        fmt::format("{}: cannot open for appending: {}", path_.string(), std::generic_category().message(errno)));
  }
  resumed_ = has_header;
  if (!has_header) {
    std::string header;
    for (const std::string& column : record_columns(space)) append_field(header, column);
    header += '\n';
    write_all(descriptor_, header, path_);
  }
  append_run_metadata(path_, space, metadata);
}

RecordWriter::~RecordWriter() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

void RecordWriter::append(const Evaluation& evaluation, const std::string& hash) {
  if (evaluation.configuration.size() != parameter_count_) {
    throw TunerError(fmt::format("{}: a configuration of {} values cannot be recorded in a space of {} parameters",
                                 path_.string(), evaluation.configuration.size(), parameter_count_));
  }
  std::string row;
  append_field(row, hash);
  for (const Value& value : evaluation.configuration) append_field(row, expr::to_string(value));
  append_field(row, status_name(evaluation.status));
  append_field(row, evaluation.message);
  append_field(row, format_number(evaluation.time.median_ms));
  append_field(row, format_number(evaluation.time.min_ms));
  append_field(row, format_number(evaluation.time.max_ms));
  append_field(row, format_number(evaluation.time.relative_spread));
  append_field(row, std::to_string(evaluation.time.samples));
  append_field(row, format_number(evaluation.compile_ms));
  append_field(row, evaluation.cubin_cached ? "true" : "false");
  append_field(row, std::to_string(evaluation.registers));
  append_field(row, std::to_string(evaluation.static_shared_bytes));
  append_field(row, std::to_string(evaluation.dynamic_shared_bytes));
  append_field(row, std::to_string(evaluation.threads_per_block));
  append_field(row, format_number(evaluation.occupancy));
  append_field(row, std::to_string(evaluation.sm_clock_mhz));
  append_field(row, std::to_string(evaluation.throttle_reasons));
  append_field(row, format_number(evaluation.max_error));
  append_field(row, format_number(evaluation.timestamp));
  if (streamed_) {
    const StreamStages& stream = evaluation.stream;
    for (double field : {stream.end_to_end_ms, stream.host_read_ms, stream.copy_in_ms, stream.kernel_ms,
                         stream.copy_out_ms, stream.gpu_idle_ms, stream.items_per_second, stream.bytes_per_second,
                         stream.input_gbps}) {
      append_field(row, format_number(field));
    }
  }
  row += '\n';
  // One write() per row: with O_APPEND a row lands whole or, if the process dies mid-call, as a partial last
  // line that readers ignore.
  write_all(descriptor_, row, path_);
  if (sync_every_row_) ::fsync(descriptor_);
}

// ---------------------------------------------------------------- reading

void for_each_record(const std::filesystem::path& csv, const Space& space,
                     const std::function<void(RecordedEvaluation&&)>& visit) {
  std::string contents = read_file(csv);
  RowParser parser(space, csv);
  bool header_seen = false;
  RowHandler handle = [&](std::vector<std::string>& fields, int line) {
    if (!header_seen) {
      check_header(fields, space, csv);
      header_seen = true;
      return;
    }
    visit(parser.parse(fields, line));
  };
  scan_csv(contents, csv, handle);
}

std::vector<RecordedEvaluation> read_records(const std::filesystem::path& csv, const Space& space) {
  std::vector<RecordedEvaluation> records;
  for_each_record(csv, space, [&records](RecordedEvaluation&& record) { records.push_back(std::move(record)); });
  return records;
}

ResumeState load_resume_state(const std::filesystem::path& csv, const Space& space, const std::string& hash) {
  ResumeState state;
  if (!std::filesystem::exists(csv)) return state;
  for_each_record(csv, space, [&](RecordedEvaluation&& record) {
    if (record.hash == hash) state.add(record.evaluation.configuration);
  });
  return state;
}

}  // namespace kernlathe
