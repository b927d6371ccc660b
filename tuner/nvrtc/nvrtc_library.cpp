#include "tuner/nvrtc/nvrtc_library.h"

#include <cuda.h>  // CUDA_VERSION: the toolkit the prototypes come from
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "tuner/common/error.h"

namespace kernlathe {
namespace {

const NvrtcLibrary* loaded = nullptr;  // set once complete; the handle stays open for the life of the process
std::mutex load_mutex;

NvrtcLibrary load() {
  const std::string versioned = fmt::format("libnvrtc.so.{}", CUDA_VERSION / 1000);
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("KERNLATHE_NVRTC"); chosen != nullptr && *chosen != '\0') candidates.push_back(chosen);
  candidates.push_back(versioned);
  candidates.push_back("libnvrtc.so");
#ifdef KERNLATHE_CUDA_LIBRARY_DIR
  candidates.push_back(std::string(KERNLATHE_CUDA_LIBRARY_DIR) + "/" + versioned);
#endif
  std::string tried;
  for (const std::string& candidate : candidates) {
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* reason = dlerror();
      tried += fmt::format("\n  {}: {}", candidate, reason ? reason : "not loaded");
      continue;
    }
    NvrtcLibrary nvrtc;
    nvrtc.path = candidate;
    std::string missing;
#define KERNLATHE_RESOLVE_NVRTC_POINTER(name)                                         \
    nvrtc.name = reinterpret_cast<decltype(nvrtc.name)>(dlsym(library, #name)); \
    if (nvrtc.name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name;
    KERNLATHE_NVRTC_FUNCTIONS(KERNLATHE_RESOLVE_NVRTC_POINTER)
#undef KERNLATHE_RESOLVE_NVRTC_POINTER
    if (missing.empty()) return nvrtc;
    dlclose(library);
    tried += fmt::format("\n  {}: lacks {}", candidate, missing);
  }
  throw TunerError(fmt::format("NVRTC (the CUDA runtime compiler) is needed to compile this kernel and could not be "
                               "loaded; install the CUDA toolkit's NVRTC, set LD_LIBRARY_PATH, or name the library "
                               "in KERNLATHE_NVRTC. Tried:{}", tried));
}

}  // namespace

const NvrtcLibrary& nvrtc() {
  std::lock_guard lock(load_mutex);
  if (loaded == nullptr) loaded = new NvrtcLibrary(load());
  return *loaded;
}

}  // namespace kernlathe
