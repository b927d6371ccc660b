#include "tuner/runtime/kernel_plan.h"

#include <fmt/format.h>

#include "kernlathe/runtime.h"
#include "tuner/common/hash.h"
#include "tuner/expr/expression.h"

namespace kernlathe {

namespace {

// Names bound in the order every expression of a kernel may read them: device properties, problem symbols,
// parameters, derived values (each derived value may read the ones before it).
class PlanScope {
 public:
  void add(const std::string& name, const Value& value) {
    int slot = scope_.add(name);
    if (static_cast<std::size_t>(slot) >= slots_.size()) slots_.resize(static_cast<std::size_t>(slot) + 1);
    slots_[static_cast<std::size_t>(slot)] = value;
  }

  Value evaluate(const std::string& text, const std::string& what) const {
    try {
      expr::Expression expression = expr::Expression::parse(text);
      expression.bind(scope_);
      return expression.evaluate(slots_);
    } catch (const std::exception& error) {
      throw RuntimeError(fmt::format("{}: '{}' cannot be evaluated: {}", what, text, error.what()));
    }
  }

  std::int64_t integer(const std::string& text, const std::string& what) const {
    Value value = evaluate(text, what);
    if (const auto* integer = std::get_if<std::int64_t>(&value)) return *integer;
    if (const auto* flag = std::get_if<bool>(&value)) return *flag ? 1 : 0;
    if (const auto* real = std::get_if<double>(&value); real != nullptr && *real == static_cast<double>(static_cast<std::int64_t>(*real)))
      return static_cast<std::int64_t>(*real);
    throw RuntimeError(fmt::format("{}: '{}' is {}, not an integer", what, text, expr::to_string(value)));
  }

 private:
  expr::Scope scope_;
  std::vector<Value> slots_;
};

int enumeration_index(const ParameterDescription& parameter, const Value& value) {
  if (parameter.type != "enumeration") return -1;
  for (std::size_t index = 0; index < parameter.values.size(); ++index) {
    if (expr::operator_equal(parameter.values[index], value)) return static_cast<int>(index);
  }
  return -1;
}

}  // namespace

std::size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "f32" || dtype == "i32" || dtype == "u32") return 4;
  if (dtype == "f64" || dtype == "i64") return 8;
  if (dtype == "i8" || dtype == "u8") return 1;
  return 0;
}

std::string embedded_key(const CompileRequest& request) {
  std::uint64_t state = fnv1a_64(request.source);
  for (const auto& [name, contents] : request.headers) {
    state = fnv1a_64(std::to_string(name.size()) + ":" + name, state);
    state = fnv1a_64(std::to_string(contents.size()) + ":" + contents, state);
  }
  state = fnv1a_64(std::to_string(request.name_expression.size()) + ":" + request.name_expression, state);
  state = fnv1a_64(std::to_string(request.arch.size()) + ":" + request.arch, state);
  for (const std::string& option : request.options) {
    if (option.rfind("-I", 0) == 0) continue;
    state = fnv1a_64(std::to_string(option.size()) + ":" + option, state);
  }
  return fmt::format("{:016x}", state);
}

