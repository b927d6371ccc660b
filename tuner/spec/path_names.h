#pragma once
// Names from a spec that become parts of output paths: the kernel name (results/runs/<kernel>/...,
// results/best/<kernel>.json) and the space name. A spec is data, so such a name may not climb out of the folder
// it is put in, be absolute, or hide: one path component of [A-Za-z0-9_.-], not starting with a dot, not empty,
// at most max_path_name_length characters.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "tuner/common/error.h"

namespace kernlathe {

inline constexpr std::size_t max_path_name_length = 64;

// Why `name` cannot be one component of an output path ("contains '/'", "starts with a dot", ...), or nullopt
// when it can.
std::optional<std::string> path_name_problem(std::string_view name);

// InputError at `where` when `name` cannot be one component of an output path; `what` names it ("kernel name").
void check_path_name(std::string_view name, std::string_view what, const SourceLocation& where);

}  // namespace kernlathe
