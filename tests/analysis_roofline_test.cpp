// The roofline's arithmetic (intensity, attainable performance, fraction) and the ceiling files of `tune report`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tuner/analysis/roofline.h"
#include "tuner/common/error.h"

namespace kernlathe {
namespace {

RooflineCeilings h200_like() {
  RooflineCeilings ceilings;
  ceilings.gpu = "GPU";
  ceilings.copy_gbps = 4000;
  ceilings.fma_gflops = 60000;
  ceilings.tensor_gflops = 800000;
  return ceilings;
}

TEST(Roofline, MemoryBoundPointIsJudgedByTheCopyRoofAtItsIntensity) {
  // 18 flop and 8 bytes per pixel (conv3x3), 1e6 pixels in 5 us: 3600 GFLOP/s at 2.25 flop/B.
  const RooflinePoint point = place_on_roofline(18e6, 8e6, 0.005, h200_like(), ComputeRoof::fma);
  EXPECT_DOUBLE_EQ(point.intensity, 2.25);
  EXPECT_DOUBLE_EQ(point.gflops, 3600);
  EXPECT_DOUBLE_EQ(point.attainable_gflops, 9000);  // 4000 GB/s x 2.25 flop/B, under the 60000 FMA roof
  EXPECT_DOUBLE_EQ(point.fraction, 0.4);
  EXPECT_TRUE(point.memory_bound);
}

TEST(Roofline, ComputeBoundPointIsJudgedByItsComputeRoof) {
  // 2 flop per multiply-add, 1000 flop/B: the copy roof (4 PFLOP/s) is far above both compute roofs.
  const RooflinePoint tensor = place_on_roofline(2e12, 2e9, 4.0, h200_like(), ComputeRoof::tensor);
  EXPECT_DOUBLE_EQ(tensor.intensity, 1000);
  EXPECT_DOUBLE_EQ(tensor.gflops, 500000);
  EXPECT_DOUBLE_EQ(tensor.attainable_gflops, 800000);
  EXPECT_DOUBLE_EQ(tensor.fraction, 0.625);
  EXPECT_FALSE(tensor.memory_bound);
  const RooflinePoint fma = place_on_roofline(2e12, 2e9, 40.0, h200_like(), ComputeRoof::fma);
  EXPECT_DOUBLE_EQ(fma.attainable_gflops, 60000);
  EXPECT_DOUBLE_EQ(fma.fraction, 50000.0 / 60000.0);
}

TEST(Roofline, WithoutAComputeRoofOnlyTheMemoryRoofBounds) {
  RooflineCeilings memory_only;
  memory_only.copy_gbps = 3000;
  const RooflinePoint point = place_on_roofline(2e12, 2e9, 4.0, memory_only, ComputeRoof::fma);  // fma not measured
  EXPECT_DOUBLE_EQ(point.attainable_gflops, 3e6);
  EXPECT_TRUE(point.memory_bound);
  EXPECT_DOUBLE_EQ(place_on_roofline(2e12, 2e9, 4.0, h200_like(), ComputeRoof::none).attainable_gflops, 4e6);
}

// Attention forward at BATCH 8, HEADS 16, SEQ 4096, HEAD_DIM 128 (kernels/attention_bf16.yaml's metrics):
// 4 x 8 x 16 x 4096^2 x 128 = 1.099511627776e12 flop over 4 x 8 x 16 x 4096 x 128 x 2 = 536870912 bytes.
constexpr double attention_flops = 1.099511627776e12;
constexpr double attention_bytes = 536870912;

TEST(Roofline, APointAboveItsRoofIsShownAtOneHundredPercentWithAWarning) {
  // 1.8 ms: 610839.8 GFLOP/s, 10.18 times the 60 TFLOP/s FMA roof (issue 31's "1030.7% of attainable").
  const RooflinePoint point =
      place_on_roofline(attention_flops, attention_bytes, 1.8, h200_like(), ComputeRoof::fma);
  EXPECT_DOUBLE_EQ(point.intensity, 2048);
  EXPECT_NEAR(point.gflops, 610839.79, 0.01);
  EXPECT_DOUBLE_EQ(point.attainable_gflops, 60000);
  EXPECT_NEAR(point.measured_fraction, 10.1807, 1e-4);
  EXPECT_TRUE(point.above_roof);
  EXPECT_DOUBLE_EQ(point.fraction, 1.0);
  const std::string warning = above_roof_warning(point, h200_like(), ComputeRoof::fma);
  EXPECT_NE(warning.find("measured 610.8 TFLOP/s, 1018.1% of the fp32 FMA roof (60.0 TFLOP/s)"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("shown as 100%"), std::string::npos) << warning;
}

TEST(Roofline, TensorCoreKernelsUnderTheTensorRoofGetNoWarning) {
  const RooflinePoint point =
      place_on_roofline(attention_flops, attention_bytes, 1.8, h200_like(), ComputeRoof::tensor);
  EXPECT_DOUBLE_EQ(point.attainable_gflops, 800000);
  EXPECT_NEAR(point.fraction, 610839.79 / 800000, 1e-8);
  EXPECT_FALSE(point.above_roof);
  EXPECT_EQ(above_roof_warning(point, h200_like(), ComputeRoof::tensor), "");
  EXPECT_EQ(roof_description(point, h200_like(), ComputeRoof::tensor), "the tensor-core roof (bf16, 800.0 TFLOP/s)");
  // tf32: half the 16-bit tensor roof; the same point is above it.
  const RooflinePoint tf32 = place_on_roofline(attention_flops, attention_bytes, 1.8, h200_like(), ComputeRoof::tf32);
  EXPECT_DOUBLE_EQ(tf32.attainable_gflops, 400000);
  EXPECT_TRUE(tf32.above_roof);
  EXPECT_DOUBLE_EQ(tf32.fraction, 1.0);
}

TEST(Roofline, AboveTheMemoryRoofNamesTheCopyBandwidth) {
  // conv3x3's 18 flop and 8 bytes per pixel, 1e6 pixels in 1 us: 18000 GFLOP/s against 4000 GB/s x 2.25 = 9000.
  const RooflinePoint point = place_on_roofline(18e6, 8e6, 0.001, h200_like(), ComputeRoof::fma);
  EXPECT_TRUE(point.memory_bound);
  EXPECT_DOUBLE_EQ(point.measured_fraction, 2.0);
  EXPECT_DOUBLE_EQ(point.fraction, 1.0);
  const std::string warning = above_roof_warning(point, h200_like(), ComputeRoof::fma);
  EXPECT_NE(warning.find("measured 18.0 TFLOP/s, 200.0% of the memory roof (device copy 4000.0 GB/s x 2.25 flop/B "
                         "= 9.0 TFLOP/s)"),
            std::string::npos)
      << warning;
}

TEST(Roofline, RejectsPointsAndCeilingsThatPlaceNothing) {
  EXPECT_THROW(place_on_roofline(1e9, 0, 1.0, h200_like(), ComputeRoof::fma), InputError);
  EXPECT_THROW(place_on_roofline(1e9, 1e9, 0, h200_like(), ComputeRoof::fma), InputError);
  RooflineCeilings none;
  EXPECT_THROW(place_on_roofline(1e9, 1e9, 1.0, none, ComputeRoof::fma), InputError);
}

TEST(Roofline, ReadsTheCommittedH200CeilingFile) {
  const std::vector<RooflineCeilings> read =
      read_ceiling_files({std::filesystem::path(KERNLATHE_SOURCE_DIR) / "results/ceilings/h200.json"});
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].gpu, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(read[0].copy_gbps, 4239.6);
  EXPECT_DOUBLE_EQ(read[0].fma_gflops, 64655.9);
  EXPECT_DOUBLE_EQ(read[0].tensor_gflops, 887596.2);
  EXPECT_EQ(read[0].tensor_source, "cuBLAS 13.1.0 bf16 8192^3");
  EXPECT_EQ(read[0].source, "h200.json, measured 2026-11-24 03:05 UTC, commit b72c1ce");
}

class CeilingFiles : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const std::filesystem::path file = directory_ / name;
    std::ofstream(file) << text;
    return file;
  }
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() / ("roofline-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::filesystem::path directory_;
};

std::string message_of(const std::vector<std::filesystem::path>& files) {
  try {
    read_ceiling_files(files);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

TEST_F(CeilingFiles, BadFilesAreInputErrorsNamingTheFileAndTheEntry) {
  const auto no_gpu = write("no_gpu.json", R"({"copy_gbps": 100})");
  EXPECT_NE(message_of({no_gpu}).find("no_gpu.json: \"gpu\""), std::string::npos) << message_of({no_gpu});
  const auto negative = write("negative.json", R"({"gpu": "X", "copy_gbps": 100, "fma_gflops": -1})");
  EXPECT_NE(message_of({negative}).find("\"fma_gflops\" must be a non-negative number"), std::string::npos);
  const auto no_copy = write("no_copy.json", R"({"gpu": "X", "fma_gflops": 10})");
  EXPECT_NE(message_of({no_copy}).find("\"copy_gbps\""), std::string::npos);
  const auto not_json = write("not_json.json", "{gpu");
  EXPECT_NE(message_of({not_json}).find("not_json.json: not JSON"), std::string::npos);
  const auto first = write("first.json", R"({"gpu": "X", "copy_gbps": 100})");
  const auto again = write("again.json", R"({"gpu": "X", "copy_gbps": 200})");
  EXPECT_NE(message_of({first, again}).find("again.json: a ceiling file given earlier already names X"),
            std::string::npos);
  // What `tune ceilings --json` prints besides (device, failures) is accepted and ignored.
  const auto printed = write("printed.json", R"({"gpu": "Y", "device": 0, "copy_gbps": 100, "failures": ""})");
  EXPECT_EQ(read_ceiling_files({printed})[0].source, "printed.json");
}

}  // namespace
}  // namespace kernlathe
