#pragma once
// The spec's baseline call (cuBLAS GEMM) bound to the worker's buffers: which arguments are A, B and C, their
// dtypes and the problem's shape, checked against the buffers' sizes.

#include <vector>

#include "tuner/gpu/cublas.h"
#include "tuner/run/kernel_preparation.h"
#include "tuner/run/protocol.h"

namespace kernlathe {

// Throws TunerError for an unknown operation, an operand that is not a buffer, or buffers too small for the shape.
gpu::GemmProblem baseline_gemm_problem(const WorkerSetup& setup, const std::vector<ArgumentBuffers>& buffers);

}  // namespace kernlathe
