#include "tuner/loader/cuda_pipeline_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tuner/driver/cuda_driver.h"

namespace kernlathe::loader {

using gpu::cuda_driver;

CudaPipelineDevice::CudaPipelineDevice(CUcontext context) : context_(context) {
  enter_thread();
  KERNLATHE_CUDA_CHECK(cuda_driver().cuEventCreate(&start_event_, CU_EVENT_DEFAULT));
}

CudaPipelineDevice::~CudaPipelineDevice() {
  const gpu::CudaDriver& cuda = cuda_driver();
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuCtxSetCurrent(context_));
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuCtxSynchronize());
  for (Slot& slot : slots_) {
    release_host(slot.input);
    release_host(slot.output);
    if (slot.device_input) KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuMemFree(slot.device_input));
    if (slot.device_output) KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuMemFree(slot.device_output));
    for (CUevent event : slot.events)
      if (event) KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuEventDestroy(event));
  }
  for (CUstream stream : streams_) KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuStreamDestroy(stream));
  if (start_event_) KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuEventDestroy(start_event_));
}

void CudaPipelineDevice::enter_thread() { KERNLATHE_CUDA_CHECK(cuda_driver().cuCtxSetCurrent(context_)); }

void CudaPipelineDevice::ensure_host(HostBuffer& buffer, std::size_t bytes, bool pinned) {
  if (buffer.data != nullptr && buffer.bytes >= bytes && buffer.pinned == pinned) return;
  release_host(buffer);
  if (pinned && pinned_allocator_.allocate) {
    buffer.data = pinned_allocator_.allocate(std::max<std::size_t>(bytes, 1));
    buffer.release = pinned_allocator_.release;
  } else if (pinned) {
    void* pointer = nullptr;
    KERNLATHE_CUDA_CHECK(cuda_driver().cuMemHostAlloc(&pointer, std::max<std::size_t>(bytes, 1), 0));
    buffer.data = static_cast<std::byte*>(pointer);
  } else {
    buffer.data = static_cast<std::byte*>(std::aligned_alloc(4096, (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096));
    if (buffer.data == nullptr) throw TunerError(fmt::format("cannot allocate {} bytes of pageable staging", bytes));
    // Touch every page now, so the first pass does not pay for page faults the later ones do not.
    std::memset(buffer.data, 0, bytes);
  }
  buffer.bytes = bytes;
  buffer.pinned = pinned;
}

void CudaPipelineDevice::release_host(HostBuffer& buffer) {
  if (buffer.data == nullptr) return;
  if (buffer.release) {
    buffer.release(buffer.data);
  } else if (buffer.pinned) {
    KERNLATHE_CUDA_CHECK_NOTHROW(cuda_driver().cuMemFreeHost(buffer.data));
  } else {
    std::free(buffer.data);
  }
  buffer = HostBuffer{};
}

void CudaPipelineDevice::prepare(int slots, int streams, std::size_t input_bytes, std::size_t output_bytes, bool pinned) {
  const gpu::CudaDriver& cuda = cuda_driver();
  input_batch_bytes_ = input_bytes;
  output_batch_bytes_ = output_bytes;
  if (static_cast<int>(slots_.size()) < slots) slots_.resize(static_cast<std::size_t>(slots));
  for (int index = 0; index < slots; ++index) {
    Slot& slot = slots_[static_cast<std::size_t>(index)];
    ensure_host(slot.input, input_bytes, pinned);
    ensure_host(slot.output, output_bytes, pinned);
    if (slot.device_input_bytes < input_bytes) {
      if (slot.device_input) KERNLATHE_CUDA_CHECK(cuda.cuMemFree(slot.device_input));
      KERNLATHE_CUDA_CHECK(cuda.cuMemAlloc(&slot.device_input, input_bytes));
      slot.device_input_bytes = input_bytes;
    }
    if (slot.device_output_bytes < output_bytes) {
      if (slot.device_output) KERNLATHE_CUDA_CHECK(cuda.cuMemFree(slot.device_output));
      KERNLATHE_CUDA_CHECK(cuda.cuMemAlloc(&slot.device_output, output_bytes));
      slot.device_output_bytes = output_bytes;
    }
    for (CUevent& event : slot.events)
      if (!event) KERNLATHE_CUDA_CHECK(cuda.cuEventCreate(&event, CU_EVENT_DEFAULT));
  }
  while (static_cast<int>(streams_.size()) < streams) {
    CUstream stream = nullptr;
    KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    streams_.push_back(stream);
  }
}

std::span<std::byte> CudaPipelineDevice::host_input(int slot) {
  HostBuffer& buffer = slots_.at(static_cast<std::size_t>(slot)).input;
  return {buffer.data, input_batch_bytes_};
}

std::span<const std::byte> CudaPipelineDevice::host_output(int slot) {
  const HostBuffer& buffer = slots_.at(static_cast<std::size_t>(slot)).output;
  return {buffer.data, output_batch_bytes_};
}

void CudaPipelineDevice::start_clock() {
  // On stream 0 of the pipeline: its events then order with the batches' events on the same device timeline.
  KERNLATHE_CUDA_CHECK(cuda_driver().cuEventRecord(start_event_, streams_.empty() ? nullptr : streams_[0]));
}

void CudaPipelineDevice::submit(int slot_index, int stream_index, const BatchRange& batch, std::size_t chunk_bytes) {
  const gpu::CudaDriver& cuda = cuda_driver();
  Slot& slot = slots_.at(static_cast<std::size_t>(slot_index));
  CUstream stream = streams_.at(static_cast<std::size_t>(stream_index));
  // Only the batch's items travel: a short last batch moves less.
  std::size_t in_bytes = input_batch_bytes_ / static_cast<std::size_t>(batch_items_) * static_cast<std::size_t>(batch.item_count);
  std::size_t out_bytes = output_batch_bytes_ / static_cast<std::size_t>(batch_items_) * static_cast<std::size_t>(batch.item_count);
  KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(slot.events[0], stream));
  std::size_t chunk = chunk_bytes == 0 ? in_bytes : chunk_bytes;
  for (std::size_t offset = 0; offset < in_bytes; offset += chunk) {
    std::size_t piece = std::min(chunk, in_bytes - offset);
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyHtoDAsync(slot.device_input + offset, slot.input.data + offset, piece, stream));
  }
  KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(slot.events[1], stream));

  if (poison_outputs_) KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8Async(slot.device_output, 0xFF, out_bytes, stream));
  // cuLaunchKernel copies the values behind the pointers at the call, so locals do.
  CUdeviceptr input = slot.device_input, output = slot.device_output;
  std::vector<void*> pointers = kernel_.parameters;
  pointers.at(static_cast<std::size_t>(kernel_.input_parameter)) = &input;
  pointers.at(static_cast<std::size_t>(kernel_.output_parameter)) = &output;
  KERNLATHE_CUDA_CHECK(cuda.cuLaunchKernel(kernel_.function, kernel_.grid[0], kernel_.grid[1], kernel_.grid[2], kernel_.block[0],
                                       kernel_.block[1], kernel_.block[2], kernel_.dynamic_shared_bytes, stream,
                                       pointers.data(), nullptr));
  KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(slot.events[2], stream));
  KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoHAsync(slot.output.data, slot.device_output, out_bytes, stream));
  KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(slot.events[3], stream));
}

