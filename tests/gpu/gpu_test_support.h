// Helpers shared by the GPU tests.
#pragma once

#include <cstdlib>
#include <string>

namespace kernlathe {

// The environment variable's value, or `fallback` when it is unset or empty: the device scripts point
// KERNLATHE_SOURCE_DIR and TUNE_BINARY at the carried tree, and the build's compile definitions are the fallback.
inline std::string from_environment(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

}  // namespace kernlathe
