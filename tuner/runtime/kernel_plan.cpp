#include "tuner/runtime/kernel_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "kernlathe/runtime.h"
#include "tuner/common/hash.h"
#include "tuner/driver/tensor_map_strides.h"
#include "tuner/expr/expression.h"
#include "tuner/runtime/description_scope.h"

namespace kernlathe {

namespace {

// Expressions of the plan evaluated on the scope select() checked the candidates with: an error names the kernel, the
// value being planned and the expression.
class PlanScope {
 public:
  explicit PlanScope(DescriptionScope& scope) : scope_(scope) {}

  Value evaluate(const std::string& text, const std::string& what) const {
    return guarded(text, what, [&] { return scope_.evaluate(text); });
  }

  Value derived(std::size_t index, const std::string& what) const {
    return guarded(scope_.description().derived[index].expression, what, [&] { return scope_.evaluate_derived(index); });
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
  template <typename Evaluation>
  static Value guarded(const std::string& text, const std::string& what, Evaluation evaluation) {
    try {
      return evaluation();
    } catch (const std::exception& error) {
      throw RuntimeError(fmt::format("{}: '{}' cannot be evaluated: {}", what, text, error.what()));
    }
  }

  DescriptionScope& scope_;
};

Selection usable_or_error(const KernelDatabase& database, Selection selection) {
  if (!selection.usable()) throw RuntimeError(fmt::format("{}: {}", database.kernel, selection.reason));
  return selection;
}

int enumeration_index(const ParameterDescription& parameter, const Value& value) {
  if (parameter.type != "enumeration") return -1;
  for (std::size_t index = 0; index < parameter.values.size(); ++index) {
    if (expr::operator_equal(parameter.values[index], value)) return static_cast<int>(index);
  }
  return -1;
}

int argument_index(const KernelPlan& plan, const std::string& name) {
  for (std::size_t index = 0; index < plan.arguments.size(); ++index)
    if (plan.arguments[index].description.name == name) return static_cast<int>(index);
  return -1;
}

// The pipeline's buffers, the item layouts and the loader settings of the selected configuration. Settings the
// description leaves out take the naive value, as in `tune`.
StreamPlan plan_stream(const KernelDatabase& database, const KernelPlan& plan, const PlanScope& scope) {
  const StreamDescription& stream = *database.description.stream;
  const std::string& kernel = database.kernel;
  StreamPlan planned;
  planned.input_argument = argument_index(plan, stream.input);
  planned.output_argument = argument_index(plan, stream.output);
  for (const auto& [role, index, name] : {std::tuple{"input", planned.input_argument, stream.input},
                                          std::tuple{"output", planned.output_argument, stream.output}}) {
    if (index < 0 || plan.arguments[static_cast<std::size_t>(index)].description.kind != "buffer" ||
        plan.arguments[static_cast<std::size_t>(index)].description.scratch)
      throw RuntimeError(fmt::format("{}: the stream's {} '{}' is not a buffer argument of the kernel", kernel, role, name));
    for (const ArgumentPlan& argument : plan.arguments) {
      if (argument.description.kind == "tensor_map" && argument.description.buffer == name)
        throw RuntimeError(fmt::format("{}: tensor map '{}' describes the stream's {} buffer, which changes per batch; "
                                       "the runtime cannot stream it", kernel, argument.description.name, role));
    }
  }
  planned.input_item.dtype = stream.dtype;
  if (dtype_bytes(stream.dtype) == 0) throw RuntimeError(fmt::format("{}: the stream's dtype '{}' is unknown", kernel, stream.dtype));
  for (const std::string& dimension : stream.item_shape) {
    planned.input_item.shape.push_back(scope.integer(dimension, kernel + ": stream item shape"));
    if (planned.input_item.shape.back() < 1)
      throw RuntimeError(fmt::format("{}: stream item dimension '{}' is {}", kernel, dimension, planned.input_item.shape.back()));
  }
  const ArgumentPlan& input = plan.arguments[static_cast<std::size_t>(planned.input_argument)];
  if (input.count != planned.input_item.elements() || input.element_bytes != dtype_bytes(stream.dtype))
    throw RuntimeError(fmt::format("{}: an item ({} {} elements) is not what the input buffer '{}' holds per item ({} {})",
                                   kernel, planned.input_item.elements(), stream.dtype, input.description.name, input.count,
                                   input.description.dtype));
  const ArgumentPlan& output = plan.arguments[static_cast<std::size_t>(planned.output_argument)];
  planned.output_item = {output.description.dtype, {output.count}};
  planned.tuned_items = stream.items.empty() ? 0 : scope.integer(stream.items, kernel + ": stream items");

  const auto& loader = database.description.loader;
  auto setting = [&](const char* name, std::int64_t naive) {
    auto found = loader.find(name);
    return found == loader.end() ? naive : scope.integer(found->second, fmt::format("{}: loader setting {}", kernel, name));
  };
  planned.loader.pinned = setting("pinned", 0) != 0;
  planned.loader.workers = static_cast<int>(setting("workers", 1));
  planned.loader.prefetch = static_cast<int>(setting("prefetch", 1));
  planned.loader.streams = static_cast<int>(setting("streams", 1));
  planned.loader.batch = setting("batch", 1);
  planned.loader.chunk_bytes = setting("chunk_bytes", 0);
  if (planned.loader.workers < 1 || planned.loader.prefetch < 1 || planned.loader.streams < 1 || planned.loader.batch < 1 ||
      planned.loader.chunk_bytes < 0)
    throw RuntimeError(fmt::format("{}: loader settings {} are out of range", kernel, planned.loader.to_string()));
  return planned;
}

// The derived values that read a device property other than the arch, directly or through an earlier derived value;
// reads(index) gives the names derived value `index` reads and throws where it cannot be parsed.
template <typename Reads>
std::vector<std::string> dependent_values(const KernelDescription& description,
                                          const std::vector<std::string>& device_properties, Reads reads) {
  // The arch is part of every key already, so values that read only the arch do not vary within one.
  std::set<std::string> dependent;
  for (const std::string& property : device_properties)
    if (property != "arch" && property != "arch_major" && property != "arch_minor") dependent.insert(property);
  std::vector<std::string> values;
  for (std::size_t index = 0; index < description.derived.size(); ++index) {
    std::vector<std::string> names;
    try {
      names = reads(index);
    } catch (const std::exception&) {
      continue;  // plan_kernel reports it when it evaluates the value
    }
    for (const std::string& name : names) {
      if (!dependent.contains(name)) continue;
      values.push_back(description.derived[index].name);
      dependent.insert(description.derived[index].name);
      break;
    }
  }
  return values;
}

// embedded_key of a request whose headers are given apart. Each part is hashed as "<size>:<bytes>" in place rather
// than joined into one string first (gemm_bf16's headers are 100 KiB).
std::string request_key(const CompileRequest& request, const HeaderFiles& headers) {
  std::uint64_t state = fnv1a_64(request.source);
  for (const auto& [name, contents] : headers) {
    state = fnv1a_64_sized(name, state);
    state = fnv1a_64_sized(contents, state);
  }
  state = fnv1a_64_sized(request.name_expression, state);
  state = fnv1a_64_sized(request.arch, state);
  for (const std::string& option : request.options) {
    if (option.rfind("-I", 0) == 0) continue;
    state = fnv1a_64_sized(option, state);
  }
  return fmt::format("{:016x}", state);
}

// Names the plan's cubin (KernelPlan::embedded_key) by the request without the device-dependent values that no
// source file names: they are bound at launch, so every board of the arch finds the same cubin.
void key_plan(KernelPlan& plan, const DescriptionScope& scope, const TemplateSource& source,
              const DeviceIdentity& device, const std::vector<CompileTimeValue>& values) {
  const KernelDescription& description = scope.description();
  std::vector<std::string> property_names;
  for (const auto& [name, value] : device.properties) property_names.push_back(name);
  auto reads = [&](std::size_t index) { return scope.derived_reads(index); };
  for (const std::string& name : dependent_values(description, property_names, reads))
    if (!sources_name(source, name)) plan.unkeyed_values.push_back(name);
  if (plan.unkeyed_values.empty()) {
    plan.embedded_key = embedded_key(plan.request);
    return;
  }
  std::vector<CompileTimeValue> keyed;
  for (const CompileTimeValue& value : values)
    if (std::find(plan.unkeyed_values.begin(), plan.unkeyed_values.end(), value.name) == plan.unkeyed_values.end())
      keyed.push_back(value);
  // The keyed request differs from plan.request in its prelude alone: the headers are hashed from the plan's request
  // rather than copied into a second one.
  const TemplateSource template_alone{source.source_name, source.text, {}};
  plan.embedded_key = request_key(make_compile_request(template_alone, keyed, plan.request.name_expression,
                                                       description.compile_options, device.arch(),
                                                       description.arch_specific),
                                  plan.request.headers);
}

}  // namespace

std::size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "f32" || dtype == "i32" || dtype == "u32") return 4;
  if (dtype == "f64" || dtype == "i64") return 8;
  if (dtype == "i8" || dtype == "u8") return 1;
  return 0;
}

