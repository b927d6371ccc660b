// Tensor-map arguments and the baseline section: what the GEMM specs use to describe TMA descriptors and cuBLAS.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "tuner/spec/spec_loader.h"
#include "spec_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

using spec_test::input_error_of;

class BaselineSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 fmt::format("spec_baseline_test_{}_{}", getpid(),
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(directory_);
    std::ofstream(directory_ / "kernel.cu") << "__global__ void k() {}\n";
  }
  void TearDown() override { fs::remove_all(directory_); }

  // A GEMM-like spec; `map_line` is line 13 and `tail` starts at line 14.
  KernelSpec parse(const std::string& map_line, const std::string& tail) {
    return parse_kernel_spec(
        "name: g\n"                                                             // 1
        "template: kernel.cu\n"                                                 // 2
        "entry: k\n"                                                            // 3
        "problem: {M: 64, N: 32, K: 16}\n"                                      // 4
        "space: {parameters: [{name: BM, values: [64, 128]}, {name: BK, values: [16, 32]}]}\n"  // 5
        "launch: {grid: [1], block: [128]}\n"                                   // 6
        "arguments:\n"                                                          // 7
        "  - {name: alpha, type: f32, value: 1.0}\n"                            // 8
        "  - {name: beta, type: f32, value: 0.0}\n"                             // 9
        "  - {name: a, type: f16, count: M * K}\n"                              // 10
        "  - {name: b, type: f16, count: K * N}\n"                              // 11
        "  - {name: c, type: f16, count: M * N, role: out}\n" +                 // 12
            map_line + tail,
        directory_ / "spec.yaml");
  }

  static constexpr const char* good_map = "  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK, BM], swizzle: 128}\n";
  static constexpr const char* good_baseline =
      "baseline: {library: cublas, operation: gemm, compute: f16, m: M, n: N, k: K, a: a, b: b, c: c, alpha: alpha, "
      "beta: beta}\n";

  fs::path directory_;
};

TEST_F(BaselineSpecTest, TensorMapAndBaselineParse) {
  KernelSpec spec = parse(good_map, std::string(good_baseline) + "verify: {reference: baseline}\n");
  const Argument& map = spec.arguments.at(5);
  ASSERT_TRUE(map.tensor_map.has_value());
  EXPECT_FALSE(map.is_buffer);
  EXPECT_FALSE(map.is_scalar());
  EXPECT_EQ(map.dtype, Dtype::f16);  // the described buffer's
  EXPECT_EQ(map.tensor_map->buffer, "a");
  ASSERT_EQ(map.tensor_map->dims.size(), 2u);
  EXPECT_EQ(map.tensor_map->dims[1].text(), "M");
  EXPECT_EQ(map.tensor_map->box[0].text(), "BK");
  EXPECT_EQ(map.tensor_map->swizzle.text(), "128");
  EXPECT_TRUE(spec.arguments.at(0).is_scalar());

  EXPECT_TRUE(spec.baseline.present());
  EXPECT_EQ(spec.baseline.library, Baseline::Library::cublas);
  EXPECT_EQ(spec.baseline.compute, "f16");
  EXPECT_EQ(spec.baseline.k.text(), "K");
  EXPECT_EQ(spec.baseline.c, "c");
  EXPECT_EQ(spec.baseline.beta, "beta");
  EXPECT_TRUE(spec.verification.reference_is_baseline);
  EXPECT_TRUE(spec.verification.reference.empty());
}

TEST_F(BaselineSpecTest, SwizzleDefaultsToNone) {
  KernelSpec spec = parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK, BM]}\n", "");
  EXPECT_EQ(spec.arguments.at(5).tensor_map->swizzle.text(), "0");
  EXPECT_FALSE(spec.baseline.present());
}

