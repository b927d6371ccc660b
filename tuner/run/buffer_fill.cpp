#include "tuner/run/buffer_fill.h"

#include <algorithm>
#include <string>
#include <vector>

#include "tuner/run/element_values.h"
#include "tuner/run/fill_kernels.h"

namespace kernlathe {

bool BufferFill::fill(CUdeviceptr destination, Dtype dtype, std::int64_t count, const Initialisation& init,
                      CUstream stream, std::int64_t sm_count) const {
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  if (count <= 0) return false;
  if (module_ == nullptr || !fills_on_device(init)) {
    const std::vector<std::byte> contents = initial_contents(dtype, count, init);
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyHtoD(destination, contents.data(), contents.size()));
    return false;
  }
  CUfunction function = nullptr;
  const std::string name = fill_kernel_name(dtype);
  KERNLATHE_CUDA_CHECK(cuda.cuModuleGetFunction(&function, module_, name.c_str()));
  FillArguments arguments = fill_arguments(init);
  long long elements = count;
  void* parameters[] = {&destination, &elements, &arguments.kind, &arguments.seed, &arguments.first, &arguments.second};
  constexpr unsigned int threads = 256;
  // A grid-stride loop: enough blocks to fill every SM several times over, not one thread per element.
  const auto blocks = static_cast<unsigned int>(
      std::clamp<long long>((elements + threads - 1) / threads, 1, std::max<std::int64_t>(sm_count, 1) * 16));
  KERNLATHE_CUDA_CHECK(cuda.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, stream, parameters, nullptr));
  return true;
}

}  // namespace kernlathe
