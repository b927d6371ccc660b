#include "tuner/spec/spec_loader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <system_error>

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

// A parameter with more values than this is almost certainly a typo in a range (a missing step, a bound off by
// a factor of 1000), and enumerating it would exhaust memory before saying so.
constexpr std::int64_t max_values_per_parameter = 1 << 20;

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  std::string suggestion = expr::closest_match(name, candidates);
  return suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion);
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

bool is_identifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front()))) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Words of the expression language that cannot name a value.
bool is_reserved(std::string_view text) {
  for (std::string_view word : {"and", "or", "not", "if", "else", "in", "True", "False", "None"}) {
    if (text == word) return true;
  }
  return false;
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
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

std::string read_whole_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(SourceLocation{file.string()}, "cannot open the file for reading");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---------------------------------------------------------------- YAML with locations

// One YAML text and the file it came from: turns node marks into file:line:column.
class Document {
 public:
  Document(const std::string& text, const fs::path& file) : text_(text), file_(file) {}

  YAML::Node root() const {
    try {
      return YAML::Load(text_);
    } catch (const YAML::Exception& error) {
      SourceLocation where{file_.string()};
      if (!error.mark.is_null()) where = {file_.string(), error.mark.line + 1, error.mark.column + 1};
      throw InputError(where, "malformed YAML: " + error.msg);
    }
  }

  const fs::path& file() const { return file_; }

  SourceLocation where(const YAML::Node& node) const {
    YAML::Mark mark = node.Mark();
    if (mark.is_null()) return SourceLocation{file_.string()};
    return SourceLocation{file_.string(), mark.line + 1, mark.column + 1};
  }

  // Where the first character of a scalar's text is: one past the opening quote of a quoted scalar, so an
  // expression's own column offsets land on the right character.
  SourceLocation text_start(const YAML::Node& node) const {
    SourceLocation location = where(node);
    int position = node.Mark().pos;
    if (location.line > 0 && position >= 0 && static_cast<std::size_t>(position) < text_.size() &&
        (text_[position] == '"' || text_[position] == '\'')) {
      ++location.column;
    }
    return location;
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) const {
    throw InputError(where(node), message);
  }

 private:
  const std::string& text_;
  fs::path file_;
};

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

// A scalar as YAML 1.2's core schema reads it when plain; quoted scalars are always strings.
struct ScalarValue {
  enum class Kind { null, boolean, integer, real, string } kind = Kind::null;
  std::string text;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
};

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

// The keys of one mapping, in document order, checked for duplicates. A null node (a key with nothing after
// the colon) reads as an empty mapping, so `loader:` and `loader: {}` mean the same.
class Fields {
 public:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };

  Fields(const Document& document, const YAML::Node& node, std::string what)
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

  void allow_only(std::initializer_list<const char*> keys) const {
    std::vector<std::string> known(keys.begin(), keys.end());
    for (const Entry& entry : entries_) {
      if (!contains(known, entry.key)) {
        document_.fail(entry.key_node, fmt::format("unknown key '{}' in {}{}; known keys: {}", entry.key, what_,
                                                   did_you_mean(entry.key, known), comma_list(known)));
      }
    }
  }

  std::optional<YAML::Node> find(std::string_view key) const {
    for (const Entry& entry : entries_) {
      if (entry.key == key) return entry.value;
    }
    return std::nullopt;
  }

  const Entry* find_entry(std::string_view key) const {
    for (const Entry& entry : entries_) {
      if (entry.key == key) return &entry;
    }
    return nullptr;
  }

  YAML::Node require(std::string_view key) const {
    if (auto value = find(key)) return *value;
    document_.fail(node_, fmt::format("{} has no '{}': it is required", what_, key));
  }

  const std::vector<Entry>& entries() const { return entries_; }
  const YAML::Node& node() const { return node_; }

 private:
  const Document& document_;
  YAML::Node node_;
  std::string what_;
  std::vector<Entry> entries_;
};

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
    document.fail(node, fmt::format("{} must be an integer, found '{}'", what, scalar.text));
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

// One of a fixed set of words, with a suggestion when it is close to one.
std::string read_choice(const Document& document, const YAML::Node& node, std::string_view what,
                        const std::vector<std::string>& choices) {
  std::string text = read_text(document, node, what);
  if (!contains(choices, text)) {
    document.fail(node, fmt::format("{} '{}' is not one of {}{}", what, text, comma_list(choices),
                                    did_you_mean(text, choices)));
  }
  return text;
}

// YAML reads `0` and `true` as numbers and booleans; an expression field takes them as expression text.
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

// Expressions listed in [ ]: YAML ends a plain item at each comma, so `[ceil_div(N, 256)]` arrives as two
// broken items. Say so instead of reporting the parser's confusion about `ceil_div(N`.
std::vector<Expression> read_expression_list(const Document& document, const YAML::Node& node, const std::string& what) {
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

// ---------------------------------------------------------------- spaces

std::string value_list(const std::vector<Value>& values) {
  std::string text;
  for (const Value& value : values) text += (text.empty() ? "" : ", ") + expr::to_string(value);
  return text;
}

std::string type_word(ParameterType type) {
  switch (type) {
    case ParameterType::integer: return "int";
    case ParameterType::boolean: return "bool";
    case ParameterType::enumeration: return "enum";
  }
  return "int";
}

Value read_parameter_value(const Document& document, const YAML::Node& node, ParameterType type,
                           std::string_view what) {
  std::string text = read_text(document, node, what);
  ScalarValue scalar = classify(node);
  switch (type) {
    case ParameterType::integer:
      if (scalar.kind != ScalarValue::Kind::integer) {
        std::string hint = scalar.kind == ScalarValue::Kind::string ? "; declare type: enum for string values" : "";
        document.fail(node, fmt::format("{} must be an integer, found '{}'{}", what, text, hint));
      }
      return scalar.integer;
    case ParameterType::boolean:
      if (scalar.kind != ScalarValue::Kind::boolean) {
        document.fail(node, fmt::format("{} must be true or false, found '{}'", what, text));
      }
      return scalar.boolean;
    case ParameterType::enumeration:
      if (scalar.kind != ScalarValue::Kind::string) {
        document.fail(node, fmt::format("{} '{}' is not a string; enum values are strings: quote it (\"{}\") or "
                                        "declare type: int",
                                        what, text, text));
      }
      // The template sees an enumeration value v of parameter P as the macro P_v.
      if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
          })) {
        document.fail(node, fmt::format("{} '{}' must consist of letters, digits and _: the template sees it as a "
                                        "macro suffix",
                                        what, text));
      }
      return text;
  }
  return text;
}

