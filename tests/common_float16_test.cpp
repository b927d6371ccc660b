// Host f16 and bf16 conversions (tuner/common/float16.h): exact values, limits, rounding to nearest even, NaN.
#include "tuner/common/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kernlathe {
namespace {

TEST(HalfConversion, ExactValuesAndLimits) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half_bits(0.5f), 0x3800);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);  // largest finite half
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);  // halfway to the next power: ties to even = infinity
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_half_bits(std::nanf("")) & 0x7C00, 0x7C00);
  EXPECT_NE(float_to_half_bits(std::nanf("")) & 0x03FF, 0);  // still NaN, not infinity
}

TEST(HalfConversion, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above halfway rounds up.
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // 2^-25 is half the smallest subnormal: ties to even gives zero; 3 * 2^-25 rounds to 2 units.
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half_bits(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_FLOAT_EQ(half_bits_to_float(float_to_half_bits(0.1f)), 0.0999755859375f);
}

TEST(HalfConversion, BackToFloat) {
  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half_bits_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0xFFFF)));  // the poison pattern
}

TEST(Bfloat16Conversion, ExactValuesAndRounding) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16_bits(-3.0f), 0xC040);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0). 1 + 3 * 2^-8 ties up to 1 + 2^-6.
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds to infinity
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(std::nanf("")))));
  EXPECT_EQ(bfloat16_bits_to_float(0x3F80), 1.0f);
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(0xFFFF)));  // the poison pattern
}

}  // namespace
}  // namespace kernlathe
