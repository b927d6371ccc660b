#pragma once
// The path of the running executable: compile and evaluation workers are started from the `tune` binary itself.

#include <filesystem>

namespace kernlathe {

// /proc/self/exe resolved. Throws std::filesystem::filesystem_error where /proc is not mounted.
std::filesystem::path current_executable();

}  // namespace kernlathe
