#include "tuner/measure/launch_gate.h"

#include <atomic>
#include <utility>

namespace kernlathe {

LaunchGate::LaunchGate(CUstream stream) : stream_(stream) {
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  void* host = nullptr;
  if (cuda.cuMemHostAlloc(&host, sizeof(std::uint32_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
    return;
  CUdeviceptr device = 0;
  if (cuda.cuMemHostGetDevicePointer(&device, host, 0) != CUDA_SUCCESS) {
    cuda.cuMemFreeHost(host);
    return;
  }
  flag_ = static_cast<volatile std::uint32_t*>(host);
  *flag_ = 0;
  flag_on_device_ = device;
}

LaunchGate::~LaunchGate() {
  if (flag_ == nullptr) return;
  release();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  // Nothing waits on the flag any more (released above), so the word may go once the stream has drained.
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  cuda.cuStreamSynchronize(stream_);
  cuda.cuMemFreeHost(const_cast<std::uint32_t*>(flag_));
}

void LaunchGate::raise(std::uint32_t generation) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *flag_ = generation;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool LaunchGate::hold() {
  if (!usable()) return false;
  std::unique_lock lock(mutex_);
  if (held_) return false;
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  const std::uint32_t wanted = generation_ + 1;
  if (cuda.cuStreamWaitValue32(stream_, flag_on_device_, wanted, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
    disabled_ = true;  // refused (stream memory operations unsupported): open for good
    return false;
  }
  generation_ = wanted;
  held_ = true;
  deadline_ = std::chrono::steady_clock::now() + watchdog_ms;
  if (!watchdog_.joinable()) watchdog_ = std::thread([this] { watch(); });
  lock.unlock();
  changed_.notify_all();
  return true;
}

void LaunchGate::release() {
  std::lock_guard lock(mutex_);
  if (!held_) return;
  raise(generation_);
  held_ = false;
}

bool LaunchGate::fired() {
  std::lock_guard lock(mutex_);
  return std::exchange(fired_, false);
}

void LaunchGate::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!held_) {
      changed_.wait(lock);
      continue;
    }
    const std::uint32_t watched = generation_;
    if (changed_.wait_until(lock, deadline_, [&] { return stopping_ || !held_ || generation_ != watched; })) continue;
    // Held past the deadline: the host is blocked inside the held work (or descheduled). Let the GPU go.
    raise(watched);
    held_ = false;
    fired_ = true;
  }
}

}  // namespace kernlathe