TEST_F(BaselineSpecTest, TensorMapOfAnUnknownBufferListsTheBuffers) {
  std::string message = input_error_of(
      [&] { parse("  - {name: a_map, type: tensor_map, buffer: aa, dims: [K, M], box: [BK, BM]}\n", ""); });
  EXPECT_NE(message.find("spec.yaml:13:"), std::string::npos) << message;
  EXPECT_NE(message.find("describes buffer 'aa'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'a'"), std::string::npos) << message;
  EXPECT_NE(message.find("buffers so far: a, b, c"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, TensorMapBoxNeedsOneSizePerDimension) {
  std::string message =
      input_error_of([&] { parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK]}\n", ""); });
  EXPECT_NE(message.find("has 1 box sizes for 2 dims"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, TensorMapDimsMayNotUseAParameter) {
  std::string message =
      input_error_of([&] { parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [BK, M], box: [BK, BM]}\n", ""); });
  EXPECT_NE(message.find("a dimension of tensor map 'a_map' uses tuning parameter 'BK'"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, TensorMapStridesParseAndDefaultToPacked) {
  KernelSpec spec = parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK, BM], strides: [K + 8]}\n", "");
  const TensorMapDescription& map = *spec.arguments.at(5).tensor_map;
  ASSERT_EQ(map.strides.size(), 1u);
  EXPECT_EQ(map.strides[0].text(), "K + 8");
  EXPECT_TRUE(parse(good_map, "").arguments.at(5).tensor_map->strides.empty());
}

TEST_F(BaselineSpecTest, TensorMapStridesNeedOnePerDimensionAfterTheInnermost) {
  std::string message = input_error_of(
      [&] { parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK, BM], strides: [K, M]}\n", ""); });
  EXPECT_NE(message.find("spec.yaml:13:"), std::string::npos) << message;
  EXPECT_NE(message.find("tensor map 'a_map' has 2 strides for 2 dims; give one per dimension after the innermost (1), "
                         "in elements"),
            std::string::npos)
      << message;
}

TEST_F(BaselineSpecTest, ConstantTensorMapStrideMustBeAMultipleOfSixteenBytes) {
  // a is f16: 12 elements are 24 bytes.
  std::string message = input_error_of(
      [&] { parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK, BM], strides: [12]}\n", ""); });
  EXPECT_NE(message.find("spec.yaml:13:"), std::string::npos) << message;
  EXPECT_NE(message.find("tensor map 'a_map' stride '12': the stride of dimension 1 is 12 elements (24 bytes); TMA "
                         "needs a positive multiple of 16 bytes"),
            std::string::npos)
      << message;
}

TEST_F(BaselineSpecTest, ConstantTensorMapStrideMustCoverTheDimensionInsideIt) {
  std::string message = input_error_of(
      [&] { parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [64, 8], box: [BK, BM], strides: [32]}\n", ""); });
  EXPECT_NE(message.find("spec.yaml:13:"), std::string::npos) << message;
  EXPECT_NE(message.find("tensor map 'a_map' strides: the stride of dimension 1 is 32 elements, less than the 64 "
                         "elements of dimension 0 it steps over"),
            std::string::npos)
      << message;
  // The same stride is fine where dims are only known at the problem: checked then.
  EXPECT_NO_THROW(parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK, BM], strides: [32]}\n", ""));
}

TEST_F(BaselineSpecTest, TensorMapStridesMayNotUseAParameter) {
  std::string message = input_error_of(
      [&] { parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK, BM], strides: [BK]}\n", ""); });
  EXPECT_NE(message.find("a stride of tensor map 'a_map' uses tuning parameter 'BK'"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, BufferRejectsStrides) {
  std::string message = input_error_of([&] { parse("  - {name: d, type: f32, count: 4, strides: [4]}\n", ""); });
  EXPECT_NE(message.find("argument 'd': strides applies to tensor maps only"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, TensorMapRejectsBufferKeys) {
  std::string message = input_error_of(
      [&] { parse("  - {name: a_map, type: tensor_map, buffer: a, dims: [K, M], box: [BK, BM], count: 4}\n", ""); });
  EXPECT_NE(message.find("count does not apply to a tensor map"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, BufferRejectsTensorMapKeys) {
  std::string message = input_error_of([&] { parse("  - {name: d, type: f32, count: 4, box: [4]}\n", ""); });
  EXPECT_NE(message.find("box applies to tensor maps only"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, BaselineOperandMustBeABuffer) {
  std::string message = input_error_of([&] {
    parse(good_map,
          "baseline: {library: cublas, operation: gemm, compute: f16, m: M, n: N, k: K, a: alpha, b: b, c: c, "
          "alpha: alpha, beta: beta}\n");
  });
  EXPECT_NE(message.find("spec.yaml:14:"), std::string::npos) << message;
  EXPECT_NE(message.find("baseline.a is 'alpha', which is not a buffer argument"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, BaselineScalarMustBeAScalar) {
  std::string message = input_error_of([&] {
    parse(good_map,
          "baseline: {library: cublas, operation: gemm, compute: f16, m: M, n: N, k: K, a: a, b: b, c: c, "
          "alpha: a_map, beta: beta}\n");
  });
  EXPECT_NE(message.find("baseline.alpha is 'a_map', which is not a scalar argument"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, UnknownBaselineLibraryListsTheKnownOnes) {
  std::string message = input_error_of([&] {
    parse(good_map,
          "baseline: {library: rocblas, operation: gemm, compute: f16, m: M, n: N, k: K, a: a, b: b, c: c, "
          "alpha: alpha, beta: beta}\n");
  });
  EXPECT_NE(message.find("rocblas"), std::string::npos) << message;
  EXPECT_NE(message.find("cublas"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, BaselineSizesMayNotUseParameters) {
  std::string message = input_error_of([&] {
    parse(good_map,
          "baseline: {library: cublas, operation: gemm, compute: f16, m: BM, n: N, k: K, a: a, b: b, c: c, "
          "alpha: alpha, beta: beta}\n");
  });
  EXPECT_NE(message.find("baseline.m uses tuning parameter 'BM'"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, ReferenceBaselineNeedsABaseline) {
  std::string message = input_error_of([&] { parse(good_map, "verify: {reference: baseline}\n"); });
  EXPECT_NE(message.find("spec has no baseline"), std::string::npos) << message;
}

TEST_F(BaselineSpecTest, ReferenceWordOtherThanBaselineIsRejected) {
  std::string message = input_error_of([&] { parse(good_map, "verify: {reference: cublas}\n"); });
  EXPECT_NE(message.find("verify.reference is 'cublas'"), std::string::npos) << message;
}

}  // namespace
}  // namespace kernlathe