std::vector<Value> read_range(const Document& document, const YAML::Node& node, const std::string& what) {
  Fields fields(document, node, what);
  fields.allow_only({"from", "to", "step"});
  std::int64_t from = read_integer(document, fields.require("from"), what + ".from");
  std::int64_t to = read_integer(document, fields.require("to"), what + ".to");
  std::optional<YAML::Node> step_node = fields.find("step");
  std::int64_t step = step_node ? read_integer(document, *step_node, what + ".step") : 1;
  const YAML::Node& blame = step_node ? *step_node : node;
  if (step == 0) {
    document.fail(blame, fmt::format("{} has step 0, which never reaches {}; use a positive step to count up, a "
                                     "negative one to count down",
                                     what, to));
  }
  if ((to > from && step < 0) || (to < from && step > 0)) {
    document.fail(blame, fmt::format("{} goes from {} to {} but its step is {}, which moves away from {}; use step: {}",
                                     what, from, to, step, to, step == INT64_MIN ? step : -step));
  }
  __int128 count = (static_cast<__int128>(to) - from) / step + 1;
  if (count > max_values_per_parameter) {
    document.fail(node, fmt::format("{} gives {} values, more than the {} a parameter may have; check the bounds "
                                    "and step",
                                    what, static_cast<long long>(std::min<__int128>(count, INT64_MAX)),
                                    max_values_per_parameter));
  }
  std::vector<Value> values;
  for (__int128 index = 0; index < count; ++index) values.emplace_back(static_cast<std::int64_t>(from + index * step));
  return values;
}

std::int64_t read_power_of_two(const Document& document, const YAML::Node& node, const std::string& what) {
  std::int64_t value = read_integer(document, node, what);
  if (value <= 0) document.fail(node, fmt::format("{} is {}; powers of two start at 1", what, value));
  if (!std::has_single_bit(static_cast<std::uint64_t>(value))) {
    std::uint64_t below = std::bit_floor(static_cast<std::uint64_t>(value));
    document.fail(node, fmt::format("{} is {}, not a power of two; the nearest are {} and {}", what, value, below,
                                    below * 2));
  }
  return value;
}

std::vector<Value> read_pow2(const Document& document, const YAML::Node& node, const std::string& what) {
  Fields fields(document, node, what);
  fields.allow_only({"from", "to"});
  std::int64_t from = read_power_of_two(document, fields.require("from"), what + ".from");
  std::int64_t to = read_power_of_two(document, fields.require("to"), what + ".to");
  std::vector<Value> values;
  if (from <= to) {
    for (std::int64_t value = from;; value *= 2) {
      values.emplace_back(value);
      if (value == to) break;
    }
  } else {
    for (std::int64_t value = from;; value /= 2) {
      values.emplace_back(value);
      if (value == to) break;
    }
  }
  return values;
}

Parameter read_parameter(const Document& document, const YAML::Node& node, const std::vector<Parameter>& earlier) {
  Fields fields(document, node, "a parameter");
  fields.allow_only({"name", "type", "values", "range", "pow2", "default"});
  Parameter parameter;
  parameter.where = document.where(node);
  YAML::Node name_node = fields.require("name");
  parameter.name = read_name(document, name_node, "parameter name");
  for (const Parameter& other : earlier) {
    if (other.name == parameter.name) {
      document.fail(name_node, fmt::format("parameter '{}' is declared twice (first at line {})", parameter.name,
                                           other.where.line));
    }
  }
  if (contains(device_property_names(), parameter.name)) {
    document.fail(name_node, fmt::format("parameter '{}' has the name of a device property; rename the parameter",
                                         parameter.name));
  }
  const std::string what = fmt::format("parameter '{}'", parameter.name);

  if (auto type_node = fields.find("type")) {
    for (auto [spelling, ours] : {std::pair{"integer", "int"}, std::pair{"boolean", "bool"},
                                  std::pair{"enumeration", "enum"}, std::pair{"string", "enum"}}) {
      if (type_node->IsScalar() && type_node->Scalar() == spelling) {
        document.fail(*type_node, fmt::format("{} type '{}' is not one of int, bool, enum (did you mean '{}'?)", what,
                                              spelling, ours));
      }
    }
    std::string type = read_choice(document, *type_node, what + " type", {"int", "bool", "enum"});
    parameter.type = type == "bool"   ? ParameterType::boolean
                     : type == "enum" ? ParameterType::enumeration
                                      : ParameterType::integer;
  }

  const Fields::Entry* values_entry = fields.find_entry("values");
  const Fields::Entry* range_entry = fields.find_entry("range");
  const Fields::Entry* pow2_entry = fields.find_entry("pow2");
  int sources = (values_entry != nullptr) + (range_entry != nullptr) + (pow2_entry != nullptr);
  if (parameter.type != ParameterType::integer && (range_entry || pow2_entry)) {
    const Fields::Entry* wrong = range_entry ? range_entry : pow2_entry;
    document.fail(wrong->key_node, fmt::format("{} is {}; range and pow2 are for int parameters, list its values "
                                               "instead: values: [...]",
                                               what, type_word(parameter.type)));
  }
  if (sources > 1) {
    const Fields::Entry* second = pow2_entry ? pow2_entry : range_entry;
    document.fail(second->key_node, fmt::format("{} gives more than one of values, range and pow2; keep one", what));
  }
  if (values_entry) {
    std::vector<YAML::Node> items = read_list(document, values_entry->value, what + " values");
    if (items.empty()) {
      document.fail(values_entry->value, fmt::format("{} has an empty value list; give at least one value", what));
    }
    for (const YAML::Node& item : items) {
      Value value = read_parameter_value(document, item, parameter.type, what + " value");
      if (std::find(parameter.values.begin(), parameter.values.end(), value) != parameter.values.end()) {
        document.fail(item, fmt::format("value {} appears twice in {}", expr::to_string(value), what));
      }
      parameter.values.push_back(std::move(value));
    }
  } else if (range_entry) {
    parameter.values = read_range(document, range_entry->value, what + " range");
  } else if (pow2_entry) {
    parameter.values = read_pow2(document, pow2_entry->value, what + " pow2");
  } else if (parameter.type == ParameterType::boolean) {
    parameter.values = {false, true};
  } else if (parameter.type == ParameterType::enumeration) {
    document.fail(node, fmt::format("{} is an enum without values; add values: [first, second, ...]", what));
  } else {
    document.fail(node, fmt::format("{} has no values; add one of values: [...], range: {{from, to, step}} or "
                                    "pow2: {{from, to}}",
                                    what));
  }

  if (auto default_node = fields.find("default")) {
    parameter.default_value = read_parameter_value(document, *default_node, parameter.type, what + " default");
    if (std::find(parameter.values.begin(), parameter.values.end(), parameter.default_value) ==
        parameter.values.end()) {
      std::string values = parameter.values.size() <= 16 ? value_list(parameter.values)
                                                          : fmt::format("{} values from {} to {}",
                                                                        parameter.values.size(),
                                                                        expr::to_string(parameter.values.front()),
                                                                        expr::to_string(parameter.values.back()));
      document.fail(*default_node, fmt::format("default {} of {} is not one of its values ({})",
                                               expr::to_string(parameter.default_value), what, values));
    }
  } else {
    parameter.default_value = parameter.values.front();
  }
  return parameter;
}

