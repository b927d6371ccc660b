#include "tuner/run/element_values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

TEST(Elements, StoreAndLoadEveryDtype) {
  unsigned char storage[8];
  store_element(Dtype::f32, 2.5, storage);
  EXPECT_EQ(load_element(Dtype::f32, storage), 2.5);
  store_element(Dtype::f16, 2.5, storage);
  EXPECT_EQ(load_element(Dtype::f16, storage), 2.5);
  store_element(Dtype::bf16, 2.5, storage);
  EXPECT_EQ(load_element(Dtype::bf16, storage), 2.5);
  store_element(Dtype::f64, 0.1, storage);
  EXPECT_EQ(load_element(Dtype::f64, storage), 0.1);
  store_element(Dtype::i32, -2.5, storage);  // floor, so uniform [low, high) covers each integer equally
  EXPECT_EQ(load_element(Dtype::i32, storage), -3);
  store_element(Dtype::u8, 300, storage);  // clamped
  EXPECT_EQ(load_element(Dtype::u8, storage), 255);
  store_element(Dtype::i8, -300, storage);
  EXPECT_EQ(load_element(Dtype::i8, storage), -128);
  store_element(Dtype::i64, 1e12, storage);
  EXPECT_EQ(load_element(Dtype::i64, storage), 1e12);
}

TEST(Elements, PoisonIsNanForEveryFloatDtype) {
  unsigned char poison[8];
  std::memset(poison, poison_byte, sizeof poison);
  EXPECT_TRUE(std::isnan(load_element(Dtype::f16, poison)));
  EXPECT_TRUE(std::isnan(load_element(Dtype::bf16, poison)));
  EXPECT_TRUE(std::isnan(load_element(Dtype::f32, poison)));
  EXPECT_TRUE(std::isnan(load_element(Dtype::f64, poison)));
}

TEST(InitialContents, SequenceConstantAndSeededRandom) {
  Initialisation sequence;
  sequence.kind = Initialisation::Kind::sequence;
  sequence.start = 1.0;
  sequence.step = 0.5;
  std::vector<std::byte> values = initial_contents(Dtype::f32, 4, sequence);
  ASSERT_EQ(values.size(), 16u);
  EXPECT_EQ(load_element(Dtype::f32, values.data() + 12), 2.5);

  Initialisation constant;
  constant.kind = Initialisation::Kind::constant;
  constant.value = -7;
  values = initial_contents(Dtype::i32, 3, constant);
  EXPECT_EQ(load_element(Dtype::i32, values.data() + 8), -7);

  Initialisation random;
  random.seed = 42;
  random.low = 2.0;
  random.high = 3.0;
  std::vector<std::byte> first = initial_contents(Dtype::f64, 1000, random);
  EXPECT_EQ(first, initial_contents(Dtype::f64, 1000, random));  // deterministic for a seed
  random.seed = 43;
  EXPECT_NE(first, initial_contents(Dtype::f64, 1000, random));
  double low = 10, high = -10;
  for (std::size_t index = 0; index < 1000; ++index) {
    double value = load_element(Dtype::f64, first.data() + 8 * index);
    low = std::min(low, value);
    high = std::max(high, value);
  }
  EXPECT_GE(low, 2.0);
  EXPECT_LT(high, 3.0);
  EXPECT_LT(low, 2.01);  // 1000 uniform draws cover the range
  EXPECT_GT(high, 2.99);
}

}  // namespace
}  // namespace kernlathe
