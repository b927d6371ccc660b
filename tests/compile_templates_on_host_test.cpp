// The shipped templates' arithmetic against CPU references in double precision, with the templates' own code run
// on host threads (issue 19). The test builds, with the host compiler, templates/layernorm.cu with the residual add
// (-DLAYERNORM_RESIDUAL) and templates/common/activation.cuh, over the stand-ins of tests/data/verify/host_emulation.h
// and tests/data/templates/host_device_stand_ins.h, and runs single-warp paths on small shapes:
//   - add_layernorm's verification reference (the configuration every GPU candidate is compared with), the row in
//     registers and the row in shared memory: the stored sum is x + r in fp32 exactly, the output the layer
//     normalisation of that sum;
//   - the GELU of the fused GEMM epilogue against x Phi(x) in double.
// A template change that breaks that arithmetic fails here without a GPU; what only a GPU runs (warpgroups, TMA,
// clusters) is verified against these paths by `tune run` itself.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "host_library_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

using RunAddLayernorm = int (*)(int, int, int, float, const float*, const float*, const float*, const float*, float*,
                                float*);
using RunGelu = float (*)(float);

const fs::path source_directory = KERNLATHE_SOURCE_DIR;

// The host build of the templates, compiled once for all tests.
class HostTemplates {
 public:
  HostTemplates()
      : library_("tuner_templates",
                 "#include \"host_emulation.h\"\n"
                 "#include \"host_device_stand_ins.h\"\n"
                 "#define LAYERNORM_RESIDUAL\n"
                 "#include \"layernorm.cu\"\n"
                 "#include \"common/activation.cuh\"\n"
                 "#include \"layernorm_entry_points.h\"\n",
                 {source_directory / "tests/data/verify", source_directory / "tests/data/templates",
                  source_directory / "templates"}),
        run_add_layernorm(library_.symbol<RunAddLayernorm>("run_add_layernorm")),
        run_gelu(library_.symbol<RunGelu>("run_gelu")) {}
  const std::string& error() const { return library_.error(); }

 private:
  testing::HostLibrary library_;

 public:
  RunAddLayernorm run_add_layernorm;
  RunGelu run_gelu;
};

HostTemplates& host_templates() {
  static HostTemplates templates;
  return templates;
}

std::vector<float> uniform(std::size_t count, float low, float high, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(generator);
  return values;
}

class AddLayernormOnHost : public ::testing::TestWithParam<int> {
 protected:
  static constexpr int rows = 5, cols = 256;
  static constexpr float epsilon = 1.0e-5f;

  void SetUp() override {
    ASSERT_EQ(host_templates().error(), "");
    ASSERT_NE(host_templates().run_add_layernorm, nullptr);
    input_ = uniform(rows * cols, -2, 2, 41);
    residual_ = uniform(rows * cols, -2, 2, 44);
    gamma_ = uniform(cols, 0.5f, 1.5f, 42);
    beta_ = uniform(cols, -0.5f, 0.5f, 43);
  }

  // Layer normalisation of each row of `rows_in`, in double, as the spec defines it.
  std::vector<double> normalised(const std::vector<float>& rows_in) const {
    std::vector<double> result(rows_in.size());
    for (int row = 0; row < rows; ++row) {
      const float* values = &rows_in[row * cols];
      double mean = 0, variance = 0;
      for (int column = 0; column < cols; ++column) mean += values[column];
      mean /= cols;
      for (int column = 0; column < cols; ++column) variance += (values[column] - mean) * (values[column] - mean);
      variance /= cols;
      for (int column = 0; column < cols; ++column)
        result[row * cols + column] = (values[column] - mean) / std::sqrt(variance + epsilon) * gamma_[column] +
                                      beta_[column];
    }
    return result;
  }

  std::vector<float> input_, residual_, gamma_, beta_;
};

TEST_P(AddLayernormOnHost, StoresTheSumAndNormalisesIt) {
  // Poisoned outputs: an element a path forgets stays NaN and fails both comparisons.
  std::vector<float> sum(rows * cols, std::nanf("")), output(rows * cols, std::nanf(""));
  ASSERT_EQ(host_templates().run_add_layernorm(GetParam(), rows, cols, epsilon, input_.data(), residual_.data(),
                                               gamma_.data(), beta_.data(), sum.data(), output.data()),
            0);
  std::vector<float> expected_sum(rows * cols);
  for (int index = 0; index < rows * cols; ++index) {
    expected_sum[index] = input_[index] + residual_[index];  // one fp32 addition, as every configuration does
    ASSERT_EQ(sum[index], expected_sum[index]) << "element " << index;
  }
  const std::vector<double> expected = normalised(expected_sum);
  double largest_error = 0;
  for (int index = 0; index < rows * cols; ++index) {
    ASSERT_FALSE(std::isnan(output[index])) << "element " << index;
    largest_error = std::max(largest_error, std::abs(output[index] - expected[index]));
  }
  // fp32 sums of 256 values of O(1): the outputs agree to a few 1e-7; the spec's tolerance is 1e-4.
  EXPECT_LT(largest_error, 2.0e-6);
  // The residual matters: the layer normalisation of the input alone is far from the output.
  const std::vector<double> without_residual = normalised(input_);
  double largest_difference = 0;
  for (int index = 0; index < rows * cols; ++index)
    largest_difference = std::max(largest_difference, std::abs(output[index] - without_residual[index]));
  EXPECT_GT(largest_difference, 0.5);
}

// 0: the specs' verification reference (streamed, the later passes read the stored sum), 1: the row in registers
// (VEC 4, sum of squares), 2: the row in shared memory (VEC 2, UNROLL 2).
INSTANTIATE_TEST_SUITE_P(Paths, AddLayernormOnHost, ::testing::Values(0, 1, 2));

// The fused GEMM's GELU (templates/common/activation.cuh) is the exact one, x Phi(x), to fp32 accuracy: within
// a few ulp of the value plus the cancellation of 1 + erf for negative arguments (at most 2^-24 of |x| / 2).
TEST(GeluOnHost, IsTheExactGeluToFp32Accuracy) {
  ASSERT_EQ(host_templates().error(), "");
  ASSERT_NE(host_templates().run_gelu, nullptr);
  double largest_excess = -1;
  int checked = 0;
  for (double x = -10.0; x <= 10.0; x += 1.0 / 512) {
    const float value = static_cast<float>(x);
    const double exact = value * 0.5 * std::erfc(-value / std::sqrt(2.0));
    const double allowed = 4 * std::ldexp(1.0, std::ilogb(std::max(std::abs(exact), 1e-30)) - 23) +
                           std::ldexp(std::abs(value), -24);
    largest_excess = std::max(largest_excess, std::abs(host_templates().run_gelu(value) - exact) - allowed);
    ++checked;
  }
  EXPECT_EQ(checked, 10241);
  EXPECT_LE(largest_excess, 0.0);
  // Known values: GELU(1) = 0.8413447, GELU(-1) = -0.1586553, GELU(0) = 0.
  EXPECT_NEAR(host_templates().run_gelu(1.0f), 0.8413447, 1e-6);
  EXPECT_NEAR(host_templates().run_gelu(-1.0f), -0.1586553, 1e-6);
  EXPECT_EQ(host_templates().run_gelu(0.0f), 0.0f);
}

}  // namespace
}  // namespace kernlathe
