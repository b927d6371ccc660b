#include "tuner/driver/tensor_map_strides.h"

#include <fmt/format.h>

namespace kernlathe::gpu {
namespace {

// The TMA unit reads global memory in 16-byte units: every stride but the innermost is a multiple of 16 bytes
// (cuTensorMapEncodeTiled's globalStrides).
constexpr std::int64_t stride_alignment_bytes = 16;

std::vector<std::int64_t> strides_or_packed(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides) {
  if (strides.empty()) return packed_strides(dims);
  return {strides.begin(), strides.end()};
}

}  // namespace

std::vector<std::int64_t> packed_strides(std::span<const std::int64_t> dims) {
  std::vector<std::int64_t> strides;
  std::int64_t pitch = 1;
  for (std::size_t axis = 1; axis < dims.size(); ++axis) {
    pitch *= dims[axis - 1];
    strides.push_back(pitch);
  }
  return strides;
}

std::string stride_problem(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                           std::int64_t element_bytes) {
  if (strides.empty()) return "";
  if (dims.empty() || strides.size() != dims.size() - 1) {
    return fmt::format("{} strides for {} dims; give one per dimension after the innermost ({})", strides.size(),
                       dims.size(), dims.empty() ? 0 : dims.size() - 1);
  }
  std::int64_t inner_stride = 1;  // of the dimension inside the one checked, in elements
  for (std::size_t axis = 1; axis < dims.size(); ++axis) {
    const std::int64_t stride = strides[axis - 1];
    if (std::string why = stride_alignment_problem(axis, stride, element_bytes); !why.empty()) return why;
    const std::int64_t extent = inner_stride * dims[axis - 1];
    if (stride < extent) {
      return fmt::format("the stride of dimension {} is {} elements, less than the {} elements of dimension {} it "
                         "steps over ({} x {}); a stride is at least the extent of the dimension inside it",
                         axis, stride, extent, axis - 1, dims[axis - 1], inner_stride);
    }
    inner_stride = stride;
  }
  return "";
}

std::string stride_alignment_problem(std::size_t axis, std::int64_t stride, std::int64_t element_bytes) {
  if (stride > 0 && stride * element_bytes % stride_alignment_bytes == 0) return "";
  return fmt::format("the stride of dimension {} is {} elements ({} bytes); TMA needs a positive multiple of {} bytes",
                     axis, stride, stride * element_bytes, stride_alignment_bytes);
}

std::vector<std::uint64_t> global_strides_in_bytes(std::span<const std::int64_t> dims,
                                                   std::span<const std::int64_t> strides, std::int64_t element_bytes) {
  std::vector<std::uint64_t> bytes;
  for (std::int64_t stride : strides_or_packed(dims, strides))
    bytes.push_back(static_cast<std::uint64_t>(stride) * static_cast<std::uint64_t>(element_bytes));
  return bytes;
}

std::uint64_t span_elements(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides) {
  for (std::int64_t dimension : dims)
    if (dimension <= 0) return 0;
  const std::vector<std::int64_t> steps = strides_or_packed(dims, strides);
  std::uint64_t last = dims.empty() ? 0 : static_cast<std::uint64_t>(dims[0] - 1);
  for (std::size_t axis = 1; axis < dims.size() && axis - 1 < steps.size(); ++axis)
    last += static_cast<std::uint64_t>(dims[axis] - 1) * static_cast<std::uint64_t>(steps[axis - 1]);
  return dims.empty() ? 0 : last + 1;
}

}  // namespace kernlathe::gpu