Space read_space(const Document& document, const YAML::Node& node) {
  Fields fields(document, node, "the space");
  fields.allow_only({"name", "parameters", "derived", "constraints"});
  Space space;
  if (auto name = fields.find("name")) space.name = read_text(document, *name, "space name");
  if (auto parameters = fields.find("parameters")) {
    for (const YAML::Node& item : read_list(document, *parameters, "parameters")) {
      space.parameters.push_back(read_parameter(document, item, space.parameters));
    }
  }
  if (auto derived = fields.find("derived")) {
    Fields entries(document, *derived, "derived");
    std::vector<std::string> device_names = device_property_names();
    for (const Fields::Entry& entry : entries.entries()) {
      std::string name = read_name(document, entry.key_node, "derived value name");
      for (const Parameter& parameter : space.parameters) {
        if (parameter.name == name) {
          document.fail(entry.key_node, fmt::format("derived value '{}' has the name of the parameter declared at "
                                                    "line {}; rename one",
                                                    name, parameter.where.line));
        }
      }
      if (contains(device_names, name)) {
        document.fail(entry.key_node, fmt::format("derived value '{}' has the name of a device property; rename it",
                                                  name));
      }
      space.derived.push_back({name, read_expression(document, entry.value, fmt::format("derived value '{}'", name))});
    }
  }
  if (auto constraints = fields.find("constraints")) {
    for (Expression& constraint : read_expression_list(document, *constraints, "constraints")) {
      space.constraints.push_back({std::move(constraint)});
    }
  }
  return space;
}

Space parse_space_document(const std::string& yaml_text, const fs::path& file) {
  Document document(yaml_text, file);
  YAML::Node root = document.root();
  if (root.IsNull()) throw InputError(SourceLocation{file.string()}, "the space file is empty");
  Space space = read_space(document, root);
  space.file = file;
  return space;
}

// ---------------------------------------------------------------- name resolution

// Binds a copy (the model keeps expressions unbound: each stage binds against its own scope) so that
// unknown names fail now, at load time.
void check_resolves(const Expression& expression, const expr::Scope& scope) {
  if (expression.empty()) return;
  Expression copy = expression;
  try {
    copy.bind(scope);
  } catch (const InputError& error) {
    const SourceLocation& where = expression.where();
    if (!error.where().file.empty() || where.file.empty() || std::string_view(error.what()).starts_with(where.file)) {
      throw;
    }
    throw InputError(where, error.what());
  }
}

// Buffer sizes and scalar arguments are fixed once per problem: memory is allocated and filled before any
// configuration runs, so they may not depend on what is being tuned.
void check_fixed_per_problem(const Expression& expression, const expr::Scope& problem_scope, const Space& space,
                             std::string_view what) {
  for (const std::string& name : expression.names()) {
    bool is_parameter = std::any_of(space.parameters.begin(), space.parameters.end(),
                                    [&](const Parameter& parameter) { return parameter.name == name; });
    bool is_derived = std::any_of(space.derived.begin(), space.derived.end(),
                                  [&](const DerivedValue& derived) { return derived.name == name; });
    if (is_parameter || is_derived) {
      throw InputError(expression.where(),
                       fmt::format("{} uses {} '{}', but it may only use problem symbols and device properties: "
                                   "arguments are allocated and filled once per problem, not per configuration",
                                   what, is_parameter ? "tuning parameter" : "derived value", name));
    }
  }
  check_resolves(expression, problem_scope);
}

