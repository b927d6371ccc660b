// The roofline data `tune report` hands to plots.py, on committed records: which ceilings a record gets, its
// arithmetic intensity from the spec's metrics, and the attainable roof at that intensity.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tuner/report/roofline.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
const fs::path source = KERNLATHE_SOURCE_DIR;
const fs::path conv_h200 = source / "results/runs/conv3x3/sm_90/h200/W=8192_H=8192";
const fs::path conv_h100 = source / "results/runs/conv3x3/sm_90/h100/W=8192_H=8192";
const fs::path gemm_h200 = source / "results/runs/gemm_bf16/sm_90/h200-wgmma-only";

std::vector<RooflineCeilings> h200_file() { return read_ceiling_files({source / "results/ceilings/h200.json"}); }

nlohmann::ordered_json roofline_of(const fs::path& record, const std::vector<RooflineCeilings>& files) {
  const Recording recording = load_recordings({record})[0];
  return roofline_json(recording, summarize_landscape(recording), source / "kernels", files);
}

// A copy of the H200 conv3x3 record whose run's extra entries are replaced.
class EditedRecord : public ::testing::Test {
 protected:
  fs::path record_with(const nlohmann::json& extra) {
    fs::copy(conv_h200, directory_, fs::copy_options::recursive);
    nlohmann::json run_json;
    std::ifstream(directory_ / "run.json") >> run_json;
    for (auto& run : run_json["runs"]) run["extra"] = extra;
    std::ofstream(directory_ / "run.json") << run_json.dump(2);
    return directory_;
  }
  void TearDown() override { fs::remove_all(directory_); }
  fs::path directory_ = fs::temp_directory_path() / ("roofline-record-" + std::to_string(::getpid()));
};

TEST(ReportRoofline, MemoryBoundConvolutionAgainstTheCeilingFile) {
  const Recording recording = load_recordings({conv_h200})[0];
  const LandscapeSummary landscape = summarize_landscape(recording);
  const nlohmann::ordered_json roofline = roofline_json(recording, landscape, source / "kernels", h200_file());
  ASSERT_FALSE(roofline.contains("unavailable")) << roofline.dump();
  // kernels/conv3x3.yaml: flops 18 * W * H, bytes 8 * W * H
  EXPECT_DOUBLE_EQ(roofline["flops"].get<double>(), 18.0 * 8192 * 8192);
  EXPECT_DOUBLE_EQ(roofline["bytes"].get<double>(), 8.0 * 8192 * 8192);
  EXPECT_DOUBLE_EQ(roofline["intensity"].get<double>(), 2.25);
  EXPECT_DOUBLE_EQ(roofline["time_ms"].get<double>(), landscape.best_ms);
  const double gflops = 18.0 * 8192 * 8192 / (landscape.best_ms * 1e-3) / 1e9;
  EXPECT_DOUBLE_EQ(roofline["gflops"].get<double>(), gflops);
  EXPECT_EQ(roofline["compute_roof"], "fma");
  EXPECT_EQ(roofline["bound"], "memory");
  EXPECT_DOUBLE_EQ(roofline["attainable_gflops"].get<double>(), 4239.6 * 2.25);  // under the 64.7 TFLOP/s FMA roof
  EXPECT_DOUBLE_EQ(roofline["fraction"].get<double>(), gflops / (4239.6 * 2.25));
  EXPECT_EQ(roofline["ceilings"]["source"], "h200.json, measured 2026-11-24 03:05 UTC, commit b72c1ce");
}

TEST(ReportRoofline, Bf16GemmIsJudgedByTheTensorRoof) {
  const nlohmann::ordered_json roofline = roofline_of(gemm_h200, h200_file());
  ASSERT_FALSE(roofline.contains("unavailable")) << roofline.dump();
  // 2 M N K flop over (M K + K N + M N) x 2 bytes at 4096^3
  EXPECT_DOUBLE_EQ(roofline["intensity"].get<double>(), 2.0 * 4096 * 4096 * 4096 / (3.0 * 4096 * 4096 * 2));
  EXPECT_EQ(roofline["compute_roof"], "tensor");
  EXPECT_EQ(roofline["bound"], "compute");
  EXPECT_DOUBLE_EQ(roofline["attainable_gflops"].get<double>(), 887596.2);
  EXPECT_GT(roofline["fraction"].get<double>(), 0.5);  // the wgmma records reach 95-101% of cuBLAS
  EXPECT_LT(roofline["fraction"].get<double>(), 1.0);
}

