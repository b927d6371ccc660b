#include "tuner/spec/path_names.h"

#include <fmt/format.h>

#include <cctype>

namespace kernlathe {

std::optional<std::string> path_name_problem(std::string_view name) {
  if (name.empty()) return std::string("is empty");
  if (name.size() > max_path_name_length) {
    return fmt::format("has {} characters, more than the {} a name may have", name.size(), max_path_name_length);
  }
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') continue;
    if (c == '/' || c == '\\') {
      return fmt::format("contains '{}' (a name is one folder or file name, not a path)", c);
    }
    if (std::isprint(static_cast<unsigned char>(c))) return fmt::format("contains '{}'", c);
    return fmt::format("contains the byte 0x{:02x}", static_cast<unsigned char>(c));
  }
  if (name.front() == '.') return std::string("starts with a dot ('.' and '..' name folders; a leading dot hides a file)");
  return std::nullopt;
}

void check_path_name(std::string_view name, std::string_view what, const SourceLocation& where) {
  if (std::optional<std::string> problem = path_name_problem(name)) {
    throw InputError(where, fmt::format("{} '{}' {}: it becomes part of output paths (results/runs/<kernel>/..., "
                                        "results/best/<kernel>.json); use at most {} letters, digits, _, . and -, "
                                        "not starting with a dot",
                                        what, name, *problem, max_path_name_length));
  }
}

}  // namespace kernlathe
