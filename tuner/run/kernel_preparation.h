#pragma once
// A configuration's kernel made ready to launch in the evaluation worker: its cubin loaded, its geometry and
// resources checked against the device (a failure is the configuration's status, not the worker's), occupancy
// computed, and its parameters laid out: buffers, scalars converted to their dtype, tensor maps encoded.

#include <array>
#include <string>
#include <vector>

#include "tuner/gpu/device.h"
#include "tuner/gpu/driver_handles.h"
#include "tuner/record/evaluation.h"
#include "tuner/run/protocol.h"

namespace kernlathe {

// A configuration's own failure, carried to the top of an evaluation and returned as its status.
struct ConfigurationFailure {
  Status status;
  std::string message;
};

// One kernel argument's device memory: what the kernel sees, the initial contents to restore before a verified
// run (inputs and in-out buffers), and the reference configuration's result (outputs).
struct ArgumentBuffers {
  gpu::DeviceBuffer data;
  gpu::DeviceBuffer pristine;
  gpu::DeviceBuffer reference;
};

// Room for one kernel parameter: scalars and pointers use the first 8 bytes; a CUtensorMap needs all 128 and
// its own alignment (128 bytes in CUDA 13's cuda.h).
struct alignas(alignof(CUtensorMap)) ParameterSlot {
  std::byte bytes[sizeof(CUtensorMap)];
};

// A kernel ready to launch: module loaded, resources checked, parameters laid out.
struct PreparedKernel {
  gpu::LoadedModule module;
  CUfunction function = nullptr;
  std::array<unsigned int, 3> grid{};
  std::array<unsigned int, 3> block{};
  unsigned int dynamic_shared_bytes = 0;
  std::vector<ParameterSlot> parameter_storage;
  std::vector<void*> parameters;
};

// What preparation reads from the worker: the setup's arguments, their buffers (one per argument; scalars keep
// empty ones) and the device's limits.
struct PreparationContext {
  const WorkerSetup& setup;
  const std::vector<ArgumentBuffers>& buffers;
  const DeviceProperties& properties;
  const gpu::LaunchLimits& limits;
};

// Throws ConfigurationFailure (launch_error, resources_exceeded) for the configuration's faults and gpu::CudaError
// for the driver's; fills registers, shared memory, threads and occupancy of `evaluation`. `phase` names the step
// running, for the message of a driver error.
PreparedKernel prepare_kernel(const KernelLaunch& launch, const PreparationContext& context, Evaluation& evaluation,
                              std::string& phase);

void launch_kernel(const PreparedKernel& kernel, CUstream stream);

// "(1, 2, 3)"
std::string dimensions_text(const std::array<std::int64_t, 3>& dimensions);

}  // namespace kernlathe
