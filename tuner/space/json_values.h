#pragma once
// Parameter values and configurations as JSON, the way every `--json` output of the commands and the report's data
// write them: a value as its own JSON type (integer, number, boolean, string), a configuration as an object of the
// space's parameters in declared order.

#include <nlohmann/json.hpp>

#include "tuner/space/space.h"

namespace kernlathe {

nlohmann::ordered_json value_to_json(const Value& value);
nlohmann::ordered_json configuration_to_json(const Space& space, const Configuration& configuration);

}  // namespace kernlathe
