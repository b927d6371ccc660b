// The baseline GEMM bound to the worker's arguments (tuner/run/baseline_problem.h): shapes and dtypes come from
// the setup, and a call that does not fit its buffers is refused before cuBLAS sees it.
#include "tuner/run/baseline_problem.h"

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

WorkerArgument buffer(const std::string& name, Dtype dtype, std::int64_t elements) {
  WorkerArgument argument;
  argument.name = name;
  argument.dtype = dtype;
  argument.element_count = elements;
  return argument;
}

WorkerSetup gemm_setup(std::int64_t c_elements) {
  WorkerSetup setup;
  setup.arguments = {buffer("a", Dtype::bf16, 64 * 32), buffer("b", Dtype::bf16, 32 * 16), buffer("c", Dtype::f32, c_elements)};
  BaselineCall call;
  call.library = "cublas";
  call.operation = "gemm";
  call.compute = "bf16";
  call.m = 64;
  call.n = 16;
  call.k = 32;
  call.a = 0;
  call.b = 1;
  call.c = 2;
  call.alpha = 2;
  setup.baseline = call;
  return setup;
}

TEST(BaselineProblem, TakesShapeFromTheCallAndDtypesFromTheArguments) {
  std::vector<ArgumentBuffers> buffers(3);  // empty on a machine without a GPU: addresses 0
  gpu::GemmProblem problem = baseline_gemm_problem(gemm_setup(64 * 16), buffers);
  EXPECT_EQ(problem.m, 64);
  EXPECT_EQ(problem.n, 16);
  EXPECT_EQ(problem.k, 32);
  EXPECT_EQ(problem.input, Dtype::bf16);
  EXPECT_EQ(problem.output, Dtype::f32);
  EXPECT_EQ(problem.compute, "bf16");
  EXPECT_EQ(problem.alpha, 2);
}

TEST(BaselineProblem, BuffersTooSmallOrOperandsThatAreNotBuffersAreRefused) {
  std::vector<ArgumentBuffers> buffers(3);
  try {
    baseline_gemm_problem(gemm_setup(64 * 16 - 1), buffers);
    FAIL() << "a C one element short was accepted";
  } catch (const TunerError& error) {
    EXPECT_STREQ(error.what(), "baseline GEMM 64x16x32 does not fit its buffers (a: 2048, b: 512, c: 1023 elements)");
  }
  WorkerSetup scalar_operand = gemm_setup(64 * 16);
  scalar_operand.arguments[1].is_buffer = false;
  EXPECT_THROW(baseline_gemm_problem(scalar_operand, buffers), TunerError);
  WorkerSetup other = gemm_setup(64 * 16);
  other.baseline->operation = "conv";
  EXPECT_THROW(baseline_gemm_problem(other, buffers), TunerError);
}

}  // namespace
}  // namespace kernlathe