KernelPlan plan_kernel(const KernelDatabase& database, const TemplateSource& source, const DeviceIdentity& device,
                       const Problem& requested, const SelectOptions& options) {
  const KernelDescription& description = database.description;
  const std::string& kernel = database.kernel;
  if (description.entry_point.empty()) {
    throw RuntimeError(fmt::format("{}: the database has no kernel description (written by an older tune); tune the "
                                   "kernel again or export it with `tune export`", kernel));
  }
  if (std::string hash = template_hash(source); hash != description.template_hash) {
    throw RuntimeError(fmt::format("{}: the template sources (hash {}) are not the ones the database was written for "
                                   "({}); export the database and the sources together",
                                   kernel, hash, description.template_hash));
  }

  KernelPlan plan;
  plan.selection = select(database, device, requested, options);
  plan.problem = complete_problem(description, requested);

  PlanScope scope;
  for (const auto& [name, value] : device.properties) scope.add(name, value);
  for (const auto& [name, value] : plan.problem) scope.add(name, value);
  std::vector<CompileTimeValue> values;
  for (const ParameterDescription& parameter : description.parameters) {
    auto found = plan.selection.configuration.find(parameter.name);
    if (found == plan.selection.configuration.end()) {
      throw RuntimeError(fmt::format("{}: the selected configuration ({}) has no value for parameter {}", kernel,
                                     rung_name(plan.selection.rung), parameter.name));
    }
    scope.add(parameter.name, found->second);
    values.push_back({parameter.name, found->second, enumeration_index(parameter, found->second)});
  }
  for (const NamedExpression& derived : description.derived) {
    Value value = scope.evaluate(derived.expression, fmt::format("{}: derived value {}", kernel, derived.name));
    scope.add(derived.name, value);
    values.push_back({derived.name, value, -1});
  }

  std::string name_expression = description.entry_point;
  if (!description.template_arguments.empty()) {
    std::vector<std::string> arguments;
    for (const std::string& argument : description.template_arguments)
      arguments.push_back(template_argument_text(scope.evaluate(argument, kernel + ": template argument")));
    name_expression += fmt::format("<{}>", fmt::join(arguments, ", "));
  }
  plan.request = make_compile_request(source, values, std::move(name_expression), description.compile_options,
                                      device.arch(), description.arch_specific);
  plan.embedded_key = embedded_key(plan.request);

  for (int axis = 0; axis < 3; ++axis) {
    plan.grid[axis] = scope.integer(description.grid[axis], fmt::format("{}: grid dimension {}", kernel, axis));
    plan.block[axis] = scope.integer(description.block[axis], fmt::format("{}: block dimension {}", kernel, axis));
    if (plan.grid[axis] < 1 || plan.block[axis] < 1 || plan.grid[axis] > 0x7fffffff || plan.block[axis] > 1024) {
      throw RuntimeError(fmt::format("{}: launch geometry grid {}x{}x{}, block {}x{}x{} is out of range", kernel,
                                     plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0], plan.block[1], plan.block[2]));
    }
  }
  plan.dynamic_shared_bytes = scope.integer(description.shared_memory, kernel + ": shared memory");
  if (plan.dynamic_shared_bytes < 0)
    throw RuntimeError(fmt::format("{}: dynamic shared memory of {} bytes", kernel, plan.dynamic_shared_bytes));

  for (const ArgumentDescription& argument : description.arguments) {
    ArgumentPlan planned;
    planned.description = argument;
    const std::string what = fmt::format("{}: argument {}", kernel, argument.name);
    if (argument.kind == "buffer") {
      planned.element_bytes = dtype_bytes(argument.dtype);
      if (planned.element_bytes == 0) throw RuntimeError(fmt::format("{}: unknown dtype '{}'", what, argument.dtype));
      planned.count = scope.integer(argument.count, what + " count");
      if (planned.count < 0) throw RuntimeError(fmt::format("{}: count {} is negative", what, planned.count));
    } else if (argument.kind == "scalar") {
      if (dtype_bytes(argument.dtype) == 0) throw RuntimeError(fmt::format("{}: unknown dtype '{}'", what, argument.dtype));
      planned.default_value = scope.evaluate(argument.value, what);
    }
    plan.arguments.push_back(std::move(planned));
  }
  for (ArgumentPlan& planned : plan.arguments) {
    const ArgumentDescription& argument = planned.description;
    if (argument.kind != "tensor_map") continue;
    const std::string what = fmt::format("{}: tensor map {}", kernel, argument.name);
    for (std::size_t index = 0; index < plan.arguments.size(); ++index) {
      if (plan.arguments[index].description.name == argument.buffer && plan.arguments[index].description.kind == "buffer")
        planned.buffer_index = static_cast<int>(index);
    }
    if (planned.buffer_index < 0) throw RuntimeError(fmt::format("{}: no buffer argument '{}'", what, argument.buffer));
    planned.element_bytes = plan.arguments[static_cast<std::size_t>(planned.buffer_index)].element_bytes;
    if (argument.dims.empty() || argument.dims.size() > 5 || argument.box.size() != argument.dims.size())
      throw RuntimeError(fmt::format("{}: {} dims and {} box sizes (1 to 5 each, as many)", what, argument.dims.size(), argument.box.size()));
    for (const std::string& dimension : argument.dims) planned.dims.push_back(scope.integer(dimension, what + " dims"));
    for (const std::string& size : argument.box) planned.box.push_back(scope.integer(size, what + " box"));
    planned.swizzle_bytes = scope.integer(argument.swizzle, what + " swizzle");
  }
  return plan;
}

}  // namespace kernlathe
