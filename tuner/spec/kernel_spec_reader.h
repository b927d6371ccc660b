#pragma once
// The kernel spec as a whole: name, template and entry point, problem symbols (with the command line's overrides),
// the space (inline or a file), arguments, launch geometry, compile options, verification, metrics, baseline and
// the stream and loader sections; then every name is resolved. What a spec may ask of the tool is checked here
// too: its name becomes a path component (path_names.h), its compile options are on an allow-list
// (nvrtc_options.h), its entry point appears in the template. Internal to the spec loader; other stages use
// spec_loader.h.

#include "tuner/spec/model.h"
#include "tuner/spec/spec_loader.h"
#include "tuner/spec/yaml_reader.h"

namespace kernlathe::spec_loading {

KernelSpec read_kernel_spec(const Document& document, const YAML::Node& root, const ProblemOverrides& overrides);

}  // namespace kernlathe::spec_loading
