#include "tuner/gpu/driver_handles.h"

namespace kernlathe::gpu {

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  if (bytes == 0) return;
  KERNLATHE_CUDA_CHECK(cuda_driver().cuMemAlloc(&pointer_, bytes));
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_ != 0) KERNLATHE_CUDA_CHECK_NOTHROW(cuda_driver().cuMemFree(pointer_));
}

LoadedModule::~LoadedModule() {
  if (module_ != nullptr) KERNLATHE_CUDA_CHECK_NOTHROW(cuda_driver().cuModuleUnload(module_));
}

Event Event::create() {
  Event event;
  KERNLATHE_CUDA_CHECK(cuda_driver().cuEventCreate(&event.event_, CU_EVENT_DEFAULT));
  return event;
}

Event::~Event() {
  if (event_ != nullptr) KERNLATHE_CUDA_CHECK_NOTHROW(cuda_driver().cuEventDestroy(event_));
}

}  // namespace kernlathe::gpu
