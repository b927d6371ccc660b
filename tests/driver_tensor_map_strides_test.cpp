// The strides of a tensor map: the bytes cuTensorMapEncodeTiled is given, packed and strided, the extent a view
// reaches, and each rule a stride can break with its message.
#include "tuner/driver/tensor_map_strides.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kernlathe::gpu {
namespace {

// Llama-3-8B's q as a BSHD view into the fused QKV projection output: [head_dim, heads, tokens, batch], rows of
// (32 + 8 + 8) x 128 = 6144 elements.
const std::vector<std::int64_t> fused_q_dims{128, 32, 1000, 2};
const std::vector<std::int64_t> fused_q_strides{128, 6144, 6144 * 1000};

TEST(TensorMapStrides, PackedStridesAreProductsOfTheInnerDims) {
  EXPECT_EQ(packed_strides(std::vector<std::int64_t>{128, 32, 1000, 2}), (std::vector<std::int64_t>{128, 4096, 4096000}));
  EXPECT_EQ(packed_strides(std::vector<std::int64_t>{7}), std::vector<std::int64_t>{});
}

TEST(TensorMapStrides, GlobalStridesInBytesArePackedWithoutStridesAndScaledWithThem) {
  const std::vector<std::int64_t> dims{64, 16, 3};
  // What encode_tensor_map computed before strides existed: bf16, 64 x 2 bytes, then x 16.
  EXPECT_EQ(global_strides_in_bytes(dims, {}, 2), (std::vector<std::uint64_t>{128, 2048}));
  EXPECT_EQ(global_strides_in_bytes(fused_q_dims, fused_q_strides, 2),
            (std::vector<std::uint64_t>{256, 12288, 12288000}));
  EXPECT_EQ(global_strides_in_bytes(dims, {}, 4), (std::vector<std::uint64_t>{256, 4096}));
}

TEST(TensorMapStrides, SpanOfAViewEndsAtItsLastElement) {
  // Packed: every element.
  EXPECT_EQ(span_elements(std::vector<std::int64_t>{64, 16, 3}, {}), 64u * 16 * 3);
  // q of the fused output: the last token's row starts at (2 * 1000 - 1) * 6144 and q reads its first 4096.
  EXPECT_EQ(span_elements(fused_q_dims, fused_q_strides), (2u * 1000 - 1) * 6144 + 4096);
  EXPECT_EQ(span_elements(std::vector<std::int64_t>{64, 0}, {}), 0u);
}

TEST(TensorMapStrides, ValidStridesHaveNoProblem) {
  EXPECT_EQ(stride_problem(fused_q_dims, fused_q_strides, 2), "");
  EXPECT_EQ(stride_problem(fused_q_dims, {}, 2), "");  // packed: nothing to check here
  // Equal to the extent (packed, written out) is allowed.
  EXPECT_EQ(stride_problem(std::vector<std::int64_t>{128, 32, 1000}, std::vector<std::int64_t>{128, 4096}, 2), "");
}

TEST(TensorMapStrides, StrideCountMustBeRankMinusOne) {
  const std::string why = stride_problem(fused_q_dims, std::vector<std::int64_t>{128, 6144}, 2);
  EXPECT_EQ(why, "2 strides for 4 dims; give one per dimension after the innermost (3)");
}

TEST(TensorMapStrides, StrideMustBeAPositiveMultipleOfSixteenBytes) {
  // 6140 bf16 elements: 12280 bytes.
  std::string why = stride_problem(fused_q_dims, std::vector<std::int64_t>{128, 6140, 6140 * 1000}, 2);
  EXPECT_EQ(why, "the stride of dimension 2 is 6140 elements (12280 bytes); TMA needs a positive multiple of 16 bytes");
  // The same stride in f32 elements is 24560 bytes, a multiple of 16.
  EXPECT_EQ(stride_problem(std::vector<std::int64_t>{128, 32, 1000}, std::vector<std::int64_t>{128, 6140}, 4), "");
  why = stride_problem(std::vector<std::int64_t>{8, 4}, std::vector<std::int64_t>{0}, 2);
  EXPECT_NE(why.find("the stride of dimension 1 is 0 elements"), std::string::npos) << why;
  EXPECT_EQ(stride_alignment_problem(1, 8, 2), "");
  EXPECT_EQ(stride_alignment_problem(3, 4, 2),
            "the stride of dimension 3 is 4 elements (8 bytes); TMA needs a positive multiple of 16 bytes");
}

TEST(TensorMapStrides, StrideMustCoverTheDimensionInsideIt) {
  // A token row of 2048 elements cannot hold 32 heads of 128.
  std::string why = stride_problem(fused_q_dims, std::vector<std::int64_t>{128, 2048, 2048 * 1000}, 2);
  EXPECT_EQ(why, "the stride of dimension 2 is 2048 elements, less than the 4096 elements of dimension 1 it steps "
                 "over (32 x 128); a stride is at least the extent of the dimension inside it");
  // Dimensions out of memory's order (a BHSD tensor described as BSHD) break the same rule.
  why = stride_problem(std::vector<std::int64_t>{128, 32, 1000}, std::vector<std::int64_t>{128 * 1000, 128}, 2);
  EXPECT_NE(why.find("the stride of dimension 2 is 128 elements, less than the 4096000 elements of dimension 1"),
            std::string::npos)
      << why;
}

}  // namespace
}  // namespace kernlathe::gpu
