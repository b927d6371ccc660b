#pragma once
#include "tuner/spec/model.h"
namespace kernlathe {
// Properties of GPU `index`, asked of a short-lived evaluation worker so that this process never creates a CUDA
// context. Throws NoGpuError when there is no driver or no such device.
DeviceProperties query_gpu_properties(int index);
}  // namespace kernlathe
