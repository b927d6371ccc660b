#include "tuner/driver/tensor_map.h"

#include <array>

#include <fmt/format.h>

#include "tuner/driver/cuda_driver.h"
#include "tuner/driver/tensor_map_strides.h"

namespace kernlathe::gpu {

std::string encode_tensor_map(CUtensorMap& map, const TensorMapShape& shape, CUdeviceptr address) {
  const std::size_t rank = shape.dims.size();
  if (rank == 0 || rank > 5 || shape.box.size() != rank)
    return fmt::format("{} dims and {} box sizes (1 to 5 each, as many)", rank, shape.box.size());
  CUtensorMapDataType data_type{};
  std::uint64_t element_bytes = 0;
  if (shape.dtype == "f16") data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16, element_bytes = 2;
  else if (shape.dtype == "bf16") data_type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, element_bytes = 2;
  else if (shape.dtype == "f32") data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, element_bytes = 4;
  else if (shape.dtype == "f64") data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT64, element_bytes = 8;
  else if (shape.dtype == "i32") data_type = CU_TENSOR_MAP_DATA_TYPE_INT32, element_bytes = 4;
  else if (shape.dtype == "u32") data_type = CU_TENSOR_MAP_DATA_TYPE_UINT32, element_bytes = 4;
  else if (shape.dtype == "i64") data_type = CU_TENSOR_MAP_DATA_TYPE_INT64, element_bytes = 8;
  else if (shape.dtype == "i8" || shape.dtype == "u8") data_type = CU_TENSOR_MAP_DATA_TYPE_UINT8, element_bytes = 1;
  else return fmt::format("element type '{}' has no tensor-map type", shape.dtype);
  CUtensorMapSwizzle swizzle{};
  switch (shape.swizzle_bytes) {
    case 0: swizzle = CU_TENSOR_MAP_SWIZZLE_NONE; break;
    case 32: swizzle = CU_TENSOR_MAP_SWIZZLE_32B; break;
    case 64: swizzle = CU_TENSOR_MAP_SWIZZLE_64B; break;
    case 128: swizzle = CU_TENSOR_MAP_SWIZZLE_128B; break;
    default: return fmt::format("swizzle of {} bytes; use 0, 32, 64 or 128", shape.swizzle_bytes);
  }
  const auto element_size = static_cast<std::int64_t>(element_bytes);
  if (std::string why = stride_problem(shape.dims, shape.strides, element_size); !why.empty()) return why;
  const std::vector<std::uint64_t> stride_bytes = global_strides_in_bytes(shape.dims, shape.strides, element_size);
  std::array<cuuint64_t, 5> dims{}, strides{};
  std::array<cuuint32_t, 5> box{}, element_strides{};
  for (std::size_t axis = 0; axis < rank; ++axis) {
    if (shape.dims[axis] < 1 || shape.box[axis] < 1 || shape.box[axis] > 256) {
      return fmt::format("dimension {} of size {} with a box of {} (boxes hold 1 to 256 elements per dimension)", axis,
                         shape.dims[axis], shape.box[axis]);
    }
    dims[axis] = static_cast<cuuint64_t>(shape.dims[axis]);
    box[axis] = static_cast<cuuint32_t>(shape.box[axis]);
    element_strides[axis] = 1;
    if (axis > 0) strides[axis - 1] = stride_bytes[axis - 1];  // of the outer dimensions, in bytes
  }
  CUresult encoded = cuda_driver().cuTensorMapEncodeTiled(
      &map, data_type, static_cast<cuuint32_t>(rank), reinterpret_cast<void*>(address), dims.data(), strides.data(),
      box.data(), element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (encoded != CUDA_SUCCESS) return cuda_error_name(encoded);
  return "";
}

}  // namespace kernlathe::gpu
