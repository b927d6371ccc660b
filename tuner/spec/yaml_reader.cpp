#include "tuner/spec/yaml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

namespace kernlathe::spec_loading {

// ---------------------------------------------------------------- text helpers

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  std::string suggestion = expr::closest_match(name, candidates);
  return suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion);
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_identifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front()))) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is_reserved(std::string_view text) {
  for (std::string_view word : {"and", "or", "not", "if", "else", "in", "True", "False", "None"}) {
    if (text == word) return true;
  }
  return false;
}

std::optional<std::int64_t> parse_integer_text(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<double> parse_real_text(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  // from_chars also reads "inf" and "nan", which YAML spells differently and which no spec needs.
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '-' ||
                        text.front() == '.')) {
    return std::nullopt;
  }
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string why_not_a_file(const std::filesystem::path& file) {
  std::error_code error;
  return std::filesystem::is_directory(file, error) ? "is a folder, not a file" : "does not exist";
}

std::string not_an_integer(std::string_view what, std::string_view text) {
  std::string_view digits = text;
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
  if (!digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return fmt::format("{} is {}, past the range of a 64-bit integer (-9223372036854775808 to 9223372036854775807)",
                       what, text);
  return fmt::format("{} must be an integer, found '{}'", what, text);
}

std::string read_whole_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(SourceLocation{file.string()}, "cannot open the file for reading");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---------------------------------------------------------------- YAML with locations

YAML::Node Document::root() const {
  try {
    return YAML::Load(text_);
  } catch (const YAML::Exception& error) {
    SourceLocation where{file_.string()};
    if (!error.mark.is_null()) where = {file_.string(), error.mark.line + 1, error.mark.column + 1};
    throw InputError(where, "malformed YAML: " + error.msg);
  }
}

SourceLocation Document::where(const YAML::Node& node) const {
  YAML::Mark mark = node.Mark();
  if (mark.is_null()) return SourceLocation{file_.string()};
  return SourceLocation{file_.string(), mark.line + 1, mark.column + 1};
}

SourceLocation Document::text_start(const YAML::Node& node) const {
  SourceLocation location = where(node);
  int position = node.Mark().pos;
  if (location.line > 0 && position >= 0 && static_cast<std::size_t>(position) < text_.size() &&
      (text_[position] == '"' || text_[position] == '\'')) {
    ++location.column;
  }
  return location;
}

void Document::fail(const YAML::Node& node, const std::string& message) const {
  throw InputError(where(node), message);
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

ScalarValue classify(const YAML::Node& node) {
  ScalarValue scalar;
  if (!node.IsScalar()) return scalar;
  scalar.text = node.Scalar();
  if (node.Tag() != "?") {
    scalar.kind = ScalarValue::Kind::string;
    return scalar;
  }
  const std::string& text = scalar.text;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return scalar;
  if (text == "true" || text == "True" || text == "TRUE" || text == "false" || text == "False" || text == "FALSE") {
    scalar.kind = ScalarValue::Kind::boolean;
    scalar.boolean = text.front() == 't' || text.front() == 'T';
  } else if (auto integer = parse_integer_text(text)) {
    scalar.kind = ScalarValue::Kind::integer;
    scalar.integer = *integer;
  } else if (auto real = parse_real_text(text)) {
    scalar.kind = ScalarValue::Kind::real;
    scalar.real = *real;
  } else {
    scalar.kind = ScalarValue::Kind::string;
  }
  return scalar;
}

Fields::Fields(const Document& document, const YAML::Node& node, std::string what)
    : document_(document), node_(node), what_(std::move(what)) {
  if (node.IsNull()) return;
  if (!node.IsMap()) {
    document.fail(node, fmt::format("{} must be a mapping of key: value pairs, found {}", what_, describe(node)));
  }
  for (auto iterator = node.begin(); iterator != node.end(); ++iterator) {
    YAML::Node key = iterator->first;
    if (!key.IsScalar()) document.fail(key, fmt::format("a key of {} is {}; keys must be names", what_, describe(key)));
    for (const Entry& earlier : entries_) {
      if (earlier.key == key.Scalar()) {
        document.fail(key, fmt::format("key '{}' appears twice in {} (first at line {})", key.Scalar(), what_,
                                       document.where(earlier.key_node).line));
      }
    }
    entries_.push_back({key.Scalar(), key, iterator->second});
  }
}

void Fields::allow_only(std::initializer_list<const char*> keys) const {
  std::vector<std::string> known(keys.begin(), keys.end());
  for (const Entry& entry : entries_) {
    if (!contains(known, entry.key)) {
      document_.fail(entry.key_node, fmt::format("unknown key '{}' in {}{}; known keys: {}", entry.key, what_,
                                                 did_you_mean(entry.key, known), comma_list(known)));
    }
  }
}

std::optional<YAML::Node> Fields::find(std::string_view key) const {
  if (const Entry* entry = find_entry(key)) return entry->value;
  return std::nullopt;
}

const Fields::Entry* Fields::find_entry(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.key == key) return &entry;
  }
  return nullptr;
}

