#pragma once
// Verification on the device: every output of a configuration compared with the reference configuration's copy,
// element by element, by the compare kernels (compare_kernels.h); three numbers come back per output.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuner/gpu/driver_handles.h"
#include "tuner/run/kernel_preparation.h"
#include "tuner/run/protocol.h"

namespace kernlathe {

class OutputComparison {
 public:
  OutputComparison() = default;
  // module: a loaded module holding compare_kernel_source()'s kernels (worker_kernels.h), owned by the caller and
  // loaded in the current context.
  explicit OutputComparison(CUmodule module);

  // Compares every output that has a reference; returns the wrong_result message naming the output, the count of
  // differing elements and the first with both values, or nothing when all match. max_error: the largest relative
  // error seen.
  std::optional<std::string> compare(const WorkerSetup& setup, const std::vector<ArgumentBuffers>& buffers,
                                     CUstream stream, std::int64_t sm_count, double& max_error);

 private:
  CUmodule module_ = nullptr;
  gpu::DeviceBuffer results_;  // {failing count, first failing index, bits of the worst relative error}
};

}  // namespace kernlathe
