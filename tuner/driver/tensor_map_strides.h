#pragma once
// The strides of a TMA tensor map (tuner/driver/tensor_map.h) and the rules they follow, without the driver: the spec
// reader checks constant strides with them, the tuner checks a problem's strides before its worker allocates, the
// runtime library checks them when it plans a launch, and the encoder turns them into cuTensorMapEncodeTiled's bytes.
//
// A tensor map's dims run innermost (contiguous) first; strides, where given, are those of dims 1 .. rank - 1 in
// elements (dimension 0 always steps by one element). None given: the dense row-major tensor, each stride the product
// of the dims inside it. Given strides let a map describe a view, such as q, k and v inside one fused QKV projection
// output (issue 33: rows of 6144 elements, of which q reads the first 4096).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kernlathe::gpu {

// The strides in elements of dims 1 .. rank - 1 of the dense row-major tensor of dims.
std::vector<std::int64_t> packed_strides(std::span<const std::int64_t> dims);

// "" when strides (elements, dims 1 .. rank - 1; empty: packed) can describe a tensor of dims whose elements are
// element_bytes wide, otherwise why not: a count other than rank - 1, a stride that is not a multiple of 16 bytes
// (what the TMA unit requires), or one smaller than the extent it steps over (stride of dimension d at least dims[d - 1]
// times the stride of dimension d - 1: no two elements of the view overlap, and the dimensions are in memory's order).
std::string stride_problem(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                           std::int64_t element_bytes);

// The part of stride_problem that one stride of dimension `axis` (1 .. rank - 1) shows alone, dims unknown: "" when
// stride (elements) is a positive multiple of 16 bytes, otherwise why not.
std::string stride_alignment_problem(std::size_t axis, std::int64_t stride, std::int64_t element_bytes);

// The strides in bytes of dims 1 .. rank - 1, as cuTensorMapEncodeTiled's globalStrides takes them: strides times
// element_bytes, or the packed strides where strides is empty.
std::vector<std::uint64_t> global_strides_in_bytes(std::span<const std::int64_t> dims,
                                                   std::span<const std::int64_t> strides, std::int64_t element_bytes);

// Elements from the tensor's first to one past its last: 1 + the sum over dimensions of (dims[d] - 1) * stride[d]
// (0 when a dimension is empty). What the buffer behind a map must hold at least.
std::uint64_t span_elements(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides);

}  // namespace kernlathe::gpu
