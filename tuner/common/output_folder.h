#pragma once
// An output folder named on the command line (--out, -o, --best-dir) is checked before a command writes anything:
// a path that is a file, or lies under one, is bad input (exit 2), not a filesystem error halfway through.

#include <filesystem>
#include <string_view>

namespace kernlathe {

// InputError "OPTION PATH: is a file, not a folder (OPTION names the folder of PURPOSE)" when folder is a file, or
// "OPTION PATH: P is a file, so no folder can be made under it" when a parent P is. A folder that exists, or can be
// made, passes; nothing is created.
void check_output_folder(std::string_view option, const std::filesystem::path& folder, std::string_view purpose);

}  // namespace kernlathe