TEST(ReportRoofline, OlderRunWithoutAFileGetsTheMemoryRoofOfItsRun) {
  const nlohmann::ordered_json roofline = roofline_of(conv_h100, h200_file());  // the file names another GPU
  ASSERT_FALSE(roofline.contains("unavailable")) << roofline.dump();
  EXPECT_DOUBLE_EQ(roofline["ceilings"]["copy_gbps"].get<double>(), 2987.0);  // run.json copy_bandwidth_gbps
  EXPECT_EQ(roofline["compute_roof"], "none");
  EXPECT_NE(roofline["compute_roof_note"].get<std::string>().find("no fp32 FMA ceiling recorded"), std::string::npos);
  EXPECT_DOUBLE_EQ(roofline["attainable_gflops"].get<double>(), 2987.0 * 2.25);
  EXPECT_EQ(roofline["bound"], "unknown");  // the copy roof alone does not say the kernel is memory-bound
}

TEST_F(EditedRecord, RunJsonCeilingsComeBeforeTheFile) {
  const fs::path record = record_with({{"ceiling_copy_gbps", "4000.0"}, {"ceiling_fma_gflops", "1.0"}});
  const nlohmann::ordered_json roofline = roofline_of(record, h200_file());
  ASSERT_FALSE(roofline.contains("unavailable")) << roofline.dump();
  EXPECT_DOUBLE_EQ(roofline["ceilings"]["copy_gbps"].get<double>(), 4000.0);
  EXPECT_EQ(roofline["bound"], "compute");  // a 1 GFLOP/s FMA roof is under 4000 x 2.25
  EXPECT_DOUBLE_EQ(roofline["attainable_gflops"].get<double>(), 1.0);
  EXPECT_EQ(roofline["ceilings"]["source"].get<std::string>().find("run.json"), 0u);
}

TEST_F(EditedRecord, NoCeilingsAnywhereSaysWhy) {
  const fs::path record = record_with(nlohmann::json::object());
  const nlohmann::ordered_json roofline = roofline_of(record, {});
  ASSERT_TRUE(roofline.contains("unavailable")) << roofline.dump();
  EXPECT_EQ(roofline["unavailable"].get<std::string>().find("no ceilings of NVIDIA H200"), 0u);
}

TEST(ReportRoofline, SpecsChooseTheirComputeRoof) {
  KernelSpec spec;
  EXPECT_EQ(compute_roof_of(spec), ComputeRoof::fma);
  spec.baseline.library = Baseline::Library::cublas;
  spec.baseline.compute = "f16";
  EXPECT_EQ(compute_roof_of(spec), ComputeRoof::tensor);
  spec.baseline.compute = "tf32";
  EXPECT_EQ(compute_roof_of(spec), ComputeRoof::tf32);
  spec.baseline.compute = "f32";
  EXPECT_EQ(compute_roof_of(spec), ComputeRoof::fma);
  spec.metrics.math = "bf16";  // stated: before the baseline
  std::string why;
  EXPECT_EQ(compute_roof_of(spec, &why), ComputeRoof::tensor);
  EXPECT_EQ(why.find("metrics.math is bf16"), 0u) << why;
}

TEST(ReportRoofline, ShippedSpecsStateTheirMath) {
  const std::vector<std::pair<std::string, ComputeRoof>> expected = {
      {"attention_bf16", ComputeRoof::tensor}, {"attention_f16", ComputeRoof::tensor},
      {"gemm_bf16", ComputeRoof::tensor},      {"gemm_f16", ComputeRoof::tensor},
      {"gemm_tf32", ComputeRoof::tf32},        {"gemm_f32", ComputeRoof::fma},
      {"softmax_bf16", ComputeRoof::fma},      {"conv3x3", ComputeRoof::fma}};
  for (const auto& [name, roof] : expected) {
    std::string why;
    EXPECT_EQ(compute_roof_of(load_kernel_spec(source / "kernels" / (name + ".yaml")), &why), roof) << name << ": " << why;
  }
}

