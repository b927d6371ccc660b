#pragma once
// The arguments section: buffers (count, init, role, scratch), scalars (value) and tensor maps, in the kernel's
// parameter order, plus the dtype and initialisation readers that the stream section shares. Internal to the spec
// loader; other stages use spec_loader.h.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/spec/model.h"
#include "tuner/spec/yaml_reader.h"

namespace kernlathe::spec_loading {

// One of f16 bf16 f32 f64 i8 u8 i32 u32 i64; C and NumPy spellings get a suggestion.
Dtype read_dtype(const Document& document, const YAML::Node& node, std::string_view what);

// {random: {seed, low, high}} | {constant: value} | {sequence: {start, step}}
Initialisation read_initialisation(const Document& document, const YAML::Node& node, const std::string& what);

// The argument at position `index` (default random seeds are index + 1, so two buffers left at the default differ);
// `earlier` are the arguments before it (names must differ; a tensor map describes one of them).
Argument read_argument(const Document& document, const YAML::Node& node, std::size_t index,
                       const std::vector<Argument>& earlier);

}  // namespace kernlathe::spec_loading
