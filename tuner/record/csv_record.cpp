#include "tuner/record/csv_record.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <exception>
#include <fstream>
#include <sstream>
#include <system_error>

#include <csv.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace kernlathe {

// Records written before the device column have the first eight condition columns.
constexpr std::size_t conditions_before_device = 8;

namespace {

// ---------------------------------------------------------------- writing

// A backslash, line feed and carriage return become \\, \n and \r, so that every row is one line (csv_record.h).
void escape_into(std::string& out, std::string_view field) {
  for (char c : field) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
}

bool needs_quoting(std::string_view field) {
  if (field.empty()) return false;
  // libcsv (with its default settings) and spreadsheets trim unquoted leading and trailing blanks: such fields are
  // quoted so that any reader keeps them.
  if (field.front() == ' ' || field.front() == '\t' || field.back() == ' ' || field.back() == '\t') return true;
  return field.find_first_of(",\"") != std::string_view::npos;
}

// Adds one field to a row (or a header) under construction; the first field gets no separator, whatever its text.
class RowText {
 public:
  void add(std::string_view field) {
    if (fields_++ > 0) text_ += ',';
    std::string escaped;
    escape_into(escaped, field);
    if (!needs_quoting(escaped)) {
      text_ += escaped;
      return;
    }
    // csv_write encloses the field in quotes and doubles the quotes inside: at worst twice the size plus two.
    const std::size_t start = text_.size();
    text_.resize(start + escaped.size() * 2 + 2);
    text_.resize(start + csv_write(text_.data() + start, text_.size() - start, escaped.data(), escaped.size()));
  }
  // The row with its newline.
  std::string finish() && {
    text_ += '\n';
    return std::move(text_);
  }

