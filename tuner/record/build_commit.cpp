#include "tuner/record/build_commit.h"

#include "kernlathe_build_commit.h"  // generated before each build (cmake/write_build_commit.cmake)

namespace kernlathe {

std::string build_commit() { return KERNLATHE_BUILD_COMMIT; }

std::string version_text() {
  const std::string commit = build_commit();
  return commit.empty() ? std::string(KERNLATHE_VERSION) : std::string(KERNLATHE_VERSION) + " (commit " + commit + ")";
}

}  // namespace kernlathe
