#include "tuner/spec/space_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>

#include "tuner/spec/path_names.h"

namespace kernlathe::spec_loading {
namespace {

// A parameter with more values than this is almost certainly a typo in a range (a missing step, a bound off by
// a factor of 1000), and enumerating it would exhaust memory before saying so.
constexpr std::int64_t max_values_per_parameter = 1 << 20;

// "1, 2, 4", or for more than 16 values "1024 values from 1 to 1024".
std::string value_list(const std::vector<Value>& values) {
  if (values.size() > 16) {
    return fmt::format("{} values from {} to {}", values.size(), expr::to_string(values.front()),
                       expr::to_string(values.back()));
  }
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
  fields.allow_only({"name", "type", "values", "range", "pow2", "default", "when"});
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
      document.fail(*default_node, fmt::format("default {} of {} is not one of its values ({})",
                                               expr::to_string(parameter.default_value), what,
                                               value_list(parameter.values)));
    }
  } else {
    parameter.default_value = parameter.values.front();
  }
  if (auto when_node = fields.find("when")) {
    parameter.relevant_when = read_expression(document, *when_node, what + " when");
    // Names are checked where constants are known (SpaceEnumerator); only the order is a property of the file.
    for (const std::string& name : parameter.relevant_when.names()) {
      if (name == parameter.name) {
        document.fail(*when_node, fmt::format("the condition of {} reads the parameter itself; a condition reads "
                                              "parameters declared before it",
                                              what));
      }
    }
  }
  return parameter;
}

// One item of `problem_defaults:`: `when` (an expression, its names checked by name_resolution once the problem
// symbols are known) and `values`, parameters of the space with values from their lists.
ProblemDefault read_problem_default(const Document& document, const YAML::Node& node,
                                    const std::vector<Parameter>& parameters) {
  Fields fields(document, node, "a problem default");
  fields.allow_only({"when", "values"});
  ProblemDefault problem_default;
  problem_default.where = document.where(node);
  problem_default.when = read_expression(document, fields.require("when"), "problem default when");
  const YAML::Node values_node = fields.require("values");
  Fields values(document, values_node, "problem default values");
  if (values.entries().empty()) {
    document.fail(values_node, "problem default values is empty; name the parameters this kind of problem starts "
                               "from, e.g. {BM: 64}");
  }
  std::vector<std::string> names;
  for (const Parameter& parameter : parameters) names.push_back(parameter.name);
  for (const Fields::Entry& entry : values.entries()) {
    auto parameter = std::find_if(parameters.begin(), parameters.end(),
                                  [&](const Parameter& declared) { return declared.name == entry.key; });
    if (parameter == parameters.end()) {
      document.fail(entry.key_node, fmt::format("a problem default names '{}', which is not a parameter of the "
                                                "space{}; the parameters are {}",
                                                entry.key, did_you_mean(entry.key, names),
                                                names.empty() ? "none" : comma_list(names)));
    }
    const std::string what = fmt::format("problem default value of '{}'", entry.key);
    Value value = read_parameter_value(document, entry.value, parameter->type, what);
    if (std::find(parameter->values.begin(), parameter->values.end(), value) == parameter->values.end()) {
      document.fail(entry.value, fmt::format("{} is {}, not one of its values ({})", what, expr::to_string(value),
                                             value_list(parameter->values)));
    }
    problem_default.values[entry.key] = std::move(value);
  }
  return problem_default;
}

}  // namespace

Value read_parameter_value(const Document& document, const YAML::Node& node, ParameterType type,
                           std::string_view what) {
  std::string text = read_text(document, node, what);
  ScalarValue scalar = classify(node);
  switch (type) {
    case ParameterType::integer:
      if (scalar.kind != ScalarValue::Kind::integer) {
        std::string hint = scalar.kind == ScalarValue::Kind::string ? "; declare type: enum for string values" : "";
        document.fail(node, not_an_integer(what, text) + hint);
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

Space read_space(const Document& document, const YAML::Node& node) {
  Fields fields(document, node, "the space");
  fields.allow_only({"name", "parameters", "derived", "constraints", "problem_defaults"});
  Space space;
  if (auto name = fields.find("name")) {
    space.name = read_text(document, *name, "space name");
    check_path_name(space.name, "space name", document.where(*name));
  }
  if (auto parameters = fields.find("parameters")) {
    const std::vector<YAML::Node> items = read_list(document, *parameters, "parameters");
    if (items.empty()) document.fail(*parameters, "parameters is an empty list; give at least one parameter");
    for (const YAML::Node& item : items) {
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
  if (auto problem_defaults = fields.find("problem_defaults")) {
    for (const YAML::Node& item : read_list(document, *problem_defaults, "problem_defaults"))
      space.problem_defaults.push_back(read_problem_default(document, item, space.parameters));
  }
  return space;
}

Space parse_space_document(const std::string& yaml_text, const std::filesystem::path& file) {
  Document document(yaml_text, file);
  YAML::Node root = document.root();
  if (root.IsNull()) throw InputError(SourceLocation{file.string()}, "the space file is empty");
  Space space = read_space(document, root);
  space.file = file;
  return space;
}


}  // namespace kernlathe::spec_loading
