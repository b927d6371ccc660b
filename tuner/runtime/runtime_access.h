#pragma once
// What the library's own parts (the streamed pipeline, kernlathe/stream.h) need from the Runtime, a Kernel and a
// BoundLaunch beyond their public interface. Not installed: applications see kernlathe/runtime.h only.

#include <cuda.h>

#include <vector>

#include "kernlathe/runtime.h"
#include "tuner/runtime/kernel_plan.h"

namespace kernlathe {

struct RuntimeAccess {
  static const KernelPlan& plan(const Kernel& kernel);
  static CUfunction function(const Kernel& kernel);
  // The device's primary context, retained by the runtime and current in the calling thread afterwards.
  static CUcontext context(Runtime& runtime);
  // Pointers to each kernel parameter's value, as cuLaunchKernel takes them (valid while the BoundLaunch lives).
  static const std::vector<void*>& parameters(const BoundLaunch& launch);
};

}  // namespace kernlathe
