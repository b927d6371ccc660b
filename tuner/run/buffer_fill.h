#pragma once
// A device buffer's initial contents, as the spec's init says: written on the GPU by the fill kernels
// (fill_kernels.h) when they can write exactly what the host would, else filled on the host and copied.

#include <cstdint>

#include "tuner/driver/cuda_driver.h"
#include "tuner/spec/model.h"

namespace kernlathe {

class BufferFill {
 public:
  BufferFill() = default;
  // module: a loaded module holding fill_kernel_source()'s kernels (worker_kernels.h), owned by the caller; null
  // fills every buffer on the host.
  explicit BufferFill(CUmodule module) : module_(module) {}

  // Writes `count` elements of `dtype` at `destination`, byte for byte what initial_contents(dtype, count, init)
  // holds (element_values.h). On the GPU (returns true) the kernel is queued on `stream` and the caller
  // synchronises; on the host (returns false) the copy has finished on return. Throws gpu::CudaError.
  bool fill(CUdeviceptr destination, Dtype dtype, std::int64_t count, const Initialisation& init, CUstream stream,
            std::int64_t sm_count) const;

 private:
  CUmodule module_ = nullptr;
};

}  // namespace kernlathe
