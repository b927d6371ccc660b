#pragma once
// Encodes a Hopper TMA descriptor (CUtensorMap) of a row-major tensor, dense or with given strides
// (tuner/driver/tensor_map_strides.h): used by the evaluation worker for every configuration and by the runtime
// library at bind time, so both build the same descriptor.

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kernlathe::gpu {

struct TensorMapShape {
  std::string dtype;                // element type name: f16, bf16, f32, f64, i32, u32, i64, i8, u8
  std::vector<std::int64_t> dims;   // elements, innermost (contiguous) dimension first; 1 to 5 of them
  std::vector<std::int64_t> box;    // elements per copy, innermost first; 1 to 256 each
  std::int64_t swizzle_bytes = 0;   // 0, 32, 64 or 128
  std::vector<std::int64_t> strides;  // elements, of dims 1 .. rank - 1; empty: dense row-major
};

// Writes the descriptor of the tensor at address into map. Returns "" on success, otherwise why it cannot be encoded
// (a shape out of range, strides against tensor_map_strides.h's rules, an unknown swizzle, or the driver's error name), for the caller to report.
std::string encode_tensor_map(CUtensorMap& map, const TensorMapShape& shape, CUdeviceptr address);

}  // namespace kernlathe::gpu