void check_names(const KernelSpec& spec) {
  const Space& space = spec.space;
  expr::Scope scope;
  for (const std::string& name : device_property_names()) scope.add(name);
  for (const auto& [symbol, value] : spec.problem) scope.add(symbol);
  const expr::Scope problem_scope = scope;

  auto is_problem_symbol = [&](std::string_view name) {
    return std::any_of(spec.problem.begin(), spec.problem.end(), [&](const auto& entry) { return entry.first == name; });
  };
  for (const Parameter& parameter : space.parameters) {
    if (is_problem_symbol(parameter.name)) {
      throw InputError(parameter.where, fmt::format("parameter '{}' has the name of a problem symbol of {}; rename one",
                                                    parameter.name, spec.file.string()));
    }
    scope.add(parameter.name);
  }
  for (const DerivedValue& derived : space.derived) {
    if (is_problem_symbol(derived.name)) {
      throw InputError(derived.expression.where(),
                       fmt::format("derived value '{}' has the name of a problem symbol of {}; rename one",
                                   derived.name, spec.file.string()));
    }
    // A derived value reads only what is declared before it, so evaluation in declared order is well-defined.
    for (const std::string& name : derived.expression.names()) {
      bool declared_later = scope.slot_of(name) < 0 &&
                            std::any_of(space.derived.begin(), space.derived.end(),
                                        [&](const DerivedValue& other) { return other.name == name; });
      if (declared_later) {
        throw InputError(derived.expression.where(),
                         fmt::format("derived value '{}' uses '{}', which is declared after it; a derived value may "
                                     "only use those declared before it: move '{}' up",
                                     derived.name, name, name));
      }
    }
    check_resolves(derived.expression, scope);
    scope.add(derived.name);
  }
  for (const Constraint& constraint : space.constraints) check_resolves(constraint.expression, scope);
  for (const Expression& argument : spec.template_arguments) check_resolves(argument, scope);
  for (const Expression& dimension : spec.launch.grid) check_resolves(dimension, scope);
  for (const Expression& dimension : spec.launch.block) check_resolves(dimension, scope);
  check_resolves(spec.launch.dynamic_shared_bytes, scope);
  check_resolves(spec.metrics.flops, scope);
  check_resolves(spec.metrics.bytes, scope);
  for (const Argument& argument : spec.arguments) {
    if (argument.is_buffer) {
      check_fixed_per_problem(argument.count, problem_scope, space, fmt::format("the count of buffer '{}'", argument.name));
    } else if (argument.tensor_map) {
      // The tensor's shape is the buffer's, fixed per problem; the box and swizzle follow the tiles being tuned.
      for (const Expression& dimension : argument.tensor_map->dims) {
        check_fixed_per_problem(dimension, problem_scope, space, fmt::format("a dimension of tensor map '{}'", argument.name));
      }
      for (const Expression& box : argument.tensor_map->box) check_resolves(box, scope);
      check_resolves(argument.tensor_map->swizzle, scope);
    } else {
      check_fixed_per_problem(argument.value, problem_scope, space, fmt::format("the value of scalar '{}'", argument.name));
    }
  }
  if (spec.baseline.present()) {
    check_fixed_per_problem(spec.baseline.m, problem_scope, space, "baseline.m");
    check_fixed_per_problem(spec.baseline.n, problem_scope, space, "baseline.n");
    check_fixed_per_problem(spec.baseline.k, problem_scope, space, "baseline.k");
  }
}

// ---------------------------------------------------------------- kernel specs

Dtype read_dtype(const Document& document, const YAML::Node& node, std::string_view what) {
  std::string text = read_text(document, node, what);
  if (auto dtype = parse_dtype(text)) return *dtype;
  // C and NumPy spellings are what people type first; point them at ours.
  static const std::vector<std::pair<std::string_view, std::string_view>> spellings = {
      {"float", "f32"},   {"float32", "f32"},        {"double", "f64"},   {"float64", "f64"}, {"half", "f16"},
      {"float16", "f16"}, {"__half", "f16"},         {"bfloat16", "bf16"}, {"__nv_bfloat16", "bf16"},
      {"int", "i32"},     {"int32", "i32"},          {"int32_t", "i32"},  {"unsigned", "u32"}, {"uint32", "u32"},
      {"uint32_t", "u32"}, {"int64", "i64"},         {"int64_t", "i64"},  {"long", "i64"},     {"int8", "i8"},
      {"int8_t", "i8"},   {"char", "i8"},            {"uint8", "u8"},     {"uint8_t", "u8"}};
  std::vector<std::string> names;
  for (Dtype dtype : {Dtype::f16, Dtype::bf16, Dtype::f32, Dtype::f64, Dtype::i8, Dtype::u8, Dtype::i32, Dtype::u32,
                      Dtype::i64}) {
    names.push_back(dtype_name(dtype));
  }
  std::string suggestion;
  for (const auto& [spelling, name] : spellings) {
    if (text == spelling) suggestion = fmt::format(" (did you mean '{}'?)", name);
  }
  if (suggestion.empty()) suggestion = did_you_mean(text, names);
  document.fail(node, fmt::format("{} '{}' is not a dtype{}; dtypes are {}", what, text, suggestion,
                                  comma_list(names)));
}

Initialisation read_initialisation(const Document& document, const YAML::Node& node, const std::string& what) {
  Fields fields(document, node, what);
  fields.allow_only({"random", "constant", "sequence"});
  if (fields.entries().size() != 1) {
    document.fail(node, fmt::format("{} must name exactly one of random: {{seed, low, high}}, constant: value or "
                                    "sequence: {{start, step}}",
                                    what));
  }
  const Fields::Entry& entry = fields.entries().front();
  Initialisation init;
  if (entry.key == "random") {
    init.kind = Initialisation::Kind::random;
    Fields random(document, entry.value, what + ".random");
    random.allow_only({"seed", "low", "high"});
    if (auto seed = random.find("seed")) {
      std::int64_t value = read_integer(document, *seed, what + ".random.seed");
      if (value < 0) document.fail(*seed, fmt::format("{}.random.seed is {}; seeds are not negative", what, value));
      init.seed = static_cast<std::uint64_t>(value);
    }
    if (auto low = random.find("low")) init.low = read_number(document, *low, what + ".random.low");
    if (auto high = random.find("high")) init.high = read_number(document, *high, what + ".random.high");
    if (!(init.low < init.high)) {
      document.fail(entry.value, fmt::format("{}.random draws from [low, high) but low {} is not below high {}", what,
                                             init.low, init.high));
    }
  } else if (entry.key == "constant") {
    init.kind = Initialisation::Kind::constant;
    init.value = read_number(document, entry.value, what + ".constant");
  } else {
    init.kind = Initialisation::Kind::sequence;
    Fields sequence(document, entry.value, what + ".sequence");
    sequence.allow_only({"start", "step"});
    if (auto start = sequence.find("start")) init.start = read_number(document, *start, what + ".sequence.start");
    if (auto step = sequence.find("step")) init.step = read_number(document, *step, what + ".sequence.step");
  }
  return init;
}

