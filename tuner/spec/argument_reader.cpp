#include "tuner/spec/argument_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "tuner/driver/tensor_map_strides.h"

namespace kernlathe::spec_loading {
namespace {

// The value of an expression that reads no name and is an integer; nullopt otherwise (it depends on the problem).
std::optional<std::int64_t> constant_integer(const Expression& expression) {
  if (!expression.names().empty()) return std::nullopt;
  try {
    const Value value = expression.evaluate(std::map<std::string, Value>{});
    if (const auto* integer = std::get_if<std::int64_t>(&value)) return *integer;
  } catch (const expr::EvaluationError&) {
    // Left to the check at the problem, which reports the evaluation's own error.
  }
  return std::nullopt;
}

// `strides:` of a tensor map: one per dimension after the innermost, in elements. What can be checked before a problem
// is known is checked here (tensor_map_strides.h's rules): each constant stride on its own, and the whole set where
// every dim and stride is a constant; the rest is checked when the problem is (the tuner's setup, the runtime's plan).
std::vector<Expression> read_tensor_map_strides(const Document& document, const YAML::Node& strides_node,
                                                const TensorMapDescription& map, Dtype dtype, const std::string& what) {
  std::vector<Expression> strides = read_expression_list(document, strides_node, what + " strides");
  if (strides.size() + 1 != map.dims.size()) {
    document.fail(strides_node, fmt::format("{} has {} strides for {} dims; give one per dimension after the "
                                            "innermost ({}), in elements",
                                            what, strides.size(), map.dims.size(), map.dims.size() - 1));
  }
  const auto element_bytes = static_cast<std::int64_t>(dtype_size(dtype));
  std::vector<std::int64_t> constant_dims, constant_strides;
  for (std::size_t index = 0; index < strides.size(); ++index) {
    std::optional<std::int64_t> stride = constant_integer(strides[index]);
    if (!stride) continue;
    constant_strides.push_back(*stride);
    if (std::string why = gpu::stride_alignment_problem(index + 1, *stride, element_bytes); !why.empty())
      throw InputError(strides[index].where(), fmt::format("{} stride '{}': {}", what, strides[index].text(), why));
  }
  for (const Expression& dimension : map.dims)
    if (std::optional<std::int64_t> constant = constant_integer(dimension)) constant_dims.push_back(*constant);
  if (constant_dims.size() == map.dims.size() && constant_strides.size() == strides.size()) {
    if (std::string why = gpu::stride_problem(constant_dims, constant_strides, element_bytes); !why.empty())
      document.fail(strides_node, fmt::format("{} strides: {}", what, why));
  }
  return strides;
}

// type: tensor_map, buffer: <an earlier buffer argument>, dims: [...], box: [...], swizzle: <bytes>, strides: [...]
Argument read_tensor_map_argument(const Document& document, const Fields& fields, Argument argument,
                                  const std::vector<Argument>& earlier) {
  const std::string what = fmt::format("tensor map '{}'", argument.name);
  for (const char* key : {"count", "init", "role", "value", "scratch"}) {
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
  if (auto strides = fields.find("strides")) map.strides = read_tensor_map_strides(document, *strides, map, argument.dtype, what);
  map.swizzle = Expression::parse("0");
  if (auto swizzle = fields.find("swizzle")) map.swizzle = read_expression(document, *swizzle, what + " swizzle");
  argument.is_buffer = false;
  argument.tensor_map = std::move(map);
  return argument;
}

// `scratch: true` promises a zero-initialised work buffer that the kernel leaves zero after every launch, so the
// runtime library may allocate it once and hand the same memory to every launch: it must start zero (an explicit
// init: {constant: 0}) and the kernel must not be its only writer of results (role in or inout).
void check_scratch(const Document& document, const Fields& fields, const Argument& argument,
                   const Fields::Entry& scratch, const std::string& what) {
  const Fields::Entry* init = fields.find_entry("init");
  const bool zero = init != nullptr && argument.init.kind == Initialisation::Kind::constant && argument.init.value == 0;
  if (!zero) {
    document.fail(scratch.key_node,
                  fmt::format("{} is scratch: true, so it needs init: {{constant: 0}} (a scratch buffer starts zero "
                              "and the kernel leaves it zero); {}",
                              what, init == nullptr ? "it has no init (the default is random)" : "its init is not 0"));
  }
  if (argument.role == Role::out) {
    document.fail(scratch.key_node, fmt::format("{} is scratch: true with role: out; a scratch buffer is a work "
                                                "buffer the kernel leaves zero, give it role: in or inout",
                                                what));
  }
}

}  // namespace

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

Argument read_argument(const Document& document, const YAML::Node& node, std::size_t index,
                       const std::vector<Argument>& earlier) {
  Fields fields(document, node, "an argument");
  fields.allow_only({"name", "type", "count", "init", "role", "value", "scratch", "buffer", "dims", "box", "swizzle",
                     "strides"});
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
  for (const char* key : {"buffer", "dims", "box", "swizzle", "strides"}) {
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
      if (argument.scratch) check_scratch(document, fields, argument, *scratch, what);
    }
  } else {
    argument.value = read_expression(document, value->value, what + " value");
  }
  return argument;
}

}  // namespace kernlathe::spec_loading
