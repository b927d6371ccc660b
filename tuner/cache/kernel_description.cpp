#include "tuner/cache/kernel_description.h"

#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/common/hash.h"
#include "tuner/nvrtc/compile_request.h"
#include "tuner/space/configuration_checks.h"

namespace kernlathe {

namespace {

std::string text_of(const Expression& expression, const std::string& empty_value) {
  return expression.empty() ? empty_value : expression.to_string();
}

const char* type_name(ParameterType type) {
  switch (type) {
    case ParameterType::integer: return "integer";
    case ParameterType::boolean: return "boolean";
    case ParameterType::enumeration: return "enumeration";
  }
  return "?";
}

const char* role_name(Role role) {
  switch (role) {
    case Role::in: return "in";
    case Role::out: return "out";
    case Role::inout: return "inout";
  }
  return "?";
}

// The spec's verification reference valid here (the first of its mappings that is), when it names one.
std::optional<Configuration> valid_verification_reference(const KernelSpec& spec, const SpaceEnumerator& space) {
  if (spec.verification.reference_is_baseline || spec.verification.reference.empty()) return std::nullopt;
  try {
    return reference_configuration(spec, space);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

}  // namespace

ConfigurationValues configuration_values(const Space& space, const Configuration& configuration) {
  ConfigurationValues values;
  for (std::size_t index = 0; index < space.parameters.size() && index < configuration.size(); ++index)
    values[space.parameters[index].name] = configuration[index];
  return values;
}

std::optional<Configuration> configuration_from_values(const Space& space, const ConfigurationValues& values) {
  Configuration configuration;
  for (const Parameter& parameter : space.parameters) {
    auto found = values.find(parameter.name);
    if (found == values.end()) return std::nullopt;
    bool declared = false;
    for (const Value& value : parameter.values) declared = declared || (value.index() == found->second.index() && value == found->second);
    if (!declared) return std::nullopt;
    configuration.push_back(found->second);
  }
  return configuration;
}

KernelDescription describe_kernel(const KernelSpec& spec, const SpaceEnumerator& space) {
  KernelDescription description;
  description.kernel = spec.name;
  TemplateSource source = read_template_source(spec.template_file);
  description.template_name = source.source_name;
  description.template_hash = template_hash(source);
  description.spec_hash = spec_hash(spec);
  description.entry_point = spec.entry_point;
  for (const Expression& argument : spec.template_arguments) description.template_arguments.push_back(argument.to_string());
  description.compile_options = spec.compile_options;
  description.arch_specific = spec.needs_arch_specific;
  description.problem = spec.declared_problem.empty() ? spec.problem : spec.declared_problem;
  for (const Parameter& parameter : spec.space.parameters)
    description.parameters.push_back({parameter.name, type_name(parameter.type), parameter.values});
  for (const DerivedValue& derived : spec.space.derived) description.derived.push_back({derived.name, derived.expression.to_string()});
  for (const Constraint& constraint : spec.space.constraints) description.constraints.push_back(constraint.expression.to_string());
  for (std::size_t axis = 0; axis < 3; ++axis) {
    description.grid[axis] = text_of(spec.launch.grid[axis], "1");
    description.block[axis] = text_of(spec.launch.block[axis], "1");
  }
  description.shared_memory = text_of(spec.launch.dynamic_shared_bytes, "0");
  for (const Argument& argument : spec.arguments) {
    ArgumentDescription described;
    described.name = argument.name;
    described.dtype = dtype_name(argument.dtype);
    if (argument.tensor_map) {
      described.kind = "tensor_map";
      described.buffer = argument.tensor_map->buffer;
      for (const Expression& dimension : argument.tensor_map->dims) described.dims.push_back(dimension.to_string());
      for (const Expression& size : argument.tensor_map->box) described.box.push_back(size.to_string());
      described.swizzle = text_of(argument.tensor_map->swizzle, "0");
      for (const Expression& stride : argument.tensor_map->strides) described.strides.push_back(stride.to_string());
    } else if (argument.is_buffer) {
      described.kind = "buffer";
      described.role = role_name(argument.role);
      described.count = argument.count.to_string();
      described.scratch = argument.scratch;
    } else {
      described.kind = "scalar";
      described.value = argument.value.to_string();
    }
    description.arguments.push_back(std::move(described));
  }

  Configuration fallback = space.default_configuration();
  description.default_origin = "space defaults";
  if (!space.is_valid(fallback)) {
    std::optional<Configuration> reference = valid_verification_reference(spec, space);
    if (reference) {
      fallback = *reference;
      description.default_origin = "verification reference";
    } else {
      fallback = space.at(0);
      description.default_origin = "first valid configuration";
    }
  }
  description.default_configuration = configuration_values(spec.space, fallback);
  for (const ProblemDefault& problem_default : spec.space.problem_defaults) {
    ConfigurationValues values = configuration_values(spec.space, space.default_configuration());
    for (const auto& [name, value] : problem_default.values) values[name] = value;
    description.problem_defaults.push_back({problem_default.when.to_string(), std::move(values)});
  }

  const LoaderExpressions& loader = spec.loader;
  for (const auto& [name, expression] : {std::pair{"pinned", &loader.pinned}, {"workers", &loader.workers},
                                          {"prefetch", &loader.prefetch}, {"streams", &loader.streams},
                                          {"batch", &loader.batch}, {"chunk_bytes", &loader.chunk_bytes}}) {
    if (!expression->empty()) description.loader[name] = expression->to_string();
  }
  if (spec.stream.enabled) {
    StreamDescription stream;
    stream.input = spec.stream.input_argument;
    stream.output = spec.stream.output_argument;
    stream.dtype = dtype_name(spec.stream.dtype);
    for (const Expression& dimension : spec.stream.item_shape) stream.item_shape.push_back(dimension.to_string());
    stream.items = spec.stream.items.to_string();
    description.stream = std::move(stream);
  }
  return description;
}

}  // namespace kernlathe
