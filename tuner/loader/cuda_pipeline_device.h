#pragma once
// The driver layer under the streaming pipeline: staging buffers (pinned with cuMemHostAlloc, or pageable),
// device buffers and events per slot, streams, chunked asynchronous copies and the kernel launch per batch.
// Buffers are kept between passes and configurations and only grow, so pinned memory is allocated once and
// reused (allocating it costs far more than a batch's copy).

#include <cuda.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <vector>

#include "tuner/loader/pipeline.h"

namespace kernlathe::loader {

// A prepared kernel, launched once per batch with the slot's device input and output in two of its parameters.
struct BatchKernel {
  CUfunction function = nullptr;
  std::array<unsigned int, 3> grid{1, 1, 1};
  std::array<unsigned int, 3> block{1, 1, 1};
  unsigned int dynamic_shared_bytes = 0;
  // Pointers to every kernel parameter's value, as cuLaunchKernel takes them; they must stay valid during a pass.
  // The input and output entries are replaced per slot.
  std::vector<void*> parameters;
  int input_parameter = -1;                          // index of the parameter receiving the batch
  int output_parameter = -1;                         // index of the parameter the output is copied from
};

class CudaPipelineDevice final : public DeviceOperations {
 public:
  explicit CudaPipelineDevice(CUcontext context);
  ~CudaPipelineDevice() override;
  CudaPipelineDevice(const CudaPipelineDevice&) = delete;
  CudaPipelineDevice& operator=(const CudaPipelineDevice&) = delete;

  // The kernel of the configuration being measured; its grid covers one full batch.
  // batch_items: the items of a full batch (the loader's batch), for the byte count of a short last batch.
  void set_kernel(const BatchKernel& kernel, std::int64_t batch_items) {
    kernel_ = kernel;
    batch_items_ = std::max<std::int64_t>(batch_items, 1);
  }

  // Verified passes fill each batch's device output with 0xFF (NaN for floats) before the kernel, so an element
  // the kernel does not write cannot pass for a result left over from an earlier batch.
  void set_poison_outputs(bool poison) { poison_outputs_ = poison; }

  // Where pinned staging comes from when not from cuMemHostAlloc: the device diagnostic measures staging on 2 MiB
  // pages registered with the driver against it. Both functions or neither; buffers already made keep theirs.
  struct PinnedAllocator {
    std::function<std::byte*(std::size_t bytes)> allocate;
    std::function<void(std::byte*)> release;
  };
  void set_pinned_allocator(PinnedAllocator allocator) { pinned_allocator_ = std::move(allocator); }

  void prepare(int slots, int streams, std::size_t input_bytes, std::size_t output_bytes, bool pinned) override;
  void enter_thread() override;
  std::span<std::byte> host_input(int slot) override;
  std::span<const std::byte> host_output(int slot) override;
  void start_clock() override;
  void submit(int slot, int stream, const BatchRange& batch, std::size_t chunk_bytes) override;
  BatchTimes complete(int slot) override;

 private:
  struct HostBuffer {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    bool pinned = false;
    std::function<void(std::byte*)> release;  // set when a PinnedAllocator made it
  };
  struct Slot {
    HostBuffer input;
    HostBuffer output;
    CUdeviceptr device_input = 0;
    CUdeviceptr device_output = 0;
    std::size_t device_input_bytes = 0;
    std::size_t device_output_bytes = 0;
    std::array<CUevent, 4> events{};  // copy-in begin, copy-in end, kernel end, copy-out end
  };
  void ensure_host(HostBuffer& buffer, std::size_t bytes, bool pinned);
  static void release_host(HostBuffer& buffer);

  CUcontext context_;
  BatchKernel kernel_;
  std::vector<Slot> slots_;
  std::vector<CUstream> streams_;
  CUevent start_event_ = nullptr;
  std::int64_t batch_items_ = 1;
  bool poison_outputs_ = false;
  PinnedAllocator pinned_allocator_;
  std::size_t input_batch_bytes_ = 0;
  std::size_t output_batch_bytes_ = 0;
};

// Host-to-device bandwidth (GB/s) of one large copy from a pinned buffer: the ceiling a streamed pipeline is
// judged against. Best of a few repetitions. The first form pins `bytes` of its own; the second copies from
// `host`, memory the caller pinned (cuMemHostAlloc), `bytes` long.
double measure_pinned_copy_in_gbps(CUcontext context, std::size_t bytes);
double measure_pinned_copy_in_gbps(CUcontext context, const std::byte* host, std::size_t bytes);

}  // namespace kernlathe::loader