TEST(ReportRoofline, UnstatedMathIsInferredFromInputsAndTemplate) {
  KernelSpec attention = load_kernel_spec(source / "kernels/attention_bf16.yaml");
  attention.metrics.math.clear();
  std::string why;
  // bf16 inputs, and templates/attention.cu includes attention/wgmma.cuh.
  EXPECT_EQ(compute_roof_of(attention, &why), ComputeRoof::tensor) << why;
  EXPECT_NE(why.find("bf16 inputs"), std::string::npos) << why;
  // softmax_bf16: bf16 inputs, but no tensor-core instruction in templates/softmax.cu.
  EXPECT_EQ(compute_roof_of(load_kernel_spec(source / "kernels/softmax_bf16.yaml"), &why), ComputeRoof::fma) << why;
  // fp32 inputs to a tensor-core template: fp32 FMA or tf32, which the spec must say.
  KernelSpec gemm_f32 = load_kernel_spec(source / "kernels/gemm_f32.yaml");
  gemm_f32.metrics.math.clear();
  gemm_f32.baseline = Baseline{};
  EXPECT_EQ(compute_roof_of(gemm_f32, &why), ComputeRoof::none) << why;
  EXPECT_NE(why.find("state metrics.math"), std::string::npos) << why;
}

TEST(ReportRoofline, AttentionIsJudgedByTheTensorRoof) {
  // Before issue 31 this record was placed against the fp32 FMA roof at "1030.7% of attainable".
  const fs::path record =
      source / "results/runs/attention_bf16/sm_90/BATCH=8_HEADS=16_SEQ=4096_HEAD_DIM=128_CAUSAL=0_ELEMENT_BYTES=2";
  const Recording recording = load_recordings({record})[0];
  const LandscapeSummary landscape = summarize_landscape(recording);
  const nlohmann::ordered_json roofline = roofline_json(recording, landscape, source / "kernels", h200_file());
  ASSERT_FALSE(roofline.contains("unavailable")) << roofline.dump();
  EXPECT_DOUBLE_EQ(roofline["intensity"].get<double>(), 2048.0);  // 4 B H S^2 D / (4 B H S D x 2 bytes) = S / 2
  EXPECT_EQ(roofline["compute_roof"], "tensor");
  EXPECT_EQ(roofline["bound"], "compute");
  // The run recorded its own ceilings (run.json ceiling_tensor_gflops 894738.3), which come before the file's.
  EXPECT_DOUBLE_EQ(roofline["attainable_gflops"].get<double>(), 894738.3);
  const double gflops = 1.099511627776e12 / (landscape.best_ms * 1e-3) / 1e9;
  EXPECT_DOUBLE_EQ(roofline["gflops"].get<double>(), gflops);
  EXPECT_DOUBLE_EQ(roofline["fraction"].get<double>(), gflops / 894738.3);
  EXPECT_GT(gflops, 64654.0);  // above the run's FMA roof: placed there, it read over 1000%
  EXPECT_LT(roofline["fraction"].get<double>(), 1.0);
  EXPECT_EQ(roofline["warning"], "");
}

TEST_F(EditedRecord, APointAboveItsRoofIsCappedAndWarned) {
  // A 1 GFLOP/s FMA roof recorded in run.json: conv3x3's best is far above it.
  const fs::path record = record_with({{"ceiling_copy_gbps", "4000.0"}, {"ceiling_fma_gflops", "1.0"}});
  const nlohmann::ordered_json roofline = roofline_of(record, h200_file());
  ASSERT_FALSE(roofline.contains("unavailable")) << roofline.dump();
  EXPECT_DOUBLE_EQ(roofline["fraction"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(roofline["measured_fraction"].get<double>(), roofline["gflops"].get<double>() / 1.0);
  const std::string warning = roofline["warning"].get<std::string>();
  EXPECT_NE(warning.find("of the fp32 FMA roof (1.0 GFLOP/s)"), std::string::npos) << warning;
}

}  // namespace
}  // namespace kernlathe
