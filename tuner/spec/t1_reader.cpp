#include "tuner/spec/t1_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>

#include "tuner/spec/name_resolution.h"
#include "tuner/spec/nvrtc_options.h"
#include "tuner/spec/path_names.h"
#include "tuner/spec/python_list.h"
#include "tuner/spec/yaml_reader.h"

namespace kernlathe {
namespace {

using Json = nlohmann::json;

// ---------------------------------------------------------------- schema

const std::vector<std::string> parameter_types{"int", "uint", "float", "bool", "string"};
const std::vector<std::string> languages{"OpenCL", "CUDA", "Vulkan"};
const std::vector<std::string> argument_types{
    "bool",    "int8",   "uint8",   "int16",   "uint16",  "int32",    "uint32", "int64",  "uint64",
    "half",    "half2",  "half4",   "half8",   "half16",  "float",    "float2", "float4", "float8",
    "float16", "double", "double2", "double4", "double8", "double16", "custom"};
const std::vector<std::string> fill_types{"Constant", "Random", "Generator", "Script", "BinaryRaw", "BinaryHDF"};
const std::vector<std::string> access_types{"ReadOnly", "WriteOnly", "ReadWrite"};
const std::vector<std::string> memory_types{"Scalar", "Vector", "Local", "Symbol"};

class SchemaCheck {
 public:
  std::vector<std::string> problems;

  void problem(const std::string& where, const std::string& what) { problems.push_back(where + ": " + what); }

  // The member `key` of `object` (an object), or nullptr; a missing required member is a problem.
  const Json* member(const Json& object, const std::string& where, const char* key, bool required) {
    if (object.contains(key)) return &object[key];
    if (required) problem(where, fmt::format("no \"{}\" (required)", key));
    return nullptr;
  }
  bool object(const Json* value, const std::string& where) {
    return is(value, value && value->is_object(), where, "an object");
  }
  bool array(const Json* value, const std::string& where) {
    return is(value, value && value->is_array(), where, "an array");
  }
  void string(const Json* value, const std::string& where) {
    is(value, value && value->is_string(), where, "a string");
  }
  void integer(const Json* value, const std::string& where) {
    is(value, value && value->is_number_integer(), where, "an integer");
  }
  void number(const Json* value, const std::string& where) {
    is(value, value && value->is_number(), where, "a number");
  }
  void one_of(const Json* value, const std::string& where, const std::vector<std::string>& choices) {
    if (value == nullptr) return;
    if (!value->is_string() || std::find(choices.begin(), choices.end(), value->get<std::string>()) == choices.end())
      problem(where, fmt::format("{} is not one of {}", value->dump(), fmt::join(choices, ", ")));
  }
  void strings(const Json* value, const std::string& where) {
    if (!array(value, where)) return;
    for (std::size_t index = 0; index < value->size(); ++index)
      string(&(*value)[index], fmt::format("{}[{}]", where, index));
  }
  // X required, Y and Z optional: strings.
  void dimensions(const Json* value, const std::string& where) {
    if (!object(value, where)) return;
    string(member(*value, where, "X", true), where + ".X");
    for (const char* axis : {"Y", "Z"}) string(member(*value, where, axis, false), fmt::format("{}.{}", where, axis));
  }

