#pragma once
#include "tuner/measure/ceilings.h"
#include "tuner/spec/model.h"
namespace kernlathe {
// Properties of GPU `index`, asked of a short-lived evaluation worker so that this process never creates a CUDA
// context. Throws NoGpuError when there is no driver or no such device.
DeviceProperties query_gpu_properties(int index);
// The ceilings of GPU `index` (tuner/measure/ceilings.h), measured by a short-lived worker.
Ceilings query_gpu_ceilings(int index);
}  // namespace kernlathe
