#pragma once
// The stream: and loader: sections of a streamed spec (issue 7): where the host-side data comes from (files or a
// generator), the item count and shape, which arguments receive and return a batch, and the loader settings as
// expressions of parameters. Internal to the spec loader; other stages use spec_loader.h.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/spec/model.h"
#include "tuner/spec/yaml_reader.h"

namespace kernlathe::spec_loading {

// Why a stream.files pattern's ${NAME} / ${NAME:-default} references are malformed (an unclosed '${', a name
// that is not an environment variable's, a nested '${' in a default), or nullopt. Checked at load, so the
// expansion at run time meets only well-formed references. Messages quote the pattern as written, never its
// expansion: the environment's values stay out of logs.
std::optional<std::string> file_pattern_problem(std::string_view pattern);

// stream: {files: <glob> | generate: <initialisation>, format: npy|raw, items, item_shape, dtype, input, output}
StreamWorkload read_stream(const Document& document, const YAML::Node& node, const std::vector<Argument>& arguments);

// The typed loader settings of a streamed spec; every key is an expression of parameters.
void read_loader_settings(const Document& document, const YAML::Node& node, LoaderExpressions& loader);

// Item count and shape are fixed per problem (the dataset is); loader settings may read parameters.
void check_stream_names(const KernelSpec& spec);

}  // namespace kernlathe::spec_loading
