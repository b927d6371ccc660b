#pragma once
// Owning handles for the driver objects the evaluation worker and the measurement code hold: device memory, a
// loaded module and an event. Each releases its object on destruction (reporting, never throwing, a failure), so
// thousands of configurations leave nothing behind, and each moves but does not copy.

#include <cstddef>
#include <utility>

#include "tuner/driver/cuda_driver.h"

namespace kernlathe::gpu {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);  // bytes == 0 allocates nothing
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : pointer_(std::exchange(other.pointer_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(pointer_, other.pointer_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  CUdeviceptr get() const { return pointer_; }
  std::size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr pointer_ = 0;
  std::size_t bytes_ = 0;
};

class LoadedModule {
 public:
  LoadedModule() = default;
  explicit LoadedModule(CUmodule module) : module_(module) {}
  ~LoadedModule();
  LoadedModule(LoadedModule&& other) noexcept : module_(std::exchange(other.module_, nullptr)) {}
  LoadedModule& operator=(LoadedModule&& other) noexcept {
    std::swap(module_, other.module_);
    return *this;
  }
  CUmodule get() const { return module_; }

 private:
  CUmodule module_ = nullptr;
};

class Event {
 public:
  Event() = default;
  static Event create();  // a timing event (CU_EVENT_DEFAULT) in the current context
  ~Event();
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
};

}  // namespace kernlathe::gpu