BatchTimes CudaPipelineDevice::complete(int slot_index) {
  const gpu::CudaDriver& cuda = cuda_driver();
  Slot& slot = slots_.at(static_cast<std::size_t>(slot_index));
  KERNLATHE_CUDA_CHECK(cuda.cuEventSynchronize(slot.events[3]));
  auto since_start = [&](CUevent event) {
    float elapsed = 0;
    KERNLATHE_CUDA_CHECK(cuda.cuEventElapsedTime(&elapsed, start_event_, event));
    return static_cast<double>(elapsed);
  };
  BatchTimes times;
  times.copy_in_begin_ms = since_start(slot.events[0]);
  times.copy_in_end_ms = since_start(slot.events[1]);
  times.kernel_end_ms = since_start(slot.events[2]);
  times.copy_out_end_ms = since_start(slot.events[3]);
  return times;
}

double measure_pinned_copy_in_gbps(CUcontext context, std::size_t bytes) {
  const gpu::CudaDriver& cuda = cuda_driver();
  KERNLATHE_CUDA_CHECK(cuda.cuCtxSetCurrent(context));
  void* host = nullptr;
  KERNLATHE_CUDA_CHECK(cuda.cuMemHostAlloc(&host, bytes, 0));
  std::memset(host, 1, bytes);
  double gbps = 0;
  try {
    gbps = measure_pinned_copy_in_gbps(context, static_cast<const std::byte*>(host), bytes);
  } catch (...) {
    cuda.cuMemFreeHost(host);
    throw;
  }
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuMemFreeHost(host));
  return gbps;
}

double measure_pinned_copy_in_gbps(CUcontext context, const std::byte* host, std::size_t bytes) {
  const gpu::CudaDriver& cuda = cuda_driver();
  KERNLATHE_CUDA_CHECK(cuda.cuCtxSetCurrent(context));
  CUdeviceptr device = 0;
  CUstream stream = nullptr;
  CUevent start = nullptr, stop = nullptr;
  double best_gbps = 0;
  try {
    KERNLATHE_CUDA_CHECK(cuda.cuMemAlloc(&device, bytes));
    KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    KERNLATHE_CUDA_CHECK(cuda.cuEventCreate(&start, CU_EVENT_DEFAULT));
    KERNLATHE_CUDA_CHECK(cuda.cuEventCreate(&stop, CU_EVENT_DEFAULT));
    for (int repetition = 0; repetition < 5; ++repetition) {
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(start, stream));
      KERNLATHE_CUDA_CHECK(cuda.cuMemcpyHtoDAsync(device, host, bytes, stream));
      KERNLATHE_CUDA_CHECK(cuda.cuEventRecord(stop, stream));
      KERNLATHE_CUDA_CHECK(cuda.cuEventSynchronize(stop));
      float elapsed = 0;
      KERNLATHE_CUDA_CHECK(cuda.cuEventElapsedTime(&elapsed, start, stop));
      if (elapsed > 0) best_gbps = std::max(best_gbps, static_cast<double>(bytes) / (elapsed * 1e6));
    }
  } catch (...) {
    if (device) cuda.cuMemFree(device);
    throw;
  }
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuMemFree(device));
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuStreamDestroy(stream));
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuEventDestroy(start));
  KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuEventDestroy(stop));
  return best_gbps;
}

}  // namespace kernlathe::loader
