#include "tuner/compile/instantiate.h"

#include <fmt/format.h>

namespace kernlathe {

namespace {

int enumeration_index(const Parameter& parameter, const Value& value) {
  if (parameter.type != ParameterType::enumeration) return -1;
  for (std::size_t index = 0; index < parameter.values.size(); ++index) {
    if (expr::operator_equal(parameter.values[index], value)) return static_cast<int>(index);
  }
  return -1;
}

}  // namespace

std::string arch_for(const DeviceProperties& device, bool arch_specific) {
  return with_arch_specific_suffix(fmt::format("sm_{}{}", device.arch_major, device.arch_minor), arch_specific);
}

CompileRequest instantiate(const KernelSpec& spec, const SpaceEnumerator& space, const Configuration& configuration,
                           const std::string& arch) {
  const Space& space_model = space.space();
  if (configuration.size() != space_model.parameters.size()) {
    throw TunerError(fmt::format("configuration of {} has {} values for {} parameters", spec.name,
                                 configuration.size(), space_model.parameters.size()));
  }
  std::vector<CompileTimeValue> values;
  for (std::size_t index = 0; index < configuration.size(); ++index) {
    const Parameter& parameter = space_model.parameters[index];
    values.push_back({parameter.name, configuration[index], enumeration_index(parameter, configuration[index])});
  }
  for (auto& [name, value] : space.derived_values(configuration)) values.push_back({name, std::move(value), -1});

  std::string name_expression = spec.entry_point;
  if (!spec.template_arguments.empty()) {
    Bindings bindings = space.bindings(configuration);
    std::vector<std::string> arguments;
    for (const Expression& argument : spec.template_arguments) {
      Expression bound = argument;  // binding mutates; the spec is shared
      bound.bind(bindings.scope);
      arguments.push_back(template_argument_text(bound.evaluate(bindings.slots)));
    }
    name_expression += fmt::format("<{}>", fmt::join(arguments, ", "));
  }
  return make_compile_request(read_template_source(spec.template_file), values, std::move(name_expression),
                              spec.compile_options, arch, spec.needs_arch_specific);
}

}  // namespace kernlathe