 private:
  // A missing optional member (nullptr) is no problem.
  bool is(const Json* value, bool condition, const std::string& where, const char* what) {
    if (value == nullptr) return false;
    if (!condition) problem(where, fmt::format("{} is not {}", value->dump(), what));
    return condition;
  }
};

void check_configuration_space(SchemaCheck& check, const Json& document) {
  const Json* space = check.member(document, "the document", "ConfigurationSpace", true);
  if (!check.object(space, "ConfigurationSpace")) return;
  const Json* parameters = check.member(*space, "ConfigurationSpace", "TuningParameters", true);
  if (check.array(parameters, "ConfigurationSpace.TuningParameters")) {
    for (std::size_t index = 0; index < parameters->size(); ++index) {
      const std::string where = fmt::format("ConfigurationSpace.TuningParameters[{}]", index);
      const Json& parameter = (*parameters)[index];
      if (!check.object(&parameter, where)) continue;
      check.string(check.member(parameter, where, "Name", true), where + ".Name");
      check.one_of(check.member(parameter, where, "Type", true), where + ".Type", parameter_types);
      check.string(check.member(parameter, where, "Values", true), where + ".Values");
    }
  }
  const Json* conditions = check.member(*space, "ConfigurationSpace", "Conditions", false);
  if (check.array(conditions, "ConfigurationSpace.Conditions")) {
    for (std::size_t index = 0; index < conditions->size(); ++index) {
      const std::string where = fmt::format("ConfigurationSpace.Conditions[{}]", index);
      const Json& condition = (*conditions)[index];
      if (!check.object(&condition, where)) continue;
      check.strings(check.member(condition, where, "Parameters", true), where + ".Parameters");
      check.string(check.member(condition, where, "Expression", true), where + ".Expression");
    }
  }
}

void check_kernel_specification(SchemaCheck& check, const Json& document) {
  const Json* kernel = check.member(document, "the document", "KernelSpecification", true);
  const std::string where = "KernelSpecification";
  if (!check.object(kernel, where)) return;
  check.one_of(check.member(*kernel, where, "Language", true), where + ".Language", languages);
  check.string(check.member(*kernel, where, "KernelName", true), where + ".KernelName");
  check.string(check.member(*kernel, where, "KernelFile", true), where + ".KernelFile");
  check.dimensions(check.member(*kernel, where, "GlobalSize", true), where + ".GlobalSize");
  check.dimensions(check.member(*kernel, where, "LocalSize", true), where + ".LocalSize");
  check.strings(check.member(*kernel, where, "CompilerOptions", false), where + ".CompilerOptions");
  check.one_of(check.member(*kernel, where, "GlobalSizeType", false), where + ".GlobalSizeType", languages);
  check.integer(check.member(*kernel, where, "SharedMemory", false), where + ".SharedMemory");
  // Not in the schema, but what published files use for the grid: checked so a typo is not silently ignored.
  if (const Json* problem_size = check.member(*kernel, where, "ProblemSize", false);
      check.array(problem_size, where + ".ProblemSize")) {
    for (std::size_t index = 0; index < problem_size->size(); ++index)
      check.integer(&(*problem_size)[index], fmt::format("{}.ProblemSize[{}]", where, index));
  }
  for (const char* divisor : {"GridDivX", "GridDivY", "GridDivZ"})
    check.strings(check.member(*kernel, where, divisor, false), fmt::format("{}.{}", where, divisor));
  const Json* arguments = check.member(*kernel, where, "Arguments", false);
  if (!check.array(arguments, where + ".Arguments")) return;
  for (std::size_t index = 0; index < arguments->size(); ++index) {
    const std::string at = fmt::format("{}.Arguments[{}]", where, index);
    const Json& argument = (*arguments)[index];
    if (!check.object(&argument, at)) continue;
    check.one_of(check.member(argument, at, "Type", true), at + ".Type", argument_types);
    check.one_of(check.member(argument, at, "MemoryType", true), at + ".MemoryType", memory_types);
    check.string(check.member(argument, at, "Name", false), at + ".Name");
    // The schema says integer; published files write expressions of ProblemSize.
    if (const Json* size = check.member(argument, at, "Size", false);
        size && !size->is_number_integer() && !size->is_string())
      check.problem(at + ".Size", fmt::format("{} is neither an integer nor an expression string", size->dump()));
    check.integer(check.member(argument, at, "TypeSize", false), at + ".TypeSize");
    check.one_of(check.member(argument, at, "FillType", false), at + ".FillType", fill_types);
    if (const Json* fill = check.member(argument, at, "FillValue", false);
        fill && !fill->is_number() && !fill->is_string())
      check.problem(at + ".FillValue", fmt::format("{} is not a number", fill->dump()));
    check.integer(check.member(argument, at, "RandomSeed", false), at + ".RandomSeed");
    check.one_of(check.member(argument, at, "AccessType", false), at + ".AccessType", access_types);
    check.string(check.member(argument, at, "DataSource", false), at + ".DataSource");
  }
}

Json read_json(const std::filesystem::path& file) {
  std::ifstream stream(file, std::ios::binary);
  if (!stream) throw InputError(SourceLocation{file.string()}, "cannot open the T1 file");
  try {
    return Json::parse(stream);
  } catch (const Json::parse_error& error) {
    throw InputError(SourceLocation{file.string()}, fmt::format("not valid JSON: {}", error.what()));
  }
}

Json read_checked(const std::filesystem::path& file, bool with_kernel) {
  Json document = read_json(file);
  const std::vector<std::string> problems = t1_problems(document, with_kernel);
  if (!problems.empty()) {
    constexpr std::size_t shown = 8;
    std::string listing =
        fmt::format("{}", fmt::join(problems.begin(), problems.begin() + std::min(shown, problems.size()), "; "));
    if (problems.size() > shown) listing += fmt::format("; and {} more", problems.size() - shown);
    throw InputError(SourceLocation{file.string()},
                     fmt::format("not a T1 file by the published schema (TuningSchema): {}", listing));
  }
  return document;
}

// ---------------------------------------------------------------- space

// Python's repr of a float: the shortest text that reads back, with ".0" when it would look like an integer.
std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

std::string t1_where(const std::filesystem::path& file, const std::string& part) {
  return fmt::format("{} ({})", file.string(), part);
}

ParameterType parameter_type(const std::string& type) {
  if (type == "int" || type == "uint") return ParameterType::integer;
  if (type == "bool") return ParameterType::boolean;
  return ParameterType::enumeration;
}

// One value of a parameter of the given T1 type; nullopt when the value does not fit the type.
std::optional<Value> typed_value(const std::string& type, const Value& value) {
  if (type == "int" || type == "uint") {
    const auto* integer = std::get_if<std::int64_t>(&value);
    if (integer == nullptr || (type == "uint" && *integer < 0)) return std::nullopt;
    return value;
  }
  if (type == "bool") {
    if (std::holds_alternative<bool>(value)) return value;
    if (const auto* integer = std::get_if<std::int64_t>(&value); integer && (*integer == 0 || *integer == 1))
      return Value{*integer == 1};
    return std::nullopt;
  }
  if (const auto* real = std::get_if<double>(&value)) return Value{python_float(*real)};
  if (const auto* boolean = std::get_if<bool>(&value)) return Value{std::string(*boolean ? "True" : "False")};
  return Value{expr::to_string(value)};
}

Parameter read_parameter(const Json& entry, const std::filesystem::path& file) {
  Parameter parameter;
  parameter.name = entry["Name"].get<std::string>();
  parameter.where.file = t1_where(file, fmt::format("parameter '{}'", parameter.name));
  const std::string type = entry["Type"].get<std::string>();
  const std::string values_text = entry["Values"].get<std::string>();
  parameter.type = parameter_type(type);
  std::vector<Value> values;
  try {
    values = evaluate_python_list(values_text);
  } catch (const InputError& error) {
    throw InputError(
        fmt::format("{}: parameter '{}': Values \"{}\": {}", file.string(), parameter.name, values_text, error.what()));
  }
  for (const Value& value : values) {
    std::optional<Value> typed = typed_value(type, value);
    if (!typed) {
      throw InputError(fmt::format("{}: parameter '{}' of Type {} has the value {} ({}), which is not of that type",
                                   file.string(), parameter.name, type, python_literal(value), expr::type_name(value)));
    }
    if (std::none_of(parameter.values.begin(), parameter.values.end(),
                     [&](const Value& earlier) { return expr::operator_equal(earlier, *typed); }))
      parameter.values.push_back(std::move(*typed));
  }
  if (parameter.values.empty())
    throw InputError(
        fmt::format("{}: parameter '{}' has no values (Values \"{}\")", file.string(), parameter.name, values_text));
  parameter.default_value = parameter.values.front();
  if (entry.contains("Default")) {
    const Json& declared_json = entry["Default"];
    std::optional<Value> declared;
    if (declared_json.is_number_integer())
      declared = typed_value(type, Value{declared_json.get<std::int64_t>()});
    else if (declared_json.is_number())
      declared = typed_value(type, Value{declared_json.get<double>()});
    else if (declared_json.is_boolean())
      declared = typed_value(type, Value{declared_json.get<bool>()});
    else if (declared_json.is_string())
      declared = typed_value(type, Value{declared_json.get<std::string>()});
    // A declared default outside the values is ignored rather than rejected: the space is still usable.
    if (declared && std::any_of(parameter.values.begin(), parameter.values.end(),
                                [&](const Value& value) { return expr::operator_equal(value, *declared); }))
      parameter.default_value = *declared;
  }
  return parameter;
}

Space t1_space(const Json& document, const std::filesystem::path& file) {
  const Json& configuration_space = document["ConfigurationSpace"];
  Space space;
  space.name = file.filename().string();
  space.file = file;
  for (const Json& entry : configuration_space["TuningParameters"]) {
    Parameter parameter = read_parameter(entry, file);
    auto earlier = std::find_if(space.parameters.begin(), space.parameters.end(),
                                [&](const Parameter& other) { return other.name == parameter.name; });
    if (earlier == space.parameters.end()) {
      space.parameters.push_back(std::move(parameter));
    } else if (earlier->type != parameter.type || earlier->values != parameter.values) {
      throw InputError(fmt::format("{}: parameter '{}' is declared twice with different types or values", file.string(),
                                   parameter.name));
    }
  }
  std::vector<std::string> names;
  for (const Parameter& parameter : space.parameters) names.push_back(parameter.name);
  if (configuration_space.contains("Conditions")) {
    std::size_t index = 0;
    for (const Json& condition : configuration_space["Conditions"]) {
      const std::string part = fmt::format("Conditions[{}]", index++);
      for (const Json& name_json : condition["Parameters"]) {
        const std::string name = name_json.get<std::string>();
        if (std::find(names.begin(), names.end(), name) == names.end())
          throw InputError(fmt::format("{}: {}.Parameters names '{}', which is not a tuning parameter{}", file.string(),
                                       part, name, spec_loading::did_you_mean(name, names)));
      }
      SourceLocation where{t1_where(file, part), 0, 0};
      space.constraints.push_back(Constraint{Expression::parse(condition["Expression"].get<std::string>(), where)});
    }
  }
  return space;
}

// ---------------------------------------------------------------- kernel

// ProblemSize[i] -> ProblemSize_i: the project's symbols are identifiers (they can be given with --problem).
std::string problem_size_symbols(const std::string& text) {
  static const std::regex indexed(R"(\bProblemSize\s*\[\s*([0-2])\s*\])");
  return std::regex_replace(text, indexed, "ProblemSize_$1");
}

// In an argument's Size, Python reads a parameter's name as its list of values: max(p) and min(p) are the largest
// and smallest value. Replaced by the number, so the size stays fixed per problem.
std::string parameter_extremes(const std::string& text, const Space& space) {
  static const std::regex call(R"(\b(max|min)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\))");
  std::string result;
  auto last = text.cbegin();
  for (std::sregex_iterator match(text.begin(), text.end(), call), end; match != end; ++match) {
    const std::string function = (*match)[1];
    const std::string name = (*match)[2];
    auto parameter = std::find_if(space.parameters.begin(), space.parameters.end(),
                                  [&](const Parameter& candidate) { return candidate.name == name; });
    if (parameter == space.parameters.end() || parameter->type != ParameterType::integer) continue;
    std::int64_t extreme = std::get<std::int64_t>(parameter->values.front());
    for (const Value& value : parameter->values) {
      const std::int64_t number = std::get<std::int64_t>(value);
      extreme = function == "max" ? std::max(extreme, number) : std::min(extreme, number);
    }
    result.append(last, text.cbegin() + match->position(0));
    result += std::to_string(extreme);
    last = text.cbegin() + match->position(0) + match->length(0);
  }
  result.append(last, text.cend());
  return result;
}

Expression t1_expression(const Json& value, const std::filesystem::path& file, const std::string& part) {
  const SourceLocation where{t1_where(file, part), 0, 0};
  if (value.is_number_integer()) return Expression::constant(Value{value.get<std::int64_t>()});
  if (value.is_number()) return Expression::constant(Value{value.get<double>()});
  return Expression::parse(problem_size_symbols(value.get<std::string>()), where);
}

Dtype argument_dtype(const std::string& type, const std::filesystem::path& file, const std::string& part) {
  static const std::map<std::string, Dtype> supported{
      {"int8", Dtype::i8},   {"uint8", Dtype::u8}, {"int32", Dtype::i32}, {"uint32", Dtype::u32},
      {"int64", Dtype::i64}, {"half", Dtype::f16}, {"float", Dtype::f32}, {"double", Dtype::f64}};
  auto found = supported.find(type);
  if (found == supported.end()) {
    throw InputError(SourceLocation{t1_where(file, part)},
                     fmt::format("argument Type {} is not supported; tune runs arguments of type int8, uint8, int32, "
                                 "uint32, int64, half, float or double",
                                 type));
  }
  return found->second;
}

Argument read_t1_argument(const Json& entry, std::size_t index, const Space& space, const std::filesystem::path& file) {
  const std::string part = fmt::format("KernelSpecification.Arguments[{}]", index);
  const SourceLocation where{t1_where(file, part)};
  Argument argument;
  argument.name = entry.value("Name", fmt::format("argument{}", index));
  argument.where = where;
  argument.dtype = argument_dtype(entry["Type"].get<std::string>(), file, part + ".Type");
  if (entry.value("MemType", "") == "Constant") {
    throw InputError(where,
                     fmt::format("argument '{}' lives in constant memory (\"MemType\": \"Constant\"), which tune "
                                 "does not support; pass it as a global-memory Vector",
                                 argument.name));
  }
  const std::string fill = entry.value("FillType", "Constant");
  if (fill != "Constant" && fill != "Random") {
    throw InputError(where, fmt::format("argument '{}' has FillType {}; tune fills arguments with Constant or Random "
                                        "values only",
                                        argument.name, fill));
  }
  const std::string memory = entry["MemoryType"].get<std::string>();
  if (memory == "Scalar") {
    if (fill != "Constant")
      throw InputError(where, fmt::format("scalar argument '{}' has FillType {}; a scalar takes its FillValue",
                                          argument.name, fill));
    if (!entry.contains("FillValue"))
      throw InputError(where, fmt::format("scalar argument '{}' has no FillValue", argument.name));
    argument.is_buffer = false;
    argument.value = t1_expression(entry["FillValue"], file, part + ".FillValue");
    return argument;
  }
  if (memory != "Vector") {
    throw InputError(where, fmt::format("argument '{}' has MemoryType {}; tune passes Vector (a global-memory buffer) "
                                        "and Scalar arguments",
                                        argument.name, memory));
  }
  if (!entry.contains("Size")) throw InputError(where, fmt::format("vector argument '{}' has no Size", argument.name));
  const Json& size = entry["Size"];
  argument.count = size.is_string()
                       ? Expression::parse(parameter_extremes(problem_size_symbols(size.get<std::string>()), space),
                                           SourceLocation{t1_where(file, part + ".Size")})
                       : Expression::constant(Value{size.get<std::int64_t>()});
  if (fill == "Random") {
    argument.init.kind = Initialisation::Kind::random;
    argument.init.seed = static_cast<std::uint64_t>(entry.value("RandomSeed", static_cast<std::int64_t>(index + 1)));
    argument.init.low = -1.0;
    argument.init.high = 1.0;
  } else {
    argument.init.kind = Initialisation::Kind::constant;
    const Json fill_value = entry.value("FillValue", Json(0));
    if (!fill_value.is_number())
      throw InputError(where, fmt::format("vector argument '{}' has FillValue {}; a buffer is filled with a number",
                                          argument.name, fill_value.dump()));
    argument.init.value = fill_value.get<double>();
  }
  const std::string access = entry.value("AccessType", "");
  const bool marked_output =
      entry.contains("Output") && entry["Output"].is_number() && entry["Output"].get<double>() != 0;
  argument.role = access == "WriteOnly"             ? Role::out
                  : access == "ReadWrite"           ? Role::inout
                  : access.empty() && marked_output ? Role::out
                                                    : Role::in;
  return argument;
}

// The kernel's name appears in the kernel file as a whole identifier (NVRTC's own message for a missing name
// says nothing about the T1 file).
void check_kernel_name(const std::string& name, const std::filesystem::path& kernel_file,
                       const std::filesystem::path& file) {
  const std::string text = spec_loading::read_whole_file(kernel_file);
  if (!spec_loading::is_identifier(name) || !std::regex_search(text, std::regex("\\b" + name + "\\b"))) {
    throw InputError(SourceLocation{t1_where(file, "KernelSpecification.KernelName")},
                     fmt::format("kernel '{}' does not appear in {} as an identifier", name, kernel_file.string()));
  }
}

LaunchGeometry t1_launch(const Json& kernel, const KernelSpec& spec, const std::filesystem::path& file) {
  static constexpr std::array<const char*, 3> axes{"X", "Y", "Z"};
  static constexpr std::array<const char*, 3> divisors{"GridDivX", "GridDivY", "GridDivZ"};
  LaunchGeometry launch;
  std::array<std::string, 3> block_text{"1", "1", "1"};
  for (std::size_t axis = 0; axis < 3; ++axis) {
    if (kernel["LocalSize"].contains(axes[axis])) block_text[axis] = kernel["LocalSize"][axes[axis]].get<std::string>();
    launch.block[axis] =
        Expression::parse(problem_size_symbols(block_text[axis]),
                          SourceLocation{t1_where(file, fmt::format("KernelSpecification.LocalSize.{}", axes[axis]))});
  }
  for (std::size_t axis = 0; axis < 3; ++axis) {
    const std::string part = fmt::format("KernelSpecification.{}", divisors[axis]);
    std::string grid = "1";
    if (axis < spec.problem.size()) {
      // Kernel Tuner's rule: the problem size divided by the product of the divisors, rounded up.
      std::vector<std::string> factors;
      if (kernel.contains(divisors[axis])) {
        for (const Json& divisor : kernel[divisors[axis]])
          factors.push_back("(" + problem_size_symbols(divisor.get<std::string>()) + ")");
      } else {
        factors.push_back("(" + problem_size_symbols(block_text[axis]) + ")");
      }
      grid = factors.empty() ? spec.problem[axis].first
                             : fmt::format("ceil_div({}, {})", spec.problem[axis].first, fmt::join(factors, " * "));
    } else if (spec.problem.empty() && kernel["GlobalSize"].contains(axes[axis])) {
      const std::string global = problem_size_symbols(kernel["GlobalSize"][axes[axis]].get<std::string>());
      grid = kernel.value("GlobalSizeType", "CUDA") == "OpenCL"
                 ? fmt::format("ceil_div({}, {})", global, problem_size_symbols(block_text[axis]))
                 : global;
    }
    launch.grid[axis] = Expression::parse(
        grid, SourceLocation{t1_where(
                  file, spec.problem.empty() ? fmt::format("KernelSpecification.GlobalSize.{}", axes[axis]) : part)});
  }
  launch.dynamic_shared_bytes = Expression::constant(Value{kernel.value("SharedMemory", std::int64_t{0})});
  return launch;
}

}  // namespace

std::vector<std::string> t1_problems(const nlohmann::json& document, bool with_kernel) {
  if (!document.is_object()) return {"the document is not a JSON object"};
  SchemaCheck check;
  check_configuration_space(check, document);
  if (const Json* general = check.member(document, "the document", "General", false)) check.object(general, "General");
  if (with_kernel) check_kernel_specification(check, document);
  return check.problems;
}

Space read_t1_space(const std::filesystem::path& t1_file) { return t1_space(read_checked(t1_file, false), t1_file); }

bool is_t1_file_name(const std::filesystem::path& file) { return file.extension() == ".json"; }

std::string python_literal(const Value& value) {
  if (const auto* boolean = std::get_if<bool>(&value)) return *boolean ? "True" : "False";
  if (const auto* real = std::get_if<double>(&value)) return python_float(*real);
  if (const auto* text = std::get_if<std::string>(&value)) {
    std::string quoted = "'";
    for (char c : *text) {
      if (c == '\\' || c == '\'') quoted += '\\';
      quoted += c;
    }
    return quoted + "'";
  }
  return expr::to_string(value);
}

KernelSpec load_t1_kernel_spec(const std::filesystem::path& t1_file, const ProblemOverrides& overrides) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(t1_file, error))
    throw InputError(SourceLocation{t1_file.string()}, "T1 file does not exist");
  const Json document = read_checked(t1_file, true);
  const Json& kernel = document["KernelSpecification"];
  KernelSpec spec;
  spec.file = t1_file;
  const std::string language = kernel["Language"].get<std::string>();
  if (language != "CUDA") {
    throw InputError(SourceLocation{t1_where(t1_file, "KernelSpecification.Language")},
                     fmt::format("the kernel is written in {}; tune runs CUDA kernels", language));
  }
  std::string name = t1_file.stem().string();
  if (name.ends_with(".T1")) name.resize(name.size() - 3);
  if (kernel.contains("BenchmarkName") && kernel["BenchmarkName"].is_string())
    name = kernel["BenchmarkName"].get<std::string>();
  else if (document.contains("General") && document["General"].contains("BenchmarkName") &&
           document["General"]["BenchmarkName"].is_string())
    name = document["General"]["BenchmarkName"].get<std::string>();
  check_path_name(name, "benchmark name", SourceLocation{t1_where(t1_file, "BenchmarkName")});
  spec.name = name;
  spec.space = t1_space(document, t1_file);
  spec.space.name = spec.name;

  spec.template_file = (t1_file.parent_path() / kernel["KernelFile"].get<std::string>()).lexically_normal();
  if (!std::filesystem::is_regular_file(spec.template_file, error)) {
    throw InputError(SourceLocation{t1_where(t1_file, "KernelSpecification.KernelFile")},
                     fmt::format("kernel file '{}' does not exist (KernelFile is relative to the T1 file)",
                                 spec.template_file.string()));
  }
  spec.entry_point = kernel["KernelName"].get<std::string>();
  check_kernel_name(spec.entry_point, spec.template_file, t1_file);
  if (kernel.contains("CompilerOptions")) {
    for (const Json& option_json : kernel["CompilerOptions"]) {
      const std::string option = option_json.get<std::string>();
      if (std::optional<std::string> problem = compile_option_problem(option)) {
        throw InputError(SourceLocation{t1_where(t1_file, "KernelSpecification.CompilerOptions")},
                         fmt::format("compile option '{}' is not allowed: {}; allowed: {}", option, *problem,
                                     allowed_compile_options_summary()));
      }
      spec.compile_options.push_back(option);
    }
  }
  if (kernel.contains("ProblemSize")) {
    const Json& sizes = kernel["ProblemSize"];
    if (sizes.size() > 3)
      throw InputError(SourceLocation{t1_where(t1_file, "KernelSpecification.ProblemSize")},
                       fmt::format("ProblemSize has {} dimensions; give 1 to 3", sizes.size()));
    for (std::size_t axis = 0; axis < sizes.size(); ++axis) {
      const std::int64_t size = sizes[axis].get<std::int64_t>();
      if (size < 0)
        throw InputError(SourceLocation{t1_where(t1_file, "KernelSpecification.ProblemSize")},
                         fmt::format("ProblemSize[{}] is {}; sizes may not be negative", axis, size));
      spec.problem.emplace_back(fmt::format("ProblemSize_{}", axis), size);
    }
  }
  spec.declared_problem = spec.problem;
  for (const auto& override_entry : overrides) {
    const std::string& symbol = override_entry.first;
    const std::int64_t value = override_entry.second;
    auto found = std::find_if(spec.problem.begin(), spec.problem.end(),
                              [&](const auto& entry) { return entry.first == symbol; });
    if (found == spec.problem.end()) {
      std::vector<std::string> symbols;
      for (const auto& entry : spec.problem) symbols.push_back(entry.first);
      throw InputError(fmt::format(
          "--problem {}={}: {} has no problem symbol '{}'; its symbols are {}", symbol, value, t1_file.string(), symbol,
          symbols.empty() ? "none (it has no ProblemSize)" : spec_loading::comma_list(symbols)));
    }
    if (value < 0) throw InputError(fmt::format("--problem {}={}: sizes may not be negative", symbol, value));
    found->second = value;
  }
  if (kernel.contains("Arguments")) {
    for (std::size_t index = 0; index < kernel["Arguments"].size(); ++index) {
      Argument argument = read_t1_argument(kernel["Arguments"][index], index, spec.space, t1_file);
      if (std::any_of(spec.arguments.begin(), spec.arguments.end(),
                      [&](const Argument& other) { return other.name == argument.name; }))
        throw InputError(argument.where, fmt::format("two arguments are named '{}'", argument.name));
      spec.arguments.push_back(std::move(argument));
    }
  }
  spec.launch = t1_launch(kernel, spec, t1_file);
  // T1 has no verification section: the reference is the default configuration (Verification's empty reference).
  spec.verification.enabled = true;
  spec_loading::check_names(spec);
  return spec;
}

}  // namespace kernlathe