std::string embedded_key(const CompileRequest& request) { return request_key(request, request.headers); }

std::vector<std::string> device_dependent_values(const KernelDescription& description,
                                                 const std::vector<std::string>& device_properties) {
  return dependent_values(description, device_properties, [&](std::size_t index) {
    return expr::Expression::parse(description.derived[index].expression).names();
  });
}

bool sources_name(const TemplateSource& source, const std::string& name) {
  auto is_identifier_character = [](char character) {
    return (character >= 'a' && character <= 'z') || (character >= 'A' && character <= 'Z') ||
           (character >= '0' && character <= '9') || character == '_';
  };
  auto names = [&](const std::string& text) {
    for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      bool starts = at == 0 || !is_identifier_character(text[at - 1]);
      bool ends = at + name.size() == text.size() || !is_identifier_character(text[at + name.size()]);
      if (starts && ends) return true;
    }
    return false;
  };
  if (names(source.text)) return true;
  for (const auto& [file, contents] : source.headers)
    if (names(contents)) return true;
  return false;
}

Selection select_usable(const KernelDatabase& database, const DeviceIdentity& device, const Problem& requested,
                        const SelectOptions& options) {
  return usable_or_error(database, select(database, device, requested, options));
}

namespace {

// plan_kernel; known_hash: template_hash(source), when the caller has it.
KernelPlan plan_sources(const KernelDatabase& database, const TemplateSource& source, const std::string* known_hash,
                        const DeviceIdentity& device, const Problem& requested, const SelectOptions& options) {
  const KernelDescription& description = database.description;
  const std::string& kernel = database.kernel;
  if (description.entry_point.empty()) {
    throw RuntimeError(fmt::format("{}: the database has no kernel description (written by an older tune); tune the "
                                   "kernel again or export it with `tune export`", kernel));
  }
  const std::string hash = known_hash != nullptr ? *known_hash : template_hash(source);
  if (hash != description.template_hash) {
    throw RuntimeError(fmt::format("{}: the template sources (hash {}) are not the ones the database was written for "
                                   "({}); export the database and the sources together",
                                   kernel, hash, description.template_hash));
  }

  KernelPlan plan;
  // One scope for the ladder and the launch: every expression is parsed and bound once per plan.
  DescriptionScope description_scope(description, device, requested);
  // Checked before anything is compiled or launched: a configuration that breaks a constraint here is never run.
  plan.selection = usable_or_error(database, select(database, device, description_scope, options));
  plan.problem = description_scope.problem();

  PlanScope scope(description_scope);
  std::vector<CompileTimeValue> values;
  for (const ParameterDescription& parameter : description.parameters) {
    auto found = plan.selection.configuration.find(parameter.name);
    if (found == plan.selection.configuration.end()) {
      throw RuntimeError(fmt::format("{}: the selected configuration ({}) has no value for parameter {}", kernel,
                                     rung_name(plan.selection.rung), parameter.name));
    }
    values.push_back({parameter.name, found->second, enumeration_index(parameter, found->second)});
  }
  description_scope.set_parameters(plan.selection.configuration);
  for (std::size_t index = 0; index < description.derived.size(); ++index) {
    const NamedExpression& derived = description.derived[index];
    values.push_back({derived.name, scope.derived(index, fmt::format("{}: derived value {}", kernel, derived.name)), -1});
  }

  std::string name_expression = description.entry_point;
  if (!description.template_arguments.empty()) {
    std::vector<std::string> arguments;
    for (const std::string& argument : description.template_arguments)
      arguments.push_back(template_argument_text(scope.evaluate(argument, kernel + ": template argument")));
    name_expression += fmt::format("<{}>", fmt::join(arguments, ", "));
  }
  plan.request = make_compile_request(source, values, name_expression, description.compile_options, device.arch(),
                                      description.arch_specific);
  key_plan(plan, description_scope, source, device, values);

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
    for (const std::string& stride : argument.strides) planned.strides.push_back(scope.integer(stride, what + " strides"));
    // Checked at the plan, on any machine, rather than when the driver refuses the descriptor at bind time.
    const auto element_bytes = static_cast<std::int64_t>(planned.element_bytes);
    if (std::string why = gpu::stride_problem(planned.dims, planned.strides, element_bytes); !why.empty())
      throw RuntimeError(fmt::format("{} at dims [{}], strides [{}]: {}", what, fmt::join(planned.dims, ", "),
                                     fmt::join(planned.strides, ", "), why));
  }
  if (description.stream) plan.stream = plan_stream(database, plan, scope);
  return plan;
}

}  // namespace

KernelPlan plan_kernel(const KernelDatabase& database, const TemplateSource& source, const DeviceIdentity& device,
                       const Problem& requested, const SelectOptions& options) {
  return plan_sources(database, source, nullptr, device, requested, options);
}

KernelPlan plan_kernel(const KernelDatabase& database, const KernelSources& sources, const DeviceIdentity& device,
                       const Problem& requested, const SelectOptions& options) {
  return plan_sources(database, sources.source, &sources.template_hash, device, requested, options);
}

}  // namespace kernlathe
