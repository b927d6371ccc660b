#include "tuner/common/current_executable.h"

namespace kernlathe {

std::filesystem::path current_executable() { return std::filesystem::read_symlink("/proc/self/exe"); }

}  // namespace kernlathe