// type: tensor_map, buffer: <an earlier buffer argument>, dims: [...], box: [...], swizzle: <bytes>
Argument read_tensor_map_argument(const Document& document, Fields& fields, Argument argument,
                                  const std::vector<Argument>& earlier) {
  const std::string what = fmt::format("tensor map '{}'", argument.name);
  for (const char* key : {"count", "init", "role", "value"}) {
    if (const Fields::Entry* entry = fields.find_entry(key)) {
      document.fail(entry->key_node, fmt::format("{}: {} does not apply to a tensor map; it describes the buffer "
                                                 "named by buffer:",
                                                 what, key));
    }
  }
  TensorMapDescription map;
  YAML::Node buffer_node = fields.require("buffer");
  map.buffer = read_name(document, buffer_node, what + " buffer");
  auto buffer = std::find_if(earlier.begin(), earlier.end(),
                             [&](const Argument& other) { return other.name == map.buffer && other.is_buffer; });
  if (buffer == earlier.end()) {
    std::vector<std::string> buffers;
    for (const Argument& other : earlier)
      if (other.is_buffer) buffers.push_back(other.name);
    document.fail(buffer_node, fmt::format("{} describes buffer '{}', which is not a buffer argument declared before "
                                           "it{}; buffers so far: {}",
                                           what, map.buffer, did_you_mean(map.buffer, buffers),
                                           buffers.empty() ? "none" : comma_list(buffers)));
  }
  argument.dtype = buffer->dtype;
  YAML::Node dims_node = fields.require("dims");
  YAML::Node box_node = fields.require("box");
  map.dims = read_expression_list(document, dims_node, what + " dims");
  map.box = read_expression_list(document, box_node, what + " box");
  if (map.dims.empty() || map.dims.size() > 5) {
    document.fail(dims_node, fmt::format("{} has {} dims; a tensor map has rank 1 to 5", what, map.dims.size()));
  }
  if (map.box.size() != map.dims.size()) {
    document.fail(box_node, fmt::format("{} has {} box sizes for {} dims; give one per dimension, innermost first",
                                        what, map.box.size(), map.dims.size()));
  }
  map.swizzle = Expression::parse("0");
  if (auto swizzle = fields.find("swizzle")) map.swizzle = read_expression(document, *swizzle, what + " swizzle");
  argument.is_buffer = false;
  argument.tensor_map = std::move(map);
  return argument;
}

Argument read_argument(const Document& document, const YAML::Node& node, std::size_t index,
                       const std::vector<Argument>& earlier) {
  Fields fields(document, node, "an argument");
  fields.allow_only({"name", "type", "count", "init", "role", "value", "buffer", "dims", "box", "swizzle", "scratch"});
  Argument argument;
  argument.where = document.where(node);
  YAML::Node name_node = fields.require("name");
  argument.name = read_name(document, name_node, "argument name");
  for (const Argument& other : earlier) {
    if (other.name == argument.name) {
      document.fail(name_node, fmt::format("argument '{}' is declared twice (first at line {})", argument.name,
                                           other.where.line));
    }
  }
  const std::string what = fmt::format("argument '{}'", argument.name);
  YAML::Node type_node = fields.require("type");
  if (type_node.IsScalar() && type_node.Scalar() == "tensor_map") {
    return read_tensor_map_argument(document, fields, std::move(argument), earlier);
  }
  for (const char* key : {"buffer", "dims", "box", "swizzle"}) {
    if (const Fields::Entry* entry = fields.find_entry(key)) {
      document.fail(entry->key_node, fmt::format("{}: {} applies to tensor maps only (type: tensor_map)", what, key));
    }
  }
  const Fields::Entry* count = fields.find_entry("count");
  const Fields::Entry* value = fields.find_entry("value");
  if (count && value) {
    document.fail(value->key_node, fmt::format("{} has both count (a buffer) and value (a scalar); keep one", what));
  }
  if (!count && !value) {
    document.fail(node, fmt::format("{} needs count: <elements> for a buffer or value: <expression> for a scalar",
                                    what));
  }
  argument.is_buffer = count != nullptr;
  if (!argument.is_buffer) {
    for (const char* key : {"init", "role", "scratch"}) {
      if (const Fields::Entry* entry = fields.find_entry(key)) {
        document.fail(entry->key_node, fmt::format("{} is a scalar (it has value:); {} applies to buffers only", what,
                                                   key));
      }
    }
  }
  argument.dtype = read_dtype(document, fields.require("type"), what + " type");
  if (argument.is_buffer) {
    argument.count = read_expression(document, count->value, what + " count");
    // Distinct default seeds, so two buffers left at the default do not hold the same numbers.
    argument.init.seed = index + 1;
    if (auto init = fields.find("init")) argument.init = read_initialisation(document, *init, what + " init");
    if (auto role = fields.find("role")) {
      std::string text = read_choice(document, *role, what + " role", {"in", "out", "inout"});
      argument.role = text == "in" ? Role::in : text == "out" ? Role::out : Role::inout;
    }
    if (const Fields::Entry* scratch = fields.find_entry("scratch")) {
      argument.scratch = read_bool(document, scratch->value, what + " scratch");
      // The runtime allocates a scratch buffer zeroed, once, and relies on the kernel leaving it zero.
      bool zeroed = fields.find("init") && argument.init.kind == Initialisation::Kind::constant && argument.init.value == 0;
      if (argument.scratch && (!zeroed || argument.role == Role::out)) {
        document.fail(scratch->key_node, fmt::format("{}: a scratch buffer needs init: {{constant: 0}} and role in or "
                                                     "inout (the kernel must leave it zero after every launch)", what));
      }
    }
  } else {
    argument.value = read_expression(document, value->value, what + " value");
  }
  return argument;
}

std::array<Expression, 3> read_dimensions(const Document& document, const YAML::Node& node, const std::string& what) {
  std::vector<Expression> items = read_expression_list(document, node, what);
  if (items.empty() || items.size() > 3) {
    document.fail(node, fmt::format("{} has {} entries; give 1 to 3 (x, y, z)", what, items.size()));
  }
  std::array<Expression, 3> dimensions;
  for (std::size_t axis = 0; axis < 3; ++axis) {
    dimensions[axis] = axis < items.size() ? items[axis] : Expression::constant(std::int64_t{1});
  }
  return dimensions;
}

LaunchGeometry read_launch(const Document& document, const YAML::Node& node) {
  Fields fields(document, node, "launch");
  fields.allow_only({"grid", "block", "shared_memory"});
  LaunchGeometry launch;
  launch.grid = read_dimensions(document, fields.require("grid"), "launch.grid");
  launch.block = read_dimensions(document, fields.require("block"), "launch.block");
  launch.dynamic_shared_bytes = Expression::constant(std::int64_t{0});
  if (auto shared = fields.find("shared_memory")) {
    launch.dynamic_shared_bytes = read_expression(document, *shared, "launch.shared_memory");
  }
  return launch;
}

