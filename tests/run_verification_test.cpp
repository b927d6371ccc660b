// Verification catches a deliberately wrong configuration, on the CPU (issue 4). tests/data/verify/verify.yaml
// plants off-by-one bugs behind a BUG parameter. The test builds, with the host compiler, the data template and
// the very comparison source that verification compiles for the GPU (compare_kernel_source()), running both on
// host threads (tests/data/verify/host_emulation.h); it then does what the evaluation worker does: outputs
// poisoned, the reference configuration's output kept, each configuration's output compared with the spec's
// tolerance. If the comparison stopped flagging wrong or unwritten elements, these tests would fail.
// (tests/gpu/faults_device_test.cpp covers the same on the GPU, end to end.)

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tuner/run/compare_kernels.h"
#include "tuner/run/element_values.h"
#include "tuner/spec/spec_loader.h"
#include "host_library_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

using RunOffsetCopy = void (*)(int, unsigned, unsigned, long long, const float*, float*);
using RunCompare = void (*)(unsigned, const float*, const float*, long long, double, double, unsigned long long*);

const fs::path data_directory = fs::path(KERNLATHE_SOURCE_DIR) / "tests/data/verify";

// The host build of the template and the compare kernels, compiled once for all tests.
class HostKernels {
 public:
  HostKernels()
      : library_("tuner_verification",
                 "#include \"host_emulation.h\"\n" + compare_kernel_source() +
                     "\n#include \"offset_copy.cu\"\n#include \"host_entry_points.h\"\n",
                 {data_directory}),
        run_offset_copy(library_.symbol<RunOffsetCopy>("run_offset_copy")),
        run_compare(library_.symbol<RunCompare>("run_compare_f32")) {}
  const std::string& error() const { return library_.error(); }

 private:
  testing::HostLibrary library_;

 public:
  RunOffsetCopy run_offset_copy;
  RunCompare run_compare;
};

HostKernels& host_kernels() {
  static HostKernels kernels;
  return kernels;
}

struct Comparison {
  std::uint64_t failing = 0;
  std::uint64_t first_failing = 0;
  double largest_relative_error = 0;
};

class Verification : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(host_kernels().error(), "");
    ASSERT_NE(host_kernels().run_offset_copy, nullptr);
    ASSERT_NE(host_kernels().run_compare, nullptr);
    spec_ = load_kernel_spec(data_directory / "verify.yaml");
    n_ = spec_.problem.at(0).second;
    const Argument& input_argument = spec_.arguments.at(1);
    std::vector<std::byte> contents = initial_contents(Dtype::f32, n_, input_argument.init);
    input_.resize(static_cast<std::size_t>(n_));
    std::memcpy(input_.data(), contents.data(), contents.size());
    tolerance_ = spec_.verification.tolerance_for(Dtype::f32);
    reference_ = run(0, 128);
  }

  // The output of configuration (BUG, BLOCK), written over the poison pattern as the worker does.
  std::vector<float> run(int bug, unsigned block) const {
    std::vector<float> output(static_cast<std::size_t>(n_));
    std::memset(output.data(), poison_byte, output.size() * sizeof(float));
    const unsigned grid = static_cast<unsigned>((n_ + block - 1) / block);
    host_kernels().run_offset_copy(bug, grid, block, n_, input_.data(), output.data());
    return output;
  }

  Comparison compare(const std::vector<float>& output) const {
    unsigned long long results[3] = {0, ~0ull, 0};  // the worker's initial values (compare_kernels.h)
    host_kernels().run_compare(3, output.data(), reference_.data(), n_, tolerance_.absolute, tolerance_.relative,
                               results);
    double largest = 0;
    std::memcpy(&largest, &results[2], sizeof largest);
    return {results[0], results[1], largest};
  }

  KernelSpec spec_;
  std::int64_t n_ = 0;
  std::vector<float> input_;
  std::vector<float> reference_;
  Tolerance tolerance_;
};

