// The GPU fill writes what the host fill writes (issue 18). The test builds, with the host compiler, the very
// source the worker compiles for the GPU (fill_kernel_source()), runs its kernels on host threads
// (tests/data/verify/host_emulation.h) and compares every byte with initial_contents(), for every dtype and every
// kind of initialisation, over ranges that reach the conversions' edges: integer clamping, f16 overflow and
// subnormals, bf16 rounding. tests/gpu/fill_device_test.cpp makes the same comparison on the GPU.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "tuner/run/element_values.h"
#include "tuner/run/fill_kernels.h"
#include "host_library_support.h"

namespace kernlathe {
namespace {

using RunFill = void (*)(unsigned, unsigned, void*, long long, int, unsigned long long, double, double);

const Dtype every_dtype[] = {Dtype::f16, Dtype::bf16, Dtype::f32, Dtype::f64, Dtype::i8,
                             Dtype::u8,  Dtype::i32,  Dtype::u32, Dtype::i64};

constexpr const char* entry_points = R"(
#define KERNLATHE_FILL_ENTRY(name, type)                                                                    \
  extern "C" void run_fill_##name(unsigned grid, unsigned block, void* out, long long count, int kind,     \
                                  unsigned long long seed, double first, double second) {                 \
    launch_sequential(grid, block, fill_##name, static_cast<type*>(out), count, kind, seed, first, second); \
  }
KERNLATHE_FILL_ENTRY(f16, unsigned short)
KERNLATHE_FILL_ENTRY(bf16, unsigned short)
KERNLATHE_FILL_ENTRY(f32, float)
KERNLATHE_FILL_ENTRY(f64, double)
KERNLATHE_FILL_ENTRY(i8, signed char)
KERNLATHE_FILL_ENTRY(u8, unsigned char)
KERNLATHE_FILL_ENTRY(i32, int)
KERNLATHE_FILL_ENTRY(u32, unsigned)
KERNLATHE_FILL_ENTRY(i64, long long)
)";

const testing::HostLibrary& host_fill() {
  static const testing::HostLibrary library(
      "tuner_fill", "#include \"host_emulation.h\"\n" + fill_kernel_source() + entry_points,
      {std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests/data/verify"});
  return library;
}

// The kernel's output for `count` elements, run as 3 blocks of 64 threads: a grid-stride loop over many rounds.
std::vector<std::byte> kernel_contents(Dtype dtype, std::int64_t count, const Initialisation& init) {
  const std::string name = "run_fill_" + dtype_name(dtype);
  RunFill run = host_fill().symbol<RunFill>(name.c_str());
  EXPECT_NE(run, nullptr) << host_fill().error();
  std::vector<std::byte> contents(static_cast<std::size_t>(count) * dtype_size(dtype), std::byte{0xA5});
  if (run == nullptr) return contents;
  const FillArguments arguments = fill_arguments(init);
  run(3, 64, contents.data(), count, arguments.kind, arguments.seed, arguments.first, arguments.second);
  return contents;
}

// The first element where the two differ, or -1.
std::int64_t first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b, std::size_t size) {
  if (a.size() != b.size()) return 0;
  for (std::size_t index = 0; index * size < a.size(); ++index)
    if (std::memcmp(a.data() + index * size, b.data() + index * size, size) != 0) return static_cast<std::int64_t>(index);
  return -1;
}

Initialisation random_in(std::uint64_t seed, double low, double high) {
  Initialisation init;
  init.kind = Initialisation::Kind::random;
  init.seed = seed;
  init.low = low;
  init.high = high;
  return init;
}

void expect_same_as_host(Dtype dtype, std::int64_t count, const Initialisation& init, const std::string& what) {
  const std::vector<std::byte> expected = initial_contents(dtype, count, init);
  const std::vector<std::byte> got = kernel_contents(dtype, count, init);
  const std::int64_t index = first_difference(expected, got, dtype_size(dtype));
  EXPECT_EQ(index, -1) << dtype_name(dtype) << " " << what << ": element " << index << " is "
                       << load_element(dtype, got.data() + index * dtype_size(dtype)) << ", the host wrote "
                       << load_element(dtype, expected.data() + index * dtype_size(dtype));
}

TEST(FillKernels, RandomContentsMatchTheHostForEveryDtype) {
  ASSERT_TRUE(host_fill().error().empty()) << host_fill().error();
  for (Dtype dtype : every_dtype) {
    expect_same_as_host(dtype, 20011, random_in(1, -1, 1), "seed 1 in [-1, 1)");
    expect_same_as_host(dtype, 20011, random_in(11, 0.5, 1.5), "seed 11 in [0.5, 1.5)");
  }
}

TEST(FillKernels, ConversionEdgesMatchTheHost) {
  // Integers: floor, then clamped to the type (both ends of every integer type); f16: past 65504 to infinity and
  // down into subnormals and zero; bf16: rounding of large magnitudes.
  const struct {
    Dtype dtype;
    double low, high;
  } cases[] = {{Dtype::i8, -300, 300},      {Dtype::u8, -300, 300},       {Dtype::i32, -1e10, 1e10},
               {Dtype::u32, -5, 5e9},       {Dtype::i64, -1e19, 1e19},    {Dtype::f16, -70000, 70000},
               {Dtype::f16, -1e-6, 1e-6},   {Dtype::f16, -1e-8, 1e-8},    {Dtype::bf16, -3e38, 3e38},
               {Dtype::f32, -1e300, 1e300}, {Dtype::f32, -1e-40, 1e-40}, {Dtype::f64, -1e300, 1e300}};
  for (const auto& edge : cases) {
    expect_same_as_host(edge.dtype, 20011, random_in(5, edge.low, edge.high),
                        "in [" + std::to_string(edge.low) + ", " + std::to_string(edge.high) + ")");
  }
}

TEST(FillKernels, ConstantsAndSequencesMatchTheHost) {
  Initialisation constant;
  constant.kind = Initialisation::Kind::constant;
  constant.value = -7.75;
  Initialisation sequence;
  sequence.kind = Initialisation::Kind::sequence;
  sequence.start = 0.5;
  sequence.step = 0.25;
  Initialisation steep = sequence;  // far past every integer type's range and f16's
  steep.step = 1e15;
  for (Dtype dtype : every_dtype) {
    expect_same_as_host(dtype, 5003, constant, "constant -7.75");
    expect_same_as_host(dtype, 5003, sequence, "sequence 0.5 + 0.25 i");
    expect_same_as_host(dtype, 5003, steep, "sequence 0.5 + 1e15 i");
  }
}

TEST(FillKernels, NamesArgumentsAndWhatStaysOnTheHost) {
  EXPECT_EQ(fill_kernel_name(Dtype::bf16), "fill_bf16");
  const FillArguments random = fill_arguments(random_in(9, -2, 3));
  EXPECT_EQ(random.kind, 0);
  EXPECT_EQ(random.seed, 9u);
  EXPECT_EQ(random.first, -2);
  EXPECT_EQ(random.second, 3);
  Initialisation sequence;
  sequence.kind = Initialisation::Kind::sequence;
  sequence.start = 4;
  sequence.step = -0.5;
  EXPECT_EQ(fill_arguments(sequence).kind, 2);
  EXPECT_EQ(fill_arguments(sequence).first, 4);
  EXPECT_EQ(fill_arguments(sequence).second, -0.5);
  EXPECT_TRUE(fills_on_device(sequence));
  EXPECT_TRUE(fills_on_device(random_in(1, -8e307, 8e307)));
  // high - low overflows: 0 * infinity draws NaN, whose f32 bits the host and the GPU write differently.
  EXPECT_FALSE(fills_on_device(random_in(1, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max())));
}

}  // namespace
}  // namespace kernlathe
