#include "tuner/run/kernel_preparation.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "tuner/driver/tensor_map.h"
#include "tuner/driver/tensor_map_strides.h"
#include "tuner/run/element_values.h"

namespace kernlathe {
namespace {

using gpu::cuda_driver;

// A block may use up to 48 KiB of shared memory, static and dynamic together, without opting in (CUDA programming
// guide); beyond that the kernel's dynamic limit must be raised first.
constexpr std::int64_t default_shared_limit = 48 * 1024;

std::vector<char> read_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw ConfigurationFailure{Status::launch_error, fmt::format("cannot read cubin {}", path.string())};
  return std::vector<char>(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>());
}

// The CUtensorMap of a tensor-map argument for one configuration: the shape comes from the setup, the box and
// swizzle from the launch. An impossible box (too large, or wider than the swizzle span) fails the configuration.
void encode_tensor_map(const WorkerArgument& argument, const TensorMapBox& box, const PreparationContext& context,
                       ParameterSlot& slot) {
  const WorkerArgument& buffer = context.setup.arguments.at(static_cast<std::size_t>(argument.tensor_buffer));
  const std::uint64_t elements = gpu::span_elements(argument.tensor_dims, argument.tensor_strides);
  if (elements > static_cast<std::uint64_t>(buffer.element_count)) {
    throw ConfigurationFailure{Status::launch_error,
                               fmt::format("tensor map '{}' spans {} elements but buffer '{}' holds {}", argument.name,
                                           elements, buffer.name, buffer.element_count)};
  }
  // The same encoding as the runtime library's (tuner/driver/tensor_map.h): a shape the driver refuses, or one out
  // of range, fails the configuration with the reason.
  const gpu::TensorMapShape shape{dtype_name(buffer.dtype), argument.tensor_dims, box.box, box.swizzle_bytes,
                                  argument.tensor_strides};
  const CUdeviceptr address = context.buffers.at(static_cast<std::size_t>(argument.tensor_buffer)).data.get();
  std::string why = gpu::encode_tensor_map(*reinterpret_cast<CUtensorMap*>(slot.bytes), shape, address);
  if (!why.empty()) {
    std::string box_text;
    for (std::size_t axis = 0; axis < box.box.size(); ++axis) box_text += fmt::format("{}{}", axis ? "x" : "", box.box[axis]);
    throw ConfigurationFailure{Status::launch_error, fmt::format("tensor map '{}' (box {}, swizzle {} B) cannot be encoded: {}",
                                                                 argument.name, box_text, box.swizzle_bytes, why)};
  }
}

}  // namespace

std::string dimensions_text(const std::array<std::int64_t, 3>& dimensions) {
  return fmt::format("({}, {}, {})", dimensions[0], dimensions[1], dimensions[2]);
}