Verification read_verification(const Document& document, const YAML::Node& node, const Space& space) {
  Fields fields(document, node, "verify");
  fields.allow_only({"reference", "tolerance", "enabled"});
  Verification verification;
  if (auto enabled = fields.find("enabled")) verification.enabled = read_bool(document, *enabled, "verify.enabled");
  if (auto reference = fields.find("reference"); reference && reference->IsScalar()) {
    if (reference->Scalar() != "baseline") {
      document.fail(*reference, fmt::format("verify.reference is '{}'; write `baseline` (the spec's baseline "
                                            "computes the reference) or a mapping of parameter values",
                                            reference->Scalar()));
    }
    verification.reference_is_baseline = true;
  } else if (reference) {
    std::vector<std::string> parameter_names;
    for (const Parameter& parameter : space.parameters) parameter_names.push_back(parameter.name);
    Fields entries(document, *reference, "verify.reference");
    for (const Fields::Entry& entry : entries.entries()) {
      auto parameter = std::find_if(space.parameters.begin(), space.parameters.end(),
                                    [&](const Parameter& candidate) { return candidate.name == entry.key; });
      if (parameter == space.parameters.end()) {
        document.fail(entry.key_node, fmt::format("verify.reference names '{}', which is not a parameter of the "
                                                  "space{}",
                                                  entry.key, did_you_mean(entry.key, parameter_names)));
      }
      std::string what = fmt::format("verify.reference value of '{}'", entry.key);
      Value value = read_parameter_value(document, entry.value, parameter->type, what);
      if (std::find(parameter->values.begin(), parameter->values.end(), value) == parameter->values.end()) {
        document.fail(entry.value, fmt::format("{} is {}, which is not one of the parameter's values", what,
                                               expr::to_string(value)));
      }
      verification.reference[entry.key] = std::move(value);
    }
  }
  if (auto tolerance = fields.find("tolerance")) {
    Fields entries(document, *tolerance, "verify.tolerance");
    for (const Fields::Entry& entry : entries.entries()) {
      Dtype dtype = read_dtype(document, entry.key_node, "verify.tolerance key");
      std::string what = fmt::format("verify.tolerance.{}", entry.key);
      Fields bounds(document, entry.value, what);
      bounds.allow_only({"relative", "absolute"});
      Tolerance result = verification.tolerance_for(dtype);
      for (auto [key, target] : {std::pair{"relative", &result.relative}, std::pair{"absolute", &result.absolute}}) {
        if (auto bound = bounds.find(key)) {
          *target = read_number(document, *bound, what + "." + key);
          if (*target < 0) document.fail(*bound, fmt::format("{}.{} is negative", what, key));
        }
      }
      verification.tolerance[dtype] = result;
    }
  }
  return verification;
}

// baseline: {library: cublas, operation: gemm, compute: f16, m: M, n: N, k: K, a: a, b: b, c: c, alpha: alpha,
//            beta: beta}
Baseline read_baseline(const Document& document, const YAML::Node& node, const std::vector<Argument>& arguments) {
  Fields fields(document, node, "baseline");
  fields.allow_only({"library", "operation", "compute", "m", "n", "k", "a", "b", "c", "alpha", "beta"});
  Baseline baseline;
  baseline.where = document.where(node);
  read_choice(document, fields.require("library"), "baseline.library", {"cublas"});
  baseline.library = Baseline::Library::cublas;
  baseline.operation = read_choice(document, fields.require("operation"), "baseline.operation", {"gemm"});
  baseline.compute = read_choice(document, fields.require("compute"), "baseline.compute", {"f32", "tf32", "f16", "bf16"});
  baseline.m = read_expression(document, fields.require("m"), "baseline.m");
  baseline.n = read_expression(document, fields.require("n"), "baseline.n");
  baseline.k = read_expression(document, fields.require("k"), "baseline.k");
  // Names another argument of the spec: a buffer for a, b, c; a scalar for alpha, beta.
  auto read_argument_name = [&](const char* key, bool buffer) {
    YAML::Node name_node = fields.require(key);
    std::string name = read_name(document, name_node, fmt::format("baseline.{}", key));
    std::vector<std::string> candidates;
    for (const Argument& argument : arguments)
      if (buffer ? argument.is_buffer : argument.is_scalar()) candidates.push_back(argument.name);
    if (!contains(candidates, name)) {
      document.fail(name_node, fmt::format("baseline.{} is '{}', which is not a {} argument of the spec{}; {} "
                                           "arguments: {}",
                                           key, name, buffer ? "buffer" : "scalar", did_you_mean(name, candidates),
                                           buffer ? "buffer" : "scalar",
                                           candidates.empty() ? "none" : comma_list(candidates)));
    }
    return name;
  };
  baseline.a = read_argument_name("a", true);
  baseline.b = read_argument_name("b", true);
  baseline.c = read_argument_name("c", true);
  baseline.alpha = read_argument_name("alpha", false);
  baseline.beta = read_argument_name("beta", false);
  return baseline;
}

void apply_overrides(KernelSpec& spec, const ProblemOverrides& overrides) {
  std::vector<std::string> symbols;
  for (const auto& [symbol, value] : spec.problem) symbols.push_back(symbol);
  for (const auto& override_entry : overrides) {
    const std::string& name = override_entry.first;
    const std::int64_t value = override_entry.second;
    auto found = std::find_if(spec.problem.begin(), spec.problem.end(),
                              [&](const auto& entry) { return entry.first == name; });
    if (found == spec.problem.end()) {
      std::string known = symbols.empty() ? "it declares none" : "its symbols are " + comma_list(symbols);
      throw InputError(fmt::format("--problem {}={}: {} has no problem symbol '{}'{}; {}", name, value,
                                   spec.file.string(), name, did_you_mean(name, symbols), known));
    }
    found->second = value;
  }
}

// ---------------------------------------------------------------- streamed workloads (issue 7)

