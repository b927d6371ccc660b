#pragma once
// The space section: parameters (values, range, pow2, defaults), derived values and constraints, from a space file
// or inline in a spec. Structure and expression syntax are checked here; names are resolved by name_resolution.h
// once the spec's problem symbols are known. Internal to the spec loader; other stages use spec_loader.h.

#include <filesystem>
#include <string>
#include <string_view>

#include "tuner/spec/model.h"
#include "tuner/spec/yaml_reader.h"

namespace kernlathe::spec_loading {

// One value of a parameter of the given type (a verification reference reads its values the same way).
Value read_parameter_value(const Document& document, const YAML::Node& node, ParameterType type,
                           std::string_view what);

// A space mapping. A name, when given, must be usable as a path component (path_names.h).
Space read_space(const Document& document, const YAML::Node& node);

// A whole space file: its text and the file it came from (for messages and Space::file).
Space parse_space_document(const std::string& yaml_text, const std::filesystem::path& file);

}  // namespace kernlathe::spec_loading
