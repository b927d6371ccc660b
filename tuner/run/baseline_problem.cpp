#include "tuner/run/baseline_problem.h"

#include <fmt/format.h>

namespace kernlathe {

gpu::GemmProblem baseline_gemm_problem(const WorkerSetup& setup, const std::vector<ArgumentBuffers>& buffers) {
  const BaselineCall& call = *setup.baseline;
  if (call.operation != "gemm") throw TunerError(fmt::format("unknown baseline operation '{}'", call.operation));
  auto buffer_at = [&](int index, const char* role) -> const WorkerArgument& {
    if (index < 0 || static_cast<std::size_t>(index) >= setup.arguments.size() ||
        !setup.arguments[static_cast<std::size_t>(index)].is_buffer) {
      throw TunerError(fmt::format("baseline operand {} is not a buffer argument", role));
    }
    return setup.arguments[static_cast<std::size_t>(index)];
  };
  const WorkerArgument& a = buffer_at(call.a, "a");
  const WorkerArgument& b = buffer_at(call.b, "b");
  const WorkerArgument& c = buffer_at(call.c, "c");
  if (a.element_count < call.m * call.k || b.element_count < call.k * call.n || c.element_count < call.m * call.n) {
    throw TunerError(fmt::format("baseline GEMM {}x{}x{} does not fit its buffers ({}: {}, {}: {}, {}: {} elements)",
                                 call.m, call.n, call.k, a.name, a.element_count, b.name, b.element_count, c.name,
                                 c.element_count));
  }
  gpu::GemmProblem problem;
  problem.compute = call.compute;
  problem.input = a.dtype;
  problem.output = c.dtype;
  problem.m = call.m;
  problem.n = call.n;
  problem.k = call.k;
  problem.transpose_b = call.transpose_b;
  problem.alpha = call.alpha;
  problem.beta = call.beta;
  problem.a = buffers[static_cast<std::size_t>(call.a)].data.get();
  problem.b = buffers[static_cast<std::size_t>(call.b)].data.get();
  problem.c = buffers[static_cast<std::size_t>(call.c)].data.get();
  return problem;
}

}  // namespace kernlathe
