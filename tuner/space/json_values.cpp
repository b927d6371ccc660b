#include "tuner/space/json_values.h"

#include <variant>

namespace kernlathe {

nlohmann::ordered_json value_to_json(const Value& value) {
  return std::visit([](const auto& held) -> nlohmann::ordered_json { return held; }, value);
}

nlohmann::ordered_json configuration_to_json(const Space& space, const Configuration& configuration) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < space.parameters.size(); ++i)
    object[space.parameters[i].name] = value_to_json(configuration[i]);
  return object;
}

}  // namespace kernlathe