// stream: {files: <glob> | generate: <initialisation>, format: npy|raw, items, item_shape, dtype, input, output}
StreamWorkload read_stream(const Document& document, const YAML::Node& node, const std::vector<Argument>& arguments) {
  Fields fields(document, node, "stream");
  fields.allow_only({"files", "generate", "format", "items", "item_shape", "dtype", "input", "output"});
  StreamWorkload stream;
  stream.enabled = true;
  stream.where = document.where(node);
  stream.base_directory = document.file().parent_path();
  auto files = fields.find("files");
  auto generate = fields.find("generate");
  if (files.has_value() == generate.has_value()) {
    document.fail(node, "stream needs exactly one source: files: <glob of .npy or raw files> or generate: "
                        "{random: {seed, low, high}}");
  }
  if (files) {
    stream.source = StreamWorkload::SourceKind::files;
    stream.pattern = read_text(document, *files, "stream.files");
  } else {
    stream.source = StreamWorkload::SourceKind::generated;
    stream.generator = read_initialisation(document, *generate, "stream.generate");
  }
  if (auto format = fields.find("format")) {
    if (!files) document.fail(*format, "stream.format applies to files only; generated items need none");
    stream.format = read_choice(document, *format, "stream.format", {"npy", "raw"}) == "npy"
                        ? StreamWorkload::FileFormat::npy
                        : StreamWorkload::FileFormat::raw;
  }
  stream.items = read_expression(document, fields.require("items"), "stream.items");
  YAML::Node shape_node = fields.require("item_shape");
  stream.item_shape = read_expression_list(document, shape_node, "stream.item_shape");
  if (stream.item_shape.empty()) document.fail(shape_node, "stream.item_shape is empty: give at least one dimension");

  auto find_buffer = [&](const char* key) -> const Argument& {
    YAML::Node name_node = fields.require(key);
    std::string name = read_name(document, name_node, fmt::format("stream.{}", key));
    std::vector<std::string> buffers;
    for (const Argument& argument : arguments) {
      if (argument.is_buffer) buffers.push_back(argument.name);
      if (argument.is_buffer && argument.name == name) return argument;
    }
    document.fail(name_node, fmt::format("stream.{} names '{}', which is not a buffer argument{}; buffers: {}", key,
                                         name, did_you_mean(name, buffers), comma_list(buffers)));
  };
  const Argument& input = find_buffer("input");
  const Argument& output = find_buffer("output");
  stream.input_argument = input.name;
  stream.output_argument = output.name;
  if (input.role != Role::in) {
    document.fail(fields.require("input"),
                  fmt::format("stream.input '{}' must have role: in (a batch arrives in it)", input.name));
  }
  if (output.role == Role::in) {
    document.fail(fields.require("output"),
                  fmt::format("stream.output '{}' has role: in; the output that comes back is written by the kernel",
                              output.name));
  }
  if (input.name == output.name) document.fail(fields.require("output"), "stream.input and stream.output must differ");
  stream.dtype = input.dtype;
  if (auto dtype_node = fields.find("dtype")) {
    Dtype dtype = read_dtype(document, *dtype_node, "stream.dtype");
    if (dtype != input.dtype) {
      document.fail(*dtype_node, fmt::format("stream.dtype {} differs from the dtype {} of its input argument '{}'",
                                             dtype_name(dtype), dtype_name(input.dtype), input.name));
    }
  }
  return stream;
}

// The typed loader settings of a streamed spec; every key is an expression of parameters.
void read_loader_settings(const Document& document, const YAML::Node& node, LoaderSettings& loader) {
  Fields fields(document, node, "loader");
  fields.allow_only({"pinned", "workers", "prefetch", "streams", "batch", "chunk_bytes"});
  auto read = [&](const char* key, Expression& target) {
    if (auto value = fields.find(key)) target = read_expression(document, *value, fmt::format("loader.{}", key));
  };
  read("pinned", loader.pinned);
  read("workers", loader.workers);
  read("prefetch", loader.prefetch);
  read("streams", loader.streams);
  read("batch", loader.batch);
  read("chunk_bytes", loader.chunk_bytes);
}

// Item count and shape are fixed per problem (the dataset is); loader settings may read parameters.
void check_stream_names(const KernelSpec& spec) {
  expr::Scope scope;
  for (const std::string& name : device_property_names()) scope.add(name);
  for (const auto& [symbol, value] : spec.problem) scope.add(symbol);
  const expr::Scope problem_scope = scope;
  for (const Parameter& parameter : spec.space.parameters) scope.add(parameter.name);
  for (const DerivedValue& derived : spec.space.derived) scope.add(derived.name);
  check_fixed_per_problem(spec.stream.items, problem_scope, spec.space, "stream.items");
  for (const Expression& dimension : spec.stream.item_shape)
    check_fixed_per_problem(dimension, problem_scope, spec.space, "stream.item_shape");
  for (const Expression* setting : {&spec.loader.pinned, &spec.loader.workers, &spec.loader.prefetch,
                                    &spec.loader.streams, &spec.loader.batch, &spec.loader.chunk_bytes}) {
    check_resolves(*setting, scope);
  }
}

