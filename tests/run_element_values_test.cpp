#include "tuner/run/element_values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace kernlathe {
namespace {

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

TEST(ElementValues, LargeRandomBuffersAreFilledInSlicesThatAgreeWithTheElementFunction) {
  // 3 million elements: several 2^20-element slices, filled on as many threads as the machine has. Each element is
  // the function of its index, wherever a slice boundary falls.
  Initialisation random;
  random.seed = 7;
  random.low = -1.0;
  random.high = 1.0;
  const std::int64_t count = 3 * (1 << 20) + 5;
  std::vector<std::byte> contents = initial_contents(Dtype::f32, count, random);
  ASSERT_EQ(contents.size(), static_cast<std::size_t>(count) * 4);
  double sum = 0;
  for (std::int64_t index : {std::int64_t{0}, std::int64_t{(1 << 20) - 1}, std::int64_t{1 << 20}, count - 1}) {
    const double expected = static_cast<float>(random_element(7, static_cast<std::uint64_t>(index), -1.0, 1.0));
    EXPECT_EQ(load_element(Dtype::f32, contents.data() + 4 * index), expected) << "element " << index;
  }
  for (std::int64_t index = 0; index < count; ++index) sum += load_element(Dtype::f32, contents.data() + 4 * index);
  EXPECT_LT(std::abs(sum / static_cast<double>(count)), 0.002);  // uniform on [-1, 1): mean 0, sd of the mean 3.3e-4
  // Neighbouring seeds are unrelated streams, not one stream shifted by an element.
  EXPECT_NE(random_element(1, 1, 0, 1), random_element(2, 0, 0, 1));
}

TEST(ElementValues, RandomElementsAreTheSplitMixDrawsBitForBit) {
  // Computed apart from this code (SplitMix64 of mix(seed) + (index + 1) * 0x9e3779b97f4a7c15, its top 53 bits
  // as a fraction, low + (high - low) * fraction in three roundings). The GPU fill (fill_kernels.h) writes these
  // same values; a change here changes every run's inputs and must change both.
  EXPECT_EQ(random_element(1, 0, -1, 1), 0x1.ff7c0186ee168p-2);
  EXPECT_EQ(random_element(1, 1, -1, 1), -0x1.055698dbe86acp-2);
  EXPECT_EQ(random_element(11, 12345, 0.5, 1.5), 0x1.0d1fc996b538ep+0);
  EXPECT_EQ(random_element(2, std::uint64_t{1} << 40, -2, 2), 0x1.fbae63da59330p-1);
  Initialisation random;
  random.seed = 1;
  const std::vector<std::byte> contents = initial_contents(Dtype::f32, 2, random);
  std::uint32_t bits[2];
  std::memcpy(bits, contents.data(), sizeof bits);
  EXPECT_EQ(bits[0], 0x3effbe01u);  // 0.4994964827160602 rounded to f32
  EXPECT_EQ(bits[1], 0xbe82ab4cu);
}

}  // namespace
}  // namespace kernlathe
