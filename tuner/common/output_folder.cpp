#include "tuner/common/output_folder.h"

#include <system_error>

#include <fmt/format.h>

#include "tuner/common/error.h"

namespace kernlathe {

void check_output_folder(std::string_view option, const std::filesystem::path& folder, std::string_view purpose) {
  if (folder.empty()) return;
  std::error_code error;
  for (std::filesystem::path path = folder; !path.empty(); path = path.parent_path()) {
    const std::filesystem::file_status status = std::filesystem::status(path, error);
    if (status.type() == std::filesystem::file_type::not_found) {
      if (path == path.parent_path()) break;
      continue;
    }
    if (status.type() == std::filesystem::file_type::directory) break;
    if (path == folder)
      throw InputError(fmt::format("{} {}: is a file, not a folder ({} names the folder of {})", option,
                                   folder.string(), option, purpose));
    throw InputError(fmt::format("{} {}: {} is a file, so no folder can be made under it", option, folder.string(),
                                 path.string()));
  }
}

}  // namespace kernlathe