TEST_F(Verification, SpecDeclaresTheReferenceAndATightTolerance) {
  EXPECT_EQ(n_, 4099);
  EXPECT_DOUBLE_EQ(tolerance_.relative, 1.0e-6);
  EXPECT_DOUBLE_EQ(tolerance_.absolute, 1.0e-7);
  // The reference configuration wrote every element: no poison left.
  for (float value : reference_) ASSERT_FALSE(std::isnan(value));
  EXPECT_FLOAT_EQ(reference_[17], 3.0f * input_[17] - 1.0f);
}

TEST_F(Verification, AcceptsCorrectConfigurations) {
  for (unsigned block : {64u, 128u}) {
    const Comparison comparison = compare(run(0, block));
    EXPECT_EQ(comparison.failing, 0u) << "BLOCK=" << block;
    EXPECT_EQ(comparison.first_failing, ~0ull) << "BLOCK=" << block;
    EXPECT_EQ(comparison.largest_relative_error, 0.0) << "BLOCK=" << block;
  }
}

TEST_F(Verification, CatchesTheSkippedLastElement) {
  // BUG 1 never writes element n - 1: it stays poison (NaN), and NaN must fail, whatever the tolerance.
  const Comparison comparison = compare(run(1, 64));
  EXPECT_EQ(comparison.failing, 1u);
  EXPECT_EQ(comparison.first_failing, static_cast<std::uint64_t>(n_ - 1));
}

TEST_F(Verification, CatchesTheNeighbourRead) {
  // BUG 2 is off by one in the index: every element but the last differs from the reference (inputs are random,
  // so neighbours differ by far more than the tolerance).
  const Comparison comparison = compare(run(2, 128));
  EXPECT_EQ(comparison.failing, static_cast<std::uint64_t>(n_ - 1));
  EXPECT_EQ(comparison.first_failing, 0u);
  EXPECT_GT(comparison.largest_relative_error, 1.0e-3);
}

TEST_F(Verification, ToleranceSeparatesRoundingFromErrors) {
  // A result a few ulps off (a different summation order) passes; one off by ten times the tolerance fails.
  std::vector<float> nearly = reference_;
  nearly[100] = std::nextafter(nearly[100], 10.0f);
  EXPECT_EQ(compare(nearly).failing, 0u);
  std::vector<float> wrong = reference_;
  const double limit = tolerance_.absolute + tolerance_.relative * std::abs(wrong[2000]);
  wrong[2000] = static_cast<float>(wrong[2000] + 10 * limit);
  const Comparison comparison = compare(wrong);
  EXPECT_EQ(comparison.failing, 1u);
  EXPECT_EQ(comparison.first_failing, 2000u);
}

// ---------------------------------------------------------------- GEMM tolerances against a CPU reference

// Issue 5: a CPU reference on small shapes tests the verification of the GEMM specs. The reference stands in for
// cuBLAS (double sums of the same inputs, rounded to float); the candidates are what the kernels do: fp32 sums in
// K tiles of 16 (the SIMT path's order) or, for tf32, inputs truncated to 10 mantissa bits. The specs' own
// tolerances must accept those and reject a GEMM that drops the last k term or reads B transposed.
class GemmVerification : public ::testing::Test {
 protected:
  static constexpr std::int64_t m = 24, n = 16;

  void SetUp() override { ASSERT_EQ(host_kernels().error(), ""); }

  static Tolerance tolerance_of(const char* spec_name) {
    KernelSpec spec = load_kernel_spec(fs::path(KERNLATHE_SOURCE_DIR) / "kernels" / spec_name);
    return spec.verification.tolerance_for(Dtype::f32);
  }

  static std::vector<float> random_matrix(std::int64_t count, std::uint64_t seed) {
    Initialisation init;
    init.seed = seed;  // uniform in [-1, 1), as the specs initialise A and B
    std::vector<std::byte> contents = initial_contents(Dtype::f32, count, init);
    std::vector<float> values(static_cast<std::size_t>(count));
    std::memcpy(values.data(), contents.data(), contents.size());
    return values;
  }

