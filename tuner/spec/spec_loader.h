#pragma once
// Reads kernel specs (kernels/*.yaml) and search spaces (spaces/*.yaml) into the plain structs of model.h.
//
// A spec is data: loading one reads the spec, the space file it names and checks that its template exists;
// it never follows includes or runs anything. Every problem is one InputError whose message starts with
// file:line:column, says what is wrong and, where cheap, how to fix it. Every expression is parsed and every
// name in it resolved here, so a typo fails before any compilation or enumeration starts.
//
// The loader's sections are modules of their own, internal to tuner/spec: yaml_reader (YAML with locations),
// space_reader, argument_reader, stream_section, name_resolution and kernel_spec_reader (the whole spec); what a
// spec may ask of the tool is bounded by path_names (names that become output paths) and nvrtc_options (the
// compile options it may pass).

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tuner/spec/model.h"

namespace kernlathe {

// Problem sizes given on the command line (--problem M=1024,N=2048), applied over the spec's defaults.
// A later entry for the same symbol wins.
using ProblemOverrides = std::vector<std::pair<std::string, std::int64_t>>;

// Paths inside a spec (template, space) are relative to the spec file. A file whose name ends in ".json" is a
// community T1 file with its kernel description, read by t1_reader.h.
KernelSpec load_kernel_spec(const std::filesystem::path& file, const ProblemOverrides& overrides = {});
// `file` names the text in messages and anchors relative paths; it need not exist.
KernelSpec parse_kernel_spec(const std::string& yaml_text, const std::filesystem::path& file,
                             const ProblemOverrides& overrides = {});

// A space on its own: structure and expression syntax are checked; names are resolved when a spec uses
// the space, because only the spec knows the problem symbols its constraints may read.
Space load_space(const std::filesystem::path& file);
Space parse_space(const std::string& yaml_text, const std::filesystem::path& file);

// "M=1024,N=2048" (spaces around items allowed). InputError on anything else.
ProblemOverrides parse_problem_overrides(std::string_view text);

// An existing file as given, else kernels/<name>.yaml under the working directory. InputError naming what
// was tried and the specs that do exist.
std::filesystem::path find_spec(std::string_view name_or_path);

}  // namespace kernlathe
