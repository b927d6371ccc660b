#include "kernlathe/embedded.h"

#include <mutex>

namespace kernlathe {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<const EmbeddedKernel*> kernels;
};

Registry& registry() {
  static Registry instance;  // constructed on first use, so generated initialisers may run in any order
  return instance;
}

}  // namespace

bool register_embedded_kernel(const EmbeddedKernel& kernel) {
  Registry& instance = registry();
  std::lock_guard lock(instance.mutex);
  instance.kernels.push_back(&kernel);
  return true;
}

std::vector<const EmbeddedKernel*> embedded_kernels() {
  Registry& instance = registry();
  std::lock_guard lock(instance.mutex);
  return instance.kernels;
}

}  // namespace kernlathe