KernelSpec read_kernel_spec(const Document& document, const YAML::Node& root, const ProblemOverrides& overrides) {
  Fields fields(document, root, "the kernel spec");
  fields.allow_only({"name", "template", "entry", "template_arguments", "arch_specific", "space", "problem",
                     "arguments", "launch", "compile_options", "verify", "metrics", "baseline", "loader", "stream"});
  KernelSpec spec;
  spec.file = document.file();
  const fs::path directory = document.file().parent_path();

  spec.name = read_text(document, fields.require("name"), "name");
  spec.entry_point = read_text(document, fields.require("entry"), "entry");

  YAML::Node template_node = fields.require("template");
  spec.template_file = (directory / read_text(document, template_node, "template")).lexically_normal();
  std::error_code error;
  if (!fs::is_regular_file(spec.template_file, error)) {
    document.fail(template_node, fmt::format("template file '{}' does not exist (paths in a spec are relative to the "
                                             "spec file)",
                                             spec.template_file.string()));
  }

  if (auto problem = fields.find("problem")) {
    std::vector<std::string> device_names = device_property_names();
    Fields entries(document, *problem, "problem");
    for (const Fields::Entry& entry : entries.entries()) {
      std::string symbol = read_name(document, entry.key_node, "problem symbol");
      if (contains(device_names, symbol)) {
        document.fail(entry.key_node, fmt::format("problem symbol '{}' has the name of a device property; rename it",
                                                  symbol));
      }
      spec.problem.emplace_back(symbol, read_integer(document, entry.value, fmt::format("problem symbol '{}'", symbol)));
    }
  }
  apply_overrides(spec, overrides);

  YAML::Node space_node = fields.require("space");
  if (space_node.IsMap()) {
    spec.space = read_space(document, space_node);
  } else {
    fs::path space_file = (directory / read_text(document, space_node, "space")).lexically_normal();
    if (!fs::is_regular_file(space_file, error)) {
      document.fail(space_node, fmt::format("space file '{}' does not exist (paths in a spec are relative to the spec "
                                            "file; or write the space inline as a mapping)",
                                            space_file.string()));
    }
    spec.space = parse_space_document(read_whole_file(space_file), space_file);
  }
  if (spec.space.name.empty()) spec.space.name = spec.name;

  if (auto arguments = fields.find("template_arguments")) {
    spec.template_arguments = read_expression_list(document, *arguments, "template_arguments");
  }
  if (auto arch_specific = fields.find("arch_specific")) {
    spec.needs_arch_specific = read_bool(document, *arch_specific, "arch_specific");
  }
  for (const YAML::Node& item : read_list(document, fields.require("arguments"), "arguments")) {
    spec.arguments.push_back(read_argument(document, item, spec.arguments.size(), spec.arguments));
  }
  spec.launch = read_launch(document, fields.require("launch"));
  if (auto options = fields.find("compile_options")) {
    for (const YAML::Node& item : read_list(document, *options, "compile_options")) {
      spec.compile_options.push_back(read_text(document, item, "a compile option"));
    }
  }
  if (auto verify = fields.find("verify")) spec.verification = read_verification(document, *verify, spec.space);
  if (auto baseline = fields.find("baseline")) spec.baseline = read_baseline(document, *baseline, spec.arguments);
  if (spec.verification.reference_is_baseline && !spec.baseline.present()) {
    document.fail(fields.require("verify"), "verify.reference is `baseline`, but the spec has no baseline: section");
  }
  if (auto metrics = fields.find("metrics")) {
    Fields entries(document, *metrics, "metrics");
    entries.allow_only({"flops", "bytes"});
    if (auto flops = entries.find("flops")) spec.metrics.flops = read_expression(document, *flops, "metrics.flops");
    if (auto bytes = entries.find("bytes")) spec.metrics.bytes = read_expression(document, *bytes, "metrics.bytes");
  }
  if (auto stream = fields.find("stream")) spec.stream = read_stream(document, *stream, spec.arguments);
  if (auto loader = fields.find("loader"); loader && spec.stream.enabled) read_loader_settings(document, *loader, spec.loader);
  if (auto loader = fields.find("loader")) {
    Fields entries(document, *loader, "loader");
    for (const Fields::Entry& entry : entries.entries()) {
      if (!entry.value.IsNull() && !entry.value.IsScalar()) {
        document.fail(entry.value, fmt::format("loader setting '{}' must be a single value, found {}", entry.key,
                                               describe(entry.value)));
      }
      spec.loader.settings[entry.key] = entry.value.IsNull() ? "" : entry.value.Scalar();
    }
  }

  check_names(spec);
  if (spec.stream.enabled) check_stream_names(spec);
  spec.space.streamed = spec.stream.enabled;
  return spec;
}

}  // namespace

// ---------------------------------------------------------------- public entry points

KernelSpec parse_kernel_spec(const std::string& yaml_text, const std::filesystem::path& file,
                             const ProblemOverrides& overrides) {
  Document document(yaml_text, file);
  YAML::Node root = document.root();
  if (root.IsNull()) throw InputError(SourceLocation{file.string()}, "the spec file is empty");
  return read_kernel_spec(document, root, overrides);
}

KernelSpec load_kernel_spec(const std::filesystem::path& file, const ProblemOverrides& overrides) {
  std::error_code error;
  if (!fs::is_regular_file(file, error)) {
    throw InputError(SourceLocation{file.string()}, "kernel spec file does not exist");
  }
  return parse_kernel_spec(read_whole_file(file), file, overrides);
}

Space parse_space(const std::string& yaml_text, const std::filesystem::path& file) {
  return parse_space_document(yaml_text, file);
}

Space load_space(const std::filesystem::path& file) {
  std::error_code error;
  if (!fs::is_regular_file(file, error)) throw InputError(SourceLocation{file.string()}, "space file does not exist");
  return parse_space_document(read_whole_file(file), file);
}

ProblemOverrides parse_problem_overrides(std::string_view text) {
  auto trim = [](std::string_view part) {
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) part.remove_prefix(1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.remove_suffix(1);
    return part;
  };
  ProblemOverrides overrides;
  if (trim(text).empty()) return overrides;
  std::string_view rest = text;
  while (true) {
    std::size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      throw InputError(fmt::format("--problem '{}': '{}' is not NAME=VALUE (write e.g. N=1048576,M=512)", text, item));
    }
    std::string name(trim(item.substr(0, equals)));
    std::string_view value_text = trim(item.substr(equals + 1));
    if (!is_identifier(name)) {
      throw InputError(fmt::format("--problem '{}': '{}' is not a symbol name", text, name));
    }
    std::optional<std::int64_t> value = parse_integer_text(value_text);
    if (!value) {
      throw InputError(fmt::format("--problem '{}': the value of {} is '{}', not an integer", text, name, value_text));
    }
    for (const auto& [earlier, earlier_value] : overrides) {
      if (earlier == name) throw InputError(fmt::format("--problem '{}': {} is given twice", text, name));
    }
    overrides.emplace_back(name, *value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return overrides;
}

std::filesystem::path find_spec(std::string_view name_or_path) {
  std::error_code error;
  const fs::path given(name_or_path);
  if (fs::is_regular_file(given, error)) return given;
  std::string tried = fmt::format("'{}'", given.string());
  const fs::path kernels_directory = "kernels";
  if (!given.has_parent_path() && !given.has_extension() && !name_or_path.empty()) {
    fs::path candidate = kernels_directory / (given.string() + ".yaml");
    if (fs::is_regular_file(candidate, error)) return candidate;
    tried += fmt::format(" and '{}'", candidate.string());
  }
  std::vector<std::string> available;
  for (fs::directory_iterator entry(kernels_directory, error), end; !error && entry != end; entry.increment(error)) {
    if (entry->path().extension() == ".yaml") available.push_back(entry->path().stem().string());
  }
  std::sort(available.begin(), available.end());
  std::string listing = available.empty() ? "no specs in ./kernels"
                                          : "specs in ./kernels: " + comma_list(available);
  throw InputError(fmt::format("no kernel spec '{}': tried {}{}; {}", name_or_path, tried,
                               did_you_mean(given.stem().string(), available), listing));
}

}  // namespace kernlathe