YAML::Node Fields::require(std::string_view key) const {
  if (auto value = find(key)) return *value;
  document_.fail(node_, fmt::format("{} has no '{}': it is required", what_, key));
}

// ---------------------------------------------------------------- one value of a known kind

std::vector<YAML::Node> read_list(const Document& document, const YAML::Node& node, std::string_view what) {
  std::vector<YAML::Node> items;
  if (node.IsNull()) return items;
  if (!node.IsSequence()) {
    std::string hint = node.IsScalar() ? fmt::format("; write [{}] for a list of one", node.Scalar()) : "";
    document.fail(node, fmt::format("{} must be a list, found {}{}", what, describe(node), hint));
  }
  for (auto iterator = node.begin(); iterator != node.end(); ++iterator) items.push_back(*iterator);
  return items;
}

std::string read_text(const Document& document, const YAML::Node& node, std::string_view what) {
  if (node.IsNull()) document.fail(node, fmt::format("{} is empty: give a value", what));
  if (!node.IsScalar()) document.fail(node, fmt::format("{} must be a single value, found {}", what, describe(node)));
  return node.Scalar();
}

std::string read_name(const Document& document, const YAML::Node& node, std::string_view what) {
  std::string name = read_text(document, node, what);
  if (!is_identifier(name)) {
    document.fail(node, fmt::format("{} '{}' is not a name: use letters, digits and _, not starting with a digit",
                                    what, name));
  }
  if (is_reserved(name)) {
    document.fail(node, fmt::format("{} '{}' is a word of the expression language; choose another name", what, name));
  }
  return name;
}

std::int64_t read_integer(const Document& document, const YAML::Node& node, std::string_view what) {
  read_text(document, node, what);
  ScalarValue scalar = classify(node);
  if (scalar.kind != ScalarValue::Kind::integer) {
    document.fail(node, not_an_integer(what, scalar.text));
  }
  return scalar.integer;
}

double read_number(const Document& document, const YAML::Node& node, std::string_view what) {
  read_text(document, node, what);
  ScalarValue scalar = classify(node);
  double value = scalar.kind == ScalarValue::Kind::integer ? static_cast<double>(scalar.integer) : scalar.real;
  if ((scalar.kind != ScalarValue::Kind::integer && scalar.kind != ScalarValue::Kind::real) || !std::isfinite(value)) {
    document.fail(node, fmt::format("{} must be a finite number, found '{}'", what, scalar.text));
  }
  return value;
}

bool read_bool(const Document& document, const YAML::Node& node, std::string_view what) {
  read_text(document, node, what);
  ScalarValue scalar = classify(node);
  if (scalar.kind != ScalarValue::Kind::boolean) {
    document.fail(node, fmt::format("{} must be true or false, found '{}'", what, scalar.text));
  }
  return scalar.boolean;
}

std::string read_choice(const Document& document, const YAML::Node& node, std::string_view what,
                        const std::vector<std::string>& choices) {
  std::string text = read_text(document, node, what);
  if (!contains(choices, text)) {
    document.fail(node, fmt::format("{} '{}' is not one of {}{}", what, text, comma_list(choices),
                                    did_you_mean(text, choices)));
  }
  return text;
}

Expression read_expression(const Document& document, const YAML::Node& node, std::string_view what) {
  if (node.IsNull()) document.fail(node, fmt::format("{} is empty: give an expression", what));
  if (!node.IsScalar()) {
    document.fail(node, fmt::format("{} must be an expression, found {}", what, describe(node)));
  }
  ScalarValue scalar = classify(node);
  std::string text = scalar.text;
  // The expression language spells booleans the Python way; the replacement keeps the length, so columns hold.
  if (scalar.kind == ScalarValue::Kind::boolean) text = scalar.boolean ? "True" : "False";
  return Expression::parse(text, document.text_start(node));
}

std::vector<Expression> read_expression_list(const Document& document, const YAML::Node& node,
                                             const std::string& what) {
  std::vector<Expression> expressions;
  std::vector<YAML::Node> items = read_list(document, node, what);
  for (std::size_t index = 0; index < items.size(); ++index) {
    const YAML::Node& item = items[index];
    if (node.Style() == YAML::EmitterStyle::Flow && item.IsScalar() && item.Tag() == "?") {
      const std::string& text = item.Scalar();
      if (std::count(text.begin(), text.end(), '(') != std::count(text.begin(), text.end(), ')')) {
        document.fail(item, fmt::format("{}[{}] '{}' has unbalanced parentheses: inside [ ], YAML splits items at "
                                        "commas; quote an expression that contains a comma: [\"f(a, b)\"]",
                                        what, index, text));
      }
    }
    expressions.push_back(read_expression(document, item, fmt::format("{}[{}]", what, index)));
  }
  return expressions;
}

}  // namespace kernlathe::spec_loading
