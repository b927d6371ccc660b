#include "tuner/runtime/launch_layout.h"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "kernlathe/runtime.h"
#include "tuner/common/float16.h"

namespace kernlathe {

namespace {

bool application_sets(const ArgumentPlan& argument) {
  return argument.description.kind != "tensor_map" && !argument.description.scratch;
}

std::string application_names(const std::vector<ArgumentPlan>& arguments) {
  std::string names;
  for (const ArgumentPlan& argument : arguments) {
    if (application_sets(argument)) names += (names.empty() ? "" : ", ") + argument.description.name;
  }
  return names;
}

}  // namespace

LaunchLayout resolve_launch_layout(const std::string& kernel, const std::vector<ArgumentPlan>& arguments,
                                   std::span<const std::string_view> pointer_names,
                                   std::span<const std::string_view> scalar_names) {
  constexpr std::size_t unset = static_cast<std::size_t>(-1);
  std::vector<std::size_t> given(arguments.size(), unset);  // per parameter: the position of the value given
  auto resolve = [&](std::span<const std::string_view> names, bool pointers) {
    for (std::size_t position = 0; position < names.size(); ++position) {
      std::string_view name = names[position];
      std::size_t index = 0;
      while (index < arguments.size() && arguments[index].description.name != name) ++index;
      if (index == arguments.size() || !application_sets(arguments[index])) {
        throw RuntimeError(fmt::format("{}: '{}' is not an argument the application sets (it sets {})", kernel, name,
                                       application_names(arguments)));
      }
      if (given[index] != unset) throw RuntimeError(fmt::format("{}: argument '{}' is set twice", kernel, name));
      if ((arguments[index].description.kind == "buffer") != pointers) {
        throw RuntimeError(fmt::format("{}: argument '{}' is a {}, it was given a {}", kernel, name,
                                       arguments[index].description.kind, pointers ? "pointer" : "number"));
      }
      given[index] = position;
    }
  };
  resolve(pointer_names, true);
  resolve(scalar_names, false);

  LaunchLayout layout;
  layout.pointer_count = pointer_names.size();
  layout.scalar_count = scalar_names.size();
  for (std::size_t index = 0; index < arguments.size(); ++index) {
    const ArgumentPlan& argument = arguments[index];
    const std::string& kind = argument.description.kind;
    ParameterSource source;
    if (kind == "tensor_map") {
      source = {ParameterFill::tensor_map, static_cast<std::size_t>(argument.buffer_index)};
      layout.has_tensor_maps = true;
    } else if (argument.description.scratch) {
      source = {ParameterFill::scratch, 0};
    } else if (kind == "buffer") {
      if (given[index] == unset) {
        throw RuntimeError(fmt::format("{}: buffer argument '{}' was not set", kernel, argument.description.name));
      }
      source = {ParameterFill::pointer, given[index]};
    } else {
      source = given[index] == unset ? ParameterSource{ParameterFill::default_scalar, 0}
                                     : ParameterSource{ParameterFill::scalar, given[index]};
    }
    layout.parameters.push_back(source);
  }
  return layout;
}

void store_scalar(const ArgumentDescription& argument, const Value& value, std::byte* destination,
                  const std::string& kernel) {
  double number = 0;
  std::int64_t integer = 0;
  if (const auto* held = std::get_if<std::int64_t>(&value)) number = static_cast<double>(*held), integer = *held;
  else if (const auto* real = std::get_if<double>(&value)) number = *real, integer = static_cast<std::int64_t>(*real);
  else if (const auto* flag = std::get_if<bool>(&value)) number = *flag ? 1 : 0, integer = *flag ? 1 : 0;
  else throw RuntimeError(fmt::format("{}: scalar argument {} has the text value '{}'", kernel, argument.name, std::get<std::string>(value)));
  auto store = [&](auto converted) { std::memcpy(destination, &converted, sizeof converted); };
  const std::string& dtype = argument.dtype;
  if (dtype == "f32") store(static_cast<float>(number));
  else if (dtype == "f64") store(number);
  else if (dtype == "f16") store(float_to_half_bits(static_cast<float>(number)));
  else if (dtype == "bf16") store(float_to_bfloat16_bits(static_cast<float>(number)));
  else if (dtype == "i32") store(static_cast<std::int32_t>(integer));
  else if (dtype == "u32") store(static_cast<std::uint32_t>(integer));
  else if (dtype == "i64") store(integer);
  else if (dtype == "i8") store(static_cast<std::int8_t>(integer));
  else if (dtype == "u8") store(static_cast<std::uint8_t>(integer));
  else throw RuntimeError(fmt::format("{}: scalar argument {} of type {} is not supported by the runtime", kernel, argument.name, dtype));
}

}  // namespace kernlathe