  // tf32 keeps 10 of fp32's 23 mantissa bits; truncation is the cheapest conversion a kernel may use.
  static float truncate_to_tf32(float value) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    bits &= 0xFFFFE000u;
    std::memcpy(&value, &bits, sizeof bits);
    return value;
  }

  enum class Variant { reference, tiled, drops_last_term, transposed_b, tf32_inputs };

  static std::vector<float> gemm(const std::vector<float>& a, const std::vector<float>& b, std::int64_t k,
                                 Variant variant) {
    std::vector<float> c(static_cast<std::size_t>(m * n));
    for (std::int64_t row = 0; row < m; ++row) {
      for (std::int64_t column = 0; column < n; ++column) {
        auto a_at = [&](std::int64_t i) { return a[static_cast<std::size_t>(row * k + i)]; };
        auto b_at = [&](std::int64_t i) {
          return variant == Variant::transposed_b ? b[static_cast<std::size_t>((column * k + i) % (k * n))]
                                                  : b[static_cast<std::size_t>(i * n + column)];
        };
        if (variant == Variant::reference) {
          double sum = 0;
          for (std::int64_t i = 0; i < k; ++i) sum += static_cast<double>(a_at(i)) * b_at(i);
          c[static_cast<std::size_t>(row * n + column)] = static_cast<float>(sum);
          continue;
        }
        const std::int64_t terms = variant == Variant::drops_last_term ? k - 1 : k;
        float sum = 0;
        for (std::int64_t tile = 0; tile < terms; tile += 16) {
          float partial = 0;
          for (std::int64_t i = tile; i < std::min(tile + 16, terms); ++i) {
            float x = a_at(i), y = b_at(i);
            if (variant == Variant::tf32_inputs) x = truncate_to_tf32(x), y = truncate_to_tf32(y);
            partial = std::fma(x, y, partial);
          }
          sum += partial;
        }
        c[static_cast<std::size_t>(row * n + column)] = sum;
      }
    }
    return c;
  }

  static std::uint64_t failing(const std::vector<float>& output, const std::vector<float>& reference,
                               const Tolerance& tolerance) {
    unsigned long long results[3] = {0, ~0ull, 0};
    host_kernels().run_compare(2, output.data(), reference.data(), static_cast<long long>(output.size()),
                               tolerance.absolute, tolerance.relative, results);
    return results[0];
  }
};

TEST_F(GemmVerification, Fp32ToleranceAcceptsTiledSumsAndRejectsWrongGemms) {
  const std::int64_t k = 4096;
  const std::vector<float> a = random_matrix(m * k, 11), b = random_matrix(k * n, 12);
  const Tolerance tolerance = tolerance_of("gemm_f32.yaml");
  const std::vector<float> reference = gemm(a, b, k, Variant::reference);
  EXPECT_EQ(failing(gemm(a, b, k, Variant::tiled), reference, tolerance), 0u);
  // One product of two values in [-1, 1) is ~0.33 in magnitude on average: far beyond an fp32 tolerance.
  EXPECT_GT(failing(gemm(a, b, k, Variant::drops_last_term), reference, tolerance), std::uint64_t{m * n / 2});
  EXPECT_GT(failing(gemm(a, b, k, Variant::transposed_b), reference, tolerance), std::uint64_t{m * n * 9 / 10});
}

TEST_F(GemmVerification, Tf32ToleranceAcceptsTruncatedInputsAtTheLargestK) {
  // The tf32 tolerance is scaled for K = 8192 (the largest floor shape); truncated inputs must pass there and a
  // transposed B must still fail.
  const std::int64_t k = 8192;
  const std::vector<float> a = random_matrix(m * k, 21), b = random_matrix(k * n, 22);
  const Tolerance tolerance = tolerance_of("gemm_tf32.yaml");
  const std::vector<float> reference = gemm(a, b, k, Variant::reference);
  EXPECT_EQ(failing(gemm(a, b, k, Variant::tf32_inputs), reference, tolerance), 0u);
  EXPECT_GT(failing(gemm(a, b, k, Variant::transposed_b), reference, tolerance), std::uint64_t{m * n * 9 / 10});
}

}  // namespace
}  // namespace kernlathe