PreparedKernel prepare_kernel(const KernelLaunch& launch, const PreparationContext& context, Evaluation& evaluation,
                              std::string& phase) {
  PreparedKernel kernel;
  for (std::int64_t dimension : launch.grid) {
    if (dimension < 1) throw ConfigurationFailure{Status::launch_error, "grid " + dimensions_text(launch.grid) + " has a dimension below 1"};
  }
  for (std::int64_t dimension : launch.block) {
    if (dimension < 1) throw ConfigurationFailure{Status::launch_error, "block " + dimensions_text(launch.block) + " has a dimension below 1"};
  }
  for (int axis = 0; axis < 3; ++axis) {
    if (launch.grid[axis] > context.limits.max_grid_dimensions[axis]) {
      throw ConfigurationFailure{Status::launch_error,
                                 fmt::format("grid {} exceeds the device's grid limits {}", dimensions_text(launch.grid),
                                             dimensions_text(context.limits.max_grid_dimensions))};
    }
  }
  std::int64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
  evaluation.threads_per_block = static_cast<int>(std::min<std::int64_t>(threads, 1 << 30));
  evaluation.dynamic_shared_bytes = launch.dynamic_shared_bytes;

  // Geometry is checked before the driver is touched: these failures need no GPU (and are tested without one).
  const gpu::CudaDriver& cuda = cuda_driver();
  std::vector<char> image = read_file(launch.cubin_path);
  phase = "module load";
  CUmodule module = nullptr;
  KERNLATHE_CUDA_CHECK(cuda.cuModuleLoadData(&module, image.data()));
  kernel.module = gpu::LoadedModule(module);
  CUresult found = cuda.cuModuleGetFunction(&kernel.function, module, launch.lowered_name.c_str());
  if (found == CUDA_ERROR_NOT_FOUND) {
    throw ConfigurationFailure{Status::launch_error,
                               fmt::format("no kernel named '{}' in {}", launch.lowered_name, launch.cubin_path.string())};
  }
  KERNLATHE_CUDA_CHECK(found);

  int registers = 0, static_shared = 0, kernel_max_threads = 0;
  KERNLATHE_CUDA_CHECK(cuda.cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel.function));
  KERNLATHE_CUDA_CHECK(cuda.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel.function));
  KERNLATHE_CUDA_CHECK(cuda.cuFuncGetAttribute(&kernel_max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel.function));
  evaluation.registers = registers;
  evaluation.static_shared_bytes = static_shared;

  for (int axis = 0; axis < 3; ++axis) {
    if (launch.block[axis] > context.limits.max_block_dimensions[axis]) {
      throw ConfigurationFailure{Status::resources_exceeded,
                                 fmt::format("block {} exceeds the device's block limits {}", dimensions_text(launch.block),
                                             dimensions_text(context.limits.max_block_dimensions))};
    }
  }
  if (threads > context.properties.max_threads_per_block || threads > kernel_max_threads) {
    throw ConfigurationFailure{
        Status::resources_exceeded,
        fmt::format("block of {} threads exceeds the limit of {} (device {}, kernel with {} registers per thread {})",
                    threads, std::min<std::int64_t>(context.properties.max_threads_per_block, kernel_max_threads),
                    context.properties.max_threads_per_block, registers, kernel_max_threads)};
  }
  std::int64_t shared_total = static_shared + launch.dynamic_shared_bytes;
  if (launch.dynamic_shared_bytes < 0 || shared_total > context.properties.max_shared_memory_per_block) {
    throw ConfigurationFailure{
        Status::resources_exceeded,
        fmt::format("shared memory of {} bytes ({} static + {} dynamic) exceeds the device's maximum of {} per block",
                    shared_total, static_shared, launch.dynamic_shared_bytes, context.properties.max_shared_memory_per_block)};
  }
  // The opt-in counts the static part too: 48 KiB of dynamic memory next to any static scratch fails to launch
  // (CUDA_ERROR_INVALID_VALUE) unless the attribute is raised.
  if (shared_total > default_shared_limit) {
    CUresult raised = cuda.cuFuncSetAttribute(kernel.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              static_cast<int>(launch.dynamic_shared_bytes));
    if (raised != CUDA_SUCCESS && !gpu::is_sticky_error(raised)) {
      throw ConfigurationFailure{Status::resources_exceeded,
                                 fmt::format("cannot raise the kernel's dynamic shared memory to {} bytes: {}",
                                             launch.dynamic_shared_bytes, gpu::cuda_error_name(raised))};
    }
    KERNLATHE_CUDA_CHECK(raised);
  }

  int active_blocks = 0;
  KERNLATHE_CUDA_CHECK(cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(&active_blocks, kernel.function, static_cast<int>(threads),
                                                                    static_cast<std::size_t>(launch.dynamic_shared_bytes)));
  std::int64_t warps_per_block = (threads + context.properties.warp_size - 1) / context.properties.warp_size;
  std::int64_t max_warps = context.properties.max_threads_per_sm / context.properties.warp_size;
  evaluation.occupancy = max_warps > 0 ? static_cast<double>(active_blocks * warps_per_block) / static_cast<double>(max_warps) : 0;

  for (int axis = 0; axis < 3; ++axis) {
    kernel.grid[axis] = static_cast<unsigned int>(launch.grid[axis]);
    kernel.block[axis] = static_cast<unsigned int>(launch.block[axis]);
  }
  kernel.dynamic_shared_bytes = static_cast<unsigned int>(launch.dynamic_shared_bytes);

  // Parameter storage is sized first: parameters point into it.
  kernel.parameter_storage.resize(context.setup.arguments.size());
  for (std::size_t index = 0; index < context.setup.arguments.size(); ++index) {
    const WorkerArgument& argument = context.setup.arguments[index];
    ParameterSlot& slot = kernel.parameter_storage[index];
    std::byte* storage = slot.bytes;
    std::fill(std::begin(slot.bytes), std::end(slot.bytes), std::byte{0});
    if (argument.is_tensor_map()) {
      auto box = launch.tensor_maps.find(argument.name);
      if (box == launch.tensor_maps.end()) {
        throw ConfigurationFailure{Status::launch_error, fmt::format("no box for tensor map '{}'", argument.name)};
      }
      encode_tensor_map(argument, box->second, context, slot);
    } else if (argument.is_buffer) {
      CUdeviceptr pointer = context.buffers[index].data.get();
      std::memcpy(storage, &pointer, sizeof pointer);
    } else {
      auto value = launch.scalar_values.find(argument.name);
      if (value == launch.scalar_values.end()) {
        throw ConfigurationFailure{Status::launch_error, fmt::format("no value for scalar argument '{}'", argument.name)};
      }
      if (const auto* integer = std::get_if<std::int64_t>(&value->second);
          integer != nullptr && argument.dtype == Dtype::i64) {
        std::memcpy(storage, integer, sizeof *integer);  // exact beyond 2^53
      } else {
        double number = std::visit([](auto held) { return static_cast<double>(held); }, value->second);
        store_element(argument.dtype, number, storage);
      }
    }
    kernel.parameters.push_back(storage);
  }
  return kernel;
}

void launch_kernel(const PreparedKernel& kernel, CUstream stream) {
  KERNLATHE_CUDA_CHECK(cuda_driver().cuLaunchKernel(kernel.function, kernel.grid[0], kernel.grid[1], kernel.grid[2],
                                                kernel.block[0], kernel.block[1], kernel.block[2],
                                                kernel.dynamic_shared_bytes, stream,
                                                const_cast<void**>(kernel.parameters.data()), nullptr));
}

}  // namespace kernlathe
