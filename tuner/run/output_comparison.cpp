#include "tuner/run/output_comparison.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "tuner/run/compare_kernels.h"
#include "tuner/run/element_values.h"

namespace kernlathe {
namespace {

using gpu::cuda_driver;

// NaN prints as "NaN" whatever its sign bit (the poison pattern is a negative NaN).
std::string value_text(double value) { return std::isnan(value) ? "NaN" : fmt::format("{}", value); }

}  // namespace

OutputComparison::OutputComparison(CUmodule module)
    : module_(module), results_(gpu::DeviceBuffer(3 * sizeof(std::uint64_t))) {}

std::optional<std::string> OutputComparison::compare(const WorkerSetup& setup, const std::vector<ArgumentBuffers>& all_buffers,
                                                     CUstream stream, std::int64_t sm_count, double& max_error) {
  const gpu::CudaDriver& cuda = cuda_driver();
  max_error = 0;
  for (std::size_t index = 0; index < all_buffers.size(); ++index) {
    const WorkerArgument& argument = setup.arguments[index];
    const ArgumentBuffers& buffers = all_buffers[index];
    if (buffers.reference.bytes() == 0) continue;
    CUfunction compare = nullptr;
    std::string name = compare_kernel_name(argument.dtype);
    KERNLATHE_CUDA_CHECK(cuda.cuModuleGetFunction(&compare, module_, name.c_str()));
    Tolerance tolerance;
    if (auto found = setup.tolerance.find(argument.dtype); found != setup.tolerance.end()) tolerance = found->second;
    // {failing count 0, first index ~0, worst error 0}
    KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8Async(results_.get(), 0, 3 * sizeof(std::uint64_t), stream));
    KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8Async(results_.get() + sizeof(std::uint64_t), 0xFF, sizeof(std::uint64_t), stream));
    CUdeviceptr out = buffers.data.get(), reference = buffers.reference.get(), results = results_.get();
    long long count = argument.element_count;
    double absolute = tolerance.absolute, relative = tolerance.relative;
    void* parameters[] = {&out, &reference, &count, &absolute, &relative, &results};
    constexpr unsigned int threads = 256;
    auto blocks = static_cast<unsigned int>(std::clamp<long long>((count + threads - 1) / threads, 1, sm_count * 8));
    KERNLATHE_CUDA_CHECK(cuda.cuLaunchKernel(compare, blocks, 1, 1, threads, 1, 1, 0, stream, parameters, nullptr));
    std::uint64_t outcome[3] = {};
    KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream));
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoH(outcome, results_.get(), sizeof outcome));
    double worst = 0;
    std::memcpy(&worst, &outcome[2], sizeof worst);
    max_error = std::max(max_error, worst);
    if (outcome[0] == 0) continue;
    std::size_t size = dtype_size(argument.dtype);
    std::array<std::byte, 8> got{}, expected{};
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoH(got.data(), out + outcome[1] * size, size));
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoH(expected.data(), reference + outcome[1] * size, size));
    return fmt::format("{}: {} of {} elements differ, first at index {}: got {}, expected {}", argument.name, outcome[0],
                       count, outcome[1], value_text(load_element(argument.dtype, got.data())),
                       value_text(load_element(argument.dtype, expected.data())));
  }
  return std::nullopt;
}

}  // namespace kernlathe