 private:
  std::string text_;
  std::size_t fields_ = 0;
};

std::string format_number(double value) { return fmt::format("{}", value); }

std::string system_error_text() { return std::generic_category().message(errno); }

void write_all(int descriptor, std::string_view bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    ssize_t written = ::write(descriptor, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      throw TunerError(fmt::format("{}: write failed: {}", path.string(), system_error_text()));
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

// "20261122T104312Z": part of a side file's name, so it sorts by time.
std::string compact_utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

// Writes bytes to the open descriptor of path, syncs them to disk and closes it; closed on failure too.
void write_synced_and_close(int descriptor, std::string_view bytes, const std::filesystem::path& path) {
  try {
    write_all(descriptor, bytes, path);
  } catch (...) {
    ::close(descriptor);
    throw;
  }
  const bool synced = ::fsync(descriptor) == 0;
  ::close(descriptor);
  if (!synced) throw TunerError(fmt::format("{}: fsync failed: {}", path.string(), system_error_text()));
}

// Writes bytes to a new file beside csv named <csv>.torn-<UTC time> (-2, -3, ... when that exists), synced to
// disk before the caller cuts anything off the record.
std::filesystem::path set_aside(const std::filesystem::path& csv, std::string_view bytes) {
  const std::string base = csv.string() + ".torn-" + compact_utc_now();
  for (int attempt = 1;; ++attempt) {
    std::filesystem::path side = attempt == 1 ? base : fmt::format("{}-{}", base, attempt);
    int descriptor = ::open(side.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (descriptor < 0 && errno == EEXIST && attempt < 1000) continue;
    if (descriptor < 0) {
      throw TunerError(fmt::format("{}: cannot create a file for the torn last row of {}: {}", side.string(),
                                   csv.string(), system_error_text()));
    }
    write_synced_and_close(descriptor, bytes, side);
    return side;
  }
}

// ---------------------------------------------------------------- reading

// One row as read: its fields (escapes undone) and the line it starts on.
using RowHandler = std::function<void(std::vector<std::string>& fields, int line)>;

struct ScanResult {
  std::size_t complete_bytes = 0;  // up to and including the newline of the last complete row
  int torn_line = 0;               // line of a torn last row; 0 when the text ends with a complete row
};

// Undoes escape_into. A backslash before any other character is kept as it is: records of earlier versions did
// not escape backslashes.
void unescape(std::string& field) {
  if (field.find('\\') == std::string::npos) return;
  std::string plain;
  plain.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 1 < field.size()) {
      char next = field[i + 1];
      if (next == '\\' || next == 'n' || next == 'r') {
        plain += next == 'n' ? '\n' : next == 'r' ? '\r' : '\\';
        ++i;
        continue;
      }
    }
    plain += field[i];
  }
  field = std::move(plain);
}

// libcsv calls these to tell blanks and line ends. Only a line feed ends a row, so a stray carriage return inside
// an unquoted field is text rather than a row break that would shift every later line number. A carriage return is
// the one blank: it is dropped around an unquoted field and after a closing quote, which is what reads CRLF line
// ends. Spaces and tabs are text, as written: libcsv would trim them off unquoted fields by default.
int is_record_blank(unsigned char c) { return c == '\r'; }
int is_record_line_end(unsigned char c) { return c == '\n'; }

// libcsv's field and row callbacks, and what they leave for RecordScanner. No exception may unwind through libcsv's
// C frames: the first one is kept and rethrown once csv_parse has returned.
struct ParseState {
  std::vector<std::string> fields;
  bool row_ended = false;
  std::exception_ptr error;
};

void on_field(void* data, std::size_t size, void* state_pointer) {
  auto& state = *static_cast<ParseState*>(state_pointer);
  if (state.error) return;
  try {
    state.fields.emplace_back(data == nullptr ? std::string() : std::string(static_cast<const char*>(data), size));
  } catch (...) {
    state.error = std::current_exception();
  }
}

void on_row_end(int, void* state_pointer) { static_cast<ParseState*>(state_pointer)->row_ended = true; }

// Owns a csv_parser for the scope of one scan.
class CsvParser {
 public:
  CsvParser() {
    if (csv_init(&parser_, CSV_STRICT | CSV_STRICT_FINI) != 0) throw TunerError("csv_init failed: out of memory");
    csv_set_space_func(&parser_, is_record_blank);
    csv_set_term_func(&parser_, is_record_line_end);
  }
  ~CsvParser() { csv_free(&parser_); }
  CsvParser(const CsvParser&) = delete;
  CsvParser& operator=(const CsvParser&) = delete;
  csv_parser* get() { return &parser_; }

 private:
  csv_parser parser_{};
};

// libcsv in strict mode (RFC 4180 quoting), fed one line at a time so that every row knows the line it starts on
// and a line feed inside quotes is seen where it happens. A raw line break inside a quoted field is accepted only in
// the message column, which is all that earlier versions wrote across lines; anywhere else, or in the header, an
// open quote that runs past the end of its line is a stray quote. Blank lines are skipped. Whether the last row is
// torn is decided from the text itself, not by libcsv: a final line without its newline. Its syntax is still
// checked, but it is reported, not handed on.
class RecordScanner {
 public:
  RecordScanner(std::string_view text, const std::filesystem::path& path, const std::vector<std::string>& columns)
      : text_(text), path_(path), columns_(columns) {
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (columns[c] == "message") message_column_ = static_cast<int>(c);
  }

  ScanResult scan(const RowHandler& on_row) {
    ScanResult result;
    const std::size_t last_newline = text_.rfind('\n');
    result.complete_bytes = last_newline == std::string_view::npos ? 0 : last_newline + 1;
    const std::string_view tail = text_.substr(result.complete_bytes);
    const int line_count = static_cast<int>(std::count(text_.begin(), text_.end(), '\n')) + (tail.empty() ? 0 : 1);

    bool header = true;
    bool row_open = false;  // a row began on an earlier line and is inside a quoted field
    int row_line = 0;
    std::size_t position = 0;
    for (int line = 1; position < result.complete_bytes; ++line) {
      const std::size_t end = text_.find('\n', position) + 1;
      const std::string_view chunk = text_.substr(position, end - position);
      position = end;
      if (!row_open) row_line = line;
      feed(chunk, row_line);
      if (state_.row_ended) {
        state_.row_ended = false;
        row_open = false;
        for (std::string& field : state_.fields) unescape(field);
        on_row(state_.fields, row_line);
        state_.fields.clear();
        header = false;
        continue;
      }
      // No row ended at this line feed: either the line was blank (only carriage returns), or the line feed is
      // inside a quoted field.
      if (!row_open && chunk.find_first_not_of("\r\n") == std::string_view::npos) continue;
      row_open = true;
      const std::size_t field_index = state_.fields.size();
      if (header || static_cast<int>(field_index) != message_column_) {
        throw InputError(SourceLocation{path_.string(), row_line},
                         fmt::format("a double quote opens {} and is not closed on this line (a stray double "
                                     "quote? quotes inside a field are doubled and the field quoted)",
                                     field_name(field_index)));
      }
    }

    if (!row_open && tail.empty()) return result;
    if (!row_open) row_line = line_count;
    feed(tail, row_line);
    if (row_open) {
      // The text ended inside a row that began on an earlier line: only a row on the last line is a torn row.
      const std::size_t field_index = state_.fields.size();
      if (csv_fini(parser_.get(), nullptr, nullptr, nullptr) != 0) {  // CSV_STRICT_FINI: still inside the quotes
        throw InputError(SourceLocation{path_.string(), row_line},
                         fmt::format("a double quote opens {} on this line and is never closed: lines {} to {} "
                                     "would be one field (a stray double quote? quotes inside a field are "
                                     "doubled and the field quoted)",
                                     field_name(field_index), row_line, line_count));
      }
      throw InputError(SourceLocation{path_.string(), row_line},
                       fmt::format("the last row (lines {} to {}) ends without its newline but spans several "
                                   "lines, which no torn row of this version does; complete or remove it",
                                   row_line, line_count));
    }
    result.torn_line = row_line;
    return result;
  }

 private:
  // Hands bytes to libcsv; a strict-mode error becomes an InputError naming the row's line and the field.
  void feed(std::string_view bytes, int row_line) {
    const std::size_t parsed =
        csv_parse(parser_.get(), bytes.data(), bytes.size(), on_field, on_row_end, &state_);
    if (state_.error) std::rethrow_exception(state_.error);
    if (parsed == bytes.size()) return;
    const int error = csv_error(parser_.get());
    if (error != CSV_EPARSE) {
      throw TunerError(fmt::format("{}:{}: {}", path_.string(), row_line, csv_strerror(error)));
    }
    // In strict mode libcsv stops on the offending byte: a quote inside an unquoted field, or whatever follows
    // the closing quote of a quoted one other than a separator, a line end or a doubled quote.
    const std::size_t field_index = state_.fields.size();
    if (!parser_.get()->quoted) {
      throw InputError(SourceLocation{path_.string(), row_line},
                       fmt::format("a double quote inside the unquoted {} (a field holding quotes must be quoted "
                                   "as a whole, its quotes doubled)",
                                   field_name(field_index)));
    }
    throw InputError(SourceLocation{path_.string(), row_line},
                     fmt::format("unexpected '{}' after the closing double quote of {} (quotes inside a field are "
                                 "doubled)",
                                 printable(bytes[parsed]), field_name(field_index)));
  }

  std::string field_name(std::size_t index) const {
    if (index < columns_.size()) return fmt::format("field {} ('{}')", index + 1, columns_[index]);
    return fmt::format("field {}", index + 1);
  }

  static std::string printable(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string(1, c);
    return fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }

  std::string_view text_;
  const std::filesystem::path& path_;
  const std::vector<std::string>& columns_;
  int message_column_ = -1;
  CsvParser parser_;
  ParseState state_;
};

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// The columns a record file's header holds: how many measurement-condition columns (records written before some
// existed have fewer), and which of the space's parameters have a column. A reader accepts a header without the
// columns of parameters added to the space after the file was written: their rows read as the parameter's default,
// which by the project's rule for adding a parameter (docs/specs.md) is what the kernel did before it existed. A
// writer needs every column, since it appends rows in the space's layout.
struct HeaderLayout {
  std::size_t condition_count = 0;
  std::vector<bool> parameter_present;  // one per space parameter
};

enum class AddedParameters { refused, read_as_default };

// The layout when found is the header of space (at condition_count) less some parameter columns; nullopt otherwise.
std::optional<HeaderLayout> layout_without_added_parameters(const std::vector<std::string>& found, const Space& space,
                                                            std::size_t condition_count) {
  const std::vector<std::string> expected = record_columns(space, condition_count);
  const std::size_t parameters = space.parameters.size();
  if (found.empty() || found[0] != expected[0]) return std::nullopt;
  HeaderLayout layout{condition_count, std::vector<bool>(parameters, false)};
  std::size_t column = 1;
  for (std::size_t index = 0; index < parameters; ++index) {
    if (column < found.size() && found[column] == space.parameters[index].name) {
      layout.parameter_present[index] = true;
      ++column;
    }
  }
  // The columns after the parameters are the measurement and condition columns, exactly.
  if (!std::equal(found.begin() + static_cast<std::ptrdiff_t>(column), found.end(),
                  expected.begin() + static_cast<std::ptrdiff_t>(1 + parameters), expected.end())) {
    return std::nullopt;
  }
  if (found.size() - column != expected.size() - 1 - parameters) return std::nullopt;
  return layout;
}

HeaderLayout check_header(const std::vector<std::string>& found, const Space& space, const std::filesystem::path& path,
                          AddedParameters added) {
  for (std::size_t count : condition_layouts())
    if (found == record_columns(space, count)) return {count, std::vector<bool>(space.parameters.size(), true)};
  if (added == AddedParameters::read_as_default) {
    for (std::size_t count : condition_layouts())
      if (std::optional<HeaderLayout> layout = layout_without_added_parameters(found, space, count)) return *layout;
  }
  std::vector<std::string> expected = record_columns(space);
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

  // Set from the header: a record written with fewer condition columns has rows without them, one written before
  // a parameter was added has no column for it.
  void set_layout(const HeaderLayout& layout, const std::vector<std::string>& header) {
    condition_count_ = layout.condition_count;
    parameter_present_ = layout.parameter_present;
    columns_ = header;
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
    for (std::size_t index = 0; index < space_.parameters.size(); ++index) {
      const Parameter& parameter = space_.parameters[index];
      if (!parameter_present_.empty() && !parameter_present_[index]) {
        evaluation.configuration.push_back(parameter.default_value);  // added after the file was written
        continue;
      }
      evaluation.configuration.push_back(parse_value(parameter, fields[column], line));
      ++column;
    }
    const std::string& status_text = fields[column++];
    std::optional<Status> status = parse_status(status_text);
    if (!status) fail(line, "status", status_text, "a status such as ok or compile_error");
    evaluation.status = *status;
    evaluation.message = std::move(fields[column++]);
    evaluation.time.median_ms = time(fields, column++, line, evaluation.ok());
    evaluation.time.min_ms = time(fields, column++, line, evaluation.ok());
    evaluation.time.max_ms = time(fields, column++, line, evaluation.ok());
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
    if (condition_count_ > 0) {
      evaluation.time.low_ms = number(fields, column++, line);
      evaluation.time.high_ms = number(fields, column++, line);
      evaluation.power_w = number(fields, column++, line);
      evaluation.temperature_c = integer<int>(fields, column++, line);
      evaluation.energy_mj = number(fields, column++, line);
      evaluation.energy_window_ms = number(fields, column++, line);
      evaluation.objective = number(fields, column++, line);
      ++column;  // clock_flag: derived from throttle_reasons when written
    }
    if (condition_count_ > conditions_before_device) evaluation.device = std::move(fields[column++]);
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

  // A time of a verified row: a number of milliseconds, finite and not negative (nan or -1 there is a corrupt row,
  // which would rank first or poison every mean).
  double time(const std::vector<std::string>& fields, std::size_t column, int line, bool verified) const {
    const double value = number(fields, column, line);
    if (verified && (!std::isfinite(value) || value < 0))
      fail(line, columns_[column], fields[column], "a time in milliseconds (finite, not negative) on an ok row");
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
  std::size_t condition_count_ = condition_columns().size();
  std::vector<bool> parameter_present_;  // empty: every parameter has its column
};

// The header, then every row parsed into an evaluation and handed to visit. header_seen (when given) tells
// whether the text held a complete header row.
ScanResult scan_records(std::string_view text, const std::filesystem::path& path, const Space& space,
                        const std::function<void(RecordedEvaluation&&)>& visit, bool* header_seen,
                        std::size_t* layout_condition_count = nullptr,
                        AddedParameters added = AddedParameters::read_as_default) {
  const std::vector<std::string> columns = record_columns(space);
  RowParser parser(space, path);
  bool header_done = false;
  // A UTF-8 byte order mark, which spreadsheet programs put before the header of a CSV they save, is not part of
  // the first column's name. The byte offsets of the result still count it.
  constexpr std::string_view byte_order_mark = "\xEF\xBB\xBF";
  const std::size_t skipped = text.starts_with(byte_order_mark) ? byte_order_mark.size() : 0;
  text.remove_prefix(skipped);
  // The scanner finds the message column (whose legacy line breaks it mends) by name: in the file's own header,
  // which for a record written before a parameter was added is not the space's.
  std::vector<std::string> file_columns = columns;
  if (const std::size_t first_newline = text.find('\n'); first_newline != std::string_view::npos) {
    RecordScanner(text.substr(0, first_newline + 1), path, columns)
        .scan([&](std::vector<std::string>& fields, int) { file_columns = fields; });
  }
  RecordScanner scanner(text, path, file_columns);
  ScanResult result = scanner.scan([&](std::vector<std::string>& fields, int line) {
    if (!header_done) {
      const HeaderLayout layout = check_header(fields, space, path, added);
      parser.set_layout(layout, fields);
      if (layout_condition_count) *layout_condition_count = layout.condition_count;
      header_done = true;
      return;
    }
    visit(parser.parse(fields, line));
  });
  if (header_seen) *header_seen = header_done;
  if (result.complete_bytes > 0) result.complete_bytes += skipped;
  return result;
}

// A record written before parameters were added to its space, rewritten in the space's layout: each complete row
// gains the added parameters' columns holding their defaults (as readers take them), every other field as it was; a
// torn last row is kept after them as it was, for the writer to set aside. nullopt when the header is the space's
// own, or not such an earlier layout (the writer's strict check then names the difference). added receives the
// names of the added columns.
std::optional<std::string> with_added_parameter_columns(std::string_view text, const std::filesystem::path& path,
                                                        const Space& space, std::vector<std::string>& added) {
  constexpr std::string_view byte_order_mark = "\xEF\xBB\xBF";  // as scan_records: not part of the header
  if (text.starts_with(byte_order_mark)) text.remove_prefix(byte_order_mark.size());
  const std::size_t header_end = text.find('\n');
  if (header_end == std::string_view::npos) return std::nullopt;
  std::vector<std::string> header;
  RecordScanner(text.substr(0, header_end + 1), path, record_columns(space))
      .scan([&](std::vector<std::string>& fields, int) { header = fields; });
  std::optional<HeaderLayout> layout;
  for (std::size_t count : condition_layouts()) {
    if (header == record_columns(space, count)) return std::nullopt;
    if (!layout) layout = layout_without_added_parameters(header, space, count);
  }
  if (!layout) return std::nullopt;
  // Every row is read as a reader would first: a row that cannot be read is an InputError naming its line, and the
  // file is left as it was.
  scan_records(text, path, space, [](RecordedEvaluation&&) {}, nullptr);
  for (std::size_t index = 0; index < space.parameters.size(); ++index)
    if (!layout->parameter_present[index]) added.push_back(space.parameters[index].name);
  std::string rewritten;
  bool header_row = true;
  const ScanResult scanned = RecordScanner(text, path, header).scan([&](std::vector<std::string>& fields, int) {
    RowText row;
    if (header_row) {
      for (const std::string& column : record_columns(space, layout->condition_count)) row.add(column);
      header_row = false;
    } else {
      row.add(fields[0]);
      std::size_t column = 1;
      for (std::size_t index = 0; index < space.parameters.size(); ++index) {
        const bool present = layout->parameter_present[index];
        row.add(present ? fields[column++] : expr::to_string(space.parameters[index].default_value));
      }
      for (; column < fields.size(); ++column) row.add(fields[column]);
    }
    rewritten += std::move(row).finish();
  });
  rewritten += text.substr(scanned.complete_bytes);
  return rewritten;
}

// Replaces path's contents with text through a file beside it, synced and renamed over it, so that a crash leaves
// either the old record or the new one.
void replace_file(const std::filesystem::path& path, std::string_view text) {
  const std::filesystem::path replacement = path.string() + ".rewrite";
  const int descriptor = ::open(replacement.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (descriptor < 0) throw TunerError(fmt::format("{}: cannot create: {}", replacement.string(), system_error_text()));
  write_synced_and_close(descriptor, text, replacement);
  std::filesystem::rename(replacement, path);
}

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

const std::vector<std::string>& condition_columns() {
  static const std::vector<std::string> columns{"time_low_ms", "time_high_ms",     "power_w",   "temperature_c",
                                                "energy_mj",   "energy_window_ms", "objective", "clock_flag",
                                                "device"};
  return columns;
}

const std::vector<std::size_t>& condition_layouts() {
  // 9: with device (multi-GPU runs); 8: before it; 0: before any condition column.
  static const std::vector<std::size_t> layouts{condition_columns().size(), conditions_before_device, 0};
  return layouts;
}

std::vector<std::string> record_columns(const Space& space) { return record_columns(space, condition_columns().size()); }

std::vector<std::string> record_columns(const Space& space, std::size_t condition_count) {
  std::vector<std::string> columns{"hash"};
  for (const Parameter& parameter : space.parameters) columns.push_back(parameter.name);
  const auto& measurement = measurement_columns();
  columns.insert(columns.end(), measurement.begin(), measurement.end());
  if (space.streamed) {
    const auto& stream = stream_columns();
    columns.insert(columns.end(), stream.begin(), stream.end());
  }
  const auto& conditions = condition_columns();
  columns.insert(columns.end(), conditions.begin(),
                 conditions.begin() + static_cast<std::ptrdiff_t>(std::min(condition_count, conditions.size())));
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
    : path_(std::move(csv)),
      parameter_count_(space.parameters.size()),
      streamed_(space.streamed),
      condition_count_(condition_columns().size()) {
  // The companion run.json is read before the record is touched: one that cannot be read stops here, with the record
  // as it was, rather than after a header was written or a torn row set aside.
  read_run_metadata(path_);
  bool has_header = false;
  if (std::filesystem::exists(path_) && std::filesystem::file_size(path_) > 0) {
    std::string contents = read_file(path_);
    // A record written before parameters were added to the space goes on in the space's layout, its rows holding
    // the added parameters at their defaults (what readers take them as, docs/specs.md).
    if (std::optional<std::string> rewritten = with_added_parameter_columns(contents, path_, space, added_columns_)) {
      replace_file(path_, *rewritten);
      contents = std::move(*rewritten);
    }
    // Every row is read before anything is written: appending to a record that cannot be read back would bury
    // the problem under more rows.
    ScanResult scanned = scan_records(contents, path_, space, [&](RecordedEvaluation&&) {}, &has_header,
                                      &condition_count_, AddedParameters::refused);
    if (scanned.torn_line > 0) {
      torn_row_file_ = set_aside(path_, std::string_view(contents).substr(scanned.complete_bytes));
      torn_row_line_ = scanned.torn_line;
      std::filesystem::resize_file(path_, scanned.complete_bytes);
    }
  }
  descriptor_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (descriptor_ < 0) {
    throw TunerError(fmt::format("{}: cannot open for appending: {}", path_.string(), system_error_text()));
  }
  resumed_ = has_header;
  if (!has_header) {
    RowText header;
    for (const std::string& column : record_columns(space)) header.add(column);
    write_all(descriptor_, std::move(header).finish(), path_);
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
  RowText row;
  row.add(hash);
  for (const Value& value : evaluation.configuration) row.add(expr::to_string(value));
  row.add(status_name(evaluation.status));
  row.add(evaluation.message);
  row.add(format_number(evaluation.time.median_ms));
  row.add(format_number(evaluation.time.min_ms));
  row.add(format_number(evaluation.time.max_ms));
  row.add(format_number(evaluation.time.relative_spread));
  row.add(std::to_string(evaluation.time.samples));
  row.add(format_number(evaluation.compile_ms));
  row.add(evaluation.cubin_cached ? "true" : "false");
  row.add(std::to_string(evaluation.registers));
  row.add(std::to_string(evaluation.static_shared_bytes));
  row.add(std::to_string(evaluation.dynamic_shared_bytes));
  row.add(std::to_string(evaluation.threads_per_block));
  row.add(format_number(evaluation.occupancy));
  row.add(std::to_string(evaluation.sm_clock_mhz));
  row.add(std::to_string(evaluation.throttle_reasons));
  row.add(format_number(evaluation.max_error));
  row.add(format_number(evaluation.timestamp));
  if (streamed_) {
    const StreamStages& stream = evaluation.stream;
    for (double field : {stream.end_to_end_ms, stream.host_read_ms, stream.copy_in_ms, stream.kernel_ms,
                         stream.copy_out_ms, stream.gpu_idle_ms, stream.items_per_second, stream.bytes_per_second,
                         stream.input_gbps}) {
      row.add(format_number(field));
    }
  }
  if (condition_count_ > 0) {
    row.add(format_number(evaluation.time.low_ms));
    row.add(format_number(evaluation.time.high_ms));
    row.add(format_number(evaluation.power_w));
    row.add(std::to_string(evaluation.temperature_c));
    row.add(format_number(evaluation.energy_mj));
    row.add(format_number(evaluation.energy_window_ms));
    row.add(format_number(evaluation.objective));
    row.add(clock_policy_flag(evaluation.throttle_reasons));
  }
  if (condition_count_ > conditions_before_device) row.add(evaluation.device);
  // One write() per row: with O_APPEND a row lands whole or, if the process dies mid-call, as a torn last line
  // that readers skip and the next writer sets aside.
  write_all(descriptor_, std::move(row).finish(), path_);
  if (sync_every_row_) ::fsync(descriptor_);
}

// ---------------------------------------------------------------- reading

void for_each_record(const std::filesystem::path& csv, const Space& space,
                     const std::function<void(RecordedEvaluation&&)>& visit) {
  if (std::filesystem::is_directory(csv))
    throw InputError(SourceLocation{csv.string()}, "is a folder; a record file (such as evaluations.csv) was expected");
  const std::string contents = read_file(csv);
  bool header_seen = false;
  scan_records(contents, csv, space, visit, &header_seen);
  if (!header_seen)
    throw InputError(SourceLocation{csv.string(), 1},
                     contents.empty() ? "the record file is empty: not even a header row"
                                      : "the header row ends without its newline: the file was cut off");
}

void for_each_record_in_text(std::string_view text, const std::filesystem::path& name, const Space& space,
                             const std::function<void(RecordedEvaluation&&)>& visit) {
  scan_records(text, name, space, visit, nullptr);
}

std::vector<std::string> parameters_missing_from(const std::filesystem::path& csv, const Space& space) {
  // The same refusals as for_each_record for what is not a record, in the same words.
  if (std::filesystem::is_directory(csv))
    throw InputError(SourceLocation{csv.string()}, "is a folder; a record file (such as evaluations.csv) was expected");
  // The header row only: a replay reads the whole file afterwards.
  std::ifstream input(csv, std::ios::binary);
  if (!input) throw InputError(SourceLocation{csv.string()}, "cannot open the record file for reading");
  std::string header_line;
  std::getline(input, header_line);
  if (input.eof())
    throw InputError(SourceLocation{csv.string(), 1},
                     header_line.empty() ? "the record file is empty: not even a header row"
                                         : "the header row ends without its newline: the file was cut off");
  if (header_line.starts_with("\xEF\xBB\xBF")) header_line.erase(0, 3);  // a byte order mark, as scan_records
  header_line += '\n';
  std::vector<std::string> header;
  RecordScanner(header_line, csv, record_columns(space)).scan([&](std::vector<std::string>& fields, int) {
    header = fields;
  });
  const HeaderLayout layout = check_header(header, space, csv, AddedParameters::read_as_default);
  std::vector<std::string> missing;
  for (std::size_t index = 0; index < space.parameters.size(); ++index)
    if (!layout.parameter_present[index]) missing.push_back(space.parameters[index].name);
  return missing;
}

std::vector<RecordedEvaluation> read_records(const std::filesystem::path& csv, const Space& space) {
  std::vector<RecordedEvaluation> records;
  for_each_record(csv, space, [&records](RecordedEvaluation&& record) { records.push_back(std::move(record)); });
  return records;
}

void ResumeState::add(Evaluation evaluation) {
  std::string key = configuration_key(evaluation.configuration);
  auto [found, inserted] = index_.try_emplace(std::move(key), evaluations_.size());
  if (inserted) {
    evaluations_.push_back(std::move(evaluation));
  } else {
    evaluations_[found->second] = std::move(evaluation);  // a re-measurement: the later row wins
  }
}

ResumeState load_resume_state(const std::filesystem::path& csv, const Space& space, const std::string& hash) {
  ResumeState state;
  // An empty file is a record whose header was never written (RecordWriter starts it afresh).
  if (!std::filesystem::exists(csv) || std::filesystem::file_size(csv) == 0) return state;
  for_each_record(csv, space, [&](RecordedEvaluation&& record) {
    if (record.hash == hash) {
      state.add(std::move(record.evaluation));
    } else {
      state.add_other_hash_row();
    }
  });
  return state;
}

}  // namespace kernlathe
