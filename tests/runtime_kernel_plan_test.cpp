// plan_kernel without a GPU (tuner/runtime/kernel_plan.h): every configuration is checked against the kernel's
// constraints at the problem on the device before anything is compiled, the default included (issue 30), and an
// out-of-range launch geometry is an error, never a launch. The launch path itself is tests/gpu/runtime_device_test.
#include "tuner/runtime/kernel_plan.h"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>

#include "kernlathe/runtime.h"
#include "runtime_test_support.h"

namespace kernlathe {
namespace {

TemplateSource tiled_source() {
  TemplateSource source;
  source.source_name = "tiled.cu";
  source.text = "template <int BM, int BN> __global__ void tiled(float* c) {}\n";
  return source;
}

// Tiles that must divide the problem; the space defaults (BM=128, BN=128) hold at the default problem only.
KernelDatabase tiled_database(bool with_divisibility_constraints = true) {
  KernelDatabase database = runtime_test::tiled_database_with(
      {{"BM", "integer", {std::int64_t{8}, std::int64_t{128}}}, {"BN", "integer", {std::int64_t{64}, std::int64_t{128}}}},
      with_divisibility_constraints ? std::vector<std::string>{"M % BM == 0", "N % BN == 0"} : std::vector<std::string>{},
      {"N // BN", "M // BM", "1"}, {{"BM", std::int64_t{128}}, {"BN", std::int64_t{128}}},
      template_hash(tiled_source()));
  database.description.template_arguments = {"BM", "BN"};
  return database;
}

const DeviceIdentity h200{"NVIDIA H200", 9, 0, {{"sm_count", std::int64_t{132}}}};

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "(no RuntimeError)";
}

TEST(KernelPlan, DefaultValidAtTheProblemIsPlanned) {
  KernelPlan plan = plan_kernel(tiled_database(), tiled_source(), h200, {{"M", 1024}});
  EXPECT_EQ(plan.selection.rung, Rung::default_configuration);
  EXPECT_EQ(plan.grid, (std::array<std::int64_t, 3>{32, 8, 1}));
  EXPECT_EQ(plan.request.name_expression, "tiled<128, 128>");
}

TEST(KernelPlan, DefaultBreakingAConstraintAtTheProblemIsARuntimeErrorNotALaunch) {
  const std::string expected =
      "tiled: no usable configuration for NVIDIA H200 (sm_90) at M=1000,N=4096,K=4096: the default configuration "
      "(space defaults): it breaks the constraint M % BM == 0";
  EXPECT_EQ(error_of([] { plan_kernel(tiled_database(), tiled_source(), h200, {{"M", 1000}}); }), expected);
  EXPECT_EQ(error_of([] { select_usable(tiled_database(), h200, {{"M", 1000}}); }), expected);
}

// The tiled kernel with a tensor map over c: [N, M] rows of ROW elements (0: packed), as a spec with
// `strides: ["ROW if ROW > 0 else N"]` describes it.
KernelDatabase strided_map_database() {
  KernelDatabase database = tiled_database(false);
  database.description.problem.emplace_back("ROW", 0);
  ArgumentDescription map;
  map.name = "c_map";
  map.kind = "tensor_map";
  map.dtype = "f32";
  map.buffer = "c";
  map.dims = {"N", "M"};
  map.box = {"32", "8"};
  map.swizzle = "0";
  map.strides = {"ROW if ROW > 0 else N"};
  database.description.arguments.push_back(map);
  return database;
}

TEST(KernelPlan, TensorMapStridesAreEvaluatedAtTheProblem) {
  KernelPlan plan = plan_kernel(strided_map_database(), tiled_source(), h200, {{"M", 1024}, {"N", 256}, {"ROW", 320}});
  const ArgumentPlan& map = plan.arguments.at(1);
  EXPECT_EQ(map.dims, (std::vector<std::int64_t>{256, 1024}));
  EXPECT_EQ(map.strides, std::vector<std::int64_t>{320});
  EXPECT_EQ(map.buffer_index, 0);
  // A description without strides plans none: the encoder's dense tensor, as before strides existed.
  KernelPlan packed = plan_kernel(tiled_database(false), tiled_source(), h200, {{"M", 1024}});
  EXPECT_TRUE(packed.arguments.at(0).strides.empty());
}

TEST(KernelPlan, TensorMapStridesBreakingTheRulesAreARuntimeErrorAtThePlan) {
  // 250 f32 elements: 1000 bytes, not a multiple of 16.
  std::string error = error_of(
      [] { plan_kernel(strided_map_database(), tiled_source(), h200, {{"M", 1024}, {"N", 128}, {"ROW", 250}}); });
  EXPECT_EQ(error, "tiled: tensor map c_map at dims [128, 1024], strides [250]: the stride of dimension 1 is 250 "
                   "elements (1000 bytes); TMA needs a positive multiple of 16 bytes");
  // Rows of 64 elements cannot hold 128.
  error = error_of(
      [] { plan_kernel(strided_map_database(), tiled_source(), h200, {{"M", 1024}, {"N", 128}, {"ROW", 64}}); });
  EXPECT_NE(error.find("the stride of dimension 1 is 64 elements, less than the 128 elements of dimension 0"),
            std::string::npos)
      << error;
}

TEST(KernelPlan, UnusableEntriesAreCountedInTheError) {
  KernelDatabase database = tiled_database();
  DatabaseEntry entry;
  entry.device_name = "NVIDIA H200";
  entry.arch = "sm_90";
  entry.problem = {{"M", 4096}, {"N", 4096}, {"K", 4096}};
  entry.configuration = {{"BM", std::int64_t{128}}, {"BN", std::int64_t{64}}};
  entry.spec_hash = "current";
  database.entries = {entry, entry};
  database.entries[1].device_name = "NVIDIA H100 80GB HBM3";
  std::string error = error_of([&] { plan_kernel(database, tiled_source(), h200, {{"M", 1000}}); });
  EXPECT_NE(error.find("breaks the constraint M % BM == 0; 2 entries unusable here, e.g. the entry of NVIDIA H200 for "
                       "M=4096,N=4096,K=4096: it breaks the constraint M % BM == 0"),
            std::string::npos)
      << error;
}

TEST(KernelPlan, OutOfRangeLaunchGeometryIsAnErrorEvenWithoutAConstraint) {
  // Without the divisibility constraints M=16 passes the ladder and gives M // BM = 0 blocks: never launched.
  std::string error = error_of([] { plan_kernel(tiled_database(false), tiled_source(), h200, {{"M", 16}}); });
  EXPECT_EQ(error, "tiled: launch geometry grid 32x0x1, block 256x1x1 is out of range");
}

TEST(KernelPlan, SourcesReadOnceServePlansOfOtherProblemsAsFreshOnesDo) {
  // The runtime keeps a kernel's sources with their hash and plans it at every problem asked for; each plan must
  // be the one fresh sources give, the errors included.
  const KernelDatabase database = tiled_database();
  const KernelSources kept{tiled_source(), template_hash(tiled_source())};
  for (std::int64_t m : {1024, 2048, 1000, 1024}) {
    const Problem problem{{"M", m}};
    const std::string fresh_error = error_of([&] { plan_kernel(database, tiled_source(), h200, problem); });
    const std::string kept_error = error_of([&] { plan_kernel(database, kept, h200, problem); });
    EXPECT_EQ(kept_error, fresh_error);
    if (fresh_error != "(no RuntimeError)") continue;
    const KernelPlan fresh = plan_kernel(database, tiled_source(), h200, problem);
    const KernelPlan planned = plan_kernel(database, kept, h200, problem);
    EXPECT_EQ(planned.selection.configuration, fresh.selection.configuration);
    EXPECT_EQ(planned.selection.reason, fresh.selection.reason);
    EXPECT_EQ(planned.grid, fresh.grid);
    EXPECT_EQ(planned.request.source, fresh.request.source);
    EXPECT_EQ(planned.embedded_key, fresh.embedded_key);
    EXPECT_EQ(planned.arguments[0].count, m * 4096);
  }
  // The kept hash is what is checked: sources of another template are refused as fresh ones are.
  const KernelSources other{tiled_source(), "0000000000000000"};
  EXPECT_NE(error_of([&] { plan_kernel(database, other, h200, {}); }).find("are not the ones the database was written for"),
            std::string::npos);
}

TEST(KernelPlan, DeviceDependentValuesFollowDerivedValuesButNotTheArch) {
  KernelDescription description;
  description.derived = {{"TILES", "M // 64"},
                         {"GRID", "min(sm_count, TILES)"},
                         {"WAVES", "ceil_div(TILES, GRID)"},
                         {"WIDE", "64 if arch >= 90 else 32"}};
  EXPECT_EQ(device_dependent_values(description, {"sm_count", "arch", "arch_major"}),
            (std::vector<std::string>{"GRID", "WAVES"}));
}

TEST(KernelPlan, SourcesNameWholeIdentifiersOnly) {
  TemplateSource source;
  source.text = "constexpr int grid = GRID_X; // WAVES\n";
  source.headers = {{"split.cuh", "#define SPLITS_USED (WG_SPLITS > 1)\n"}};
  EXPECT_TRUE(sources_name(source, "GRID_X"));
  EXPECT_TRUE(sources_name(source, "WG_SPLITS"));  // in an included file
  EXPECT_TRUE(sources_name(source, "WAVES"));      // a comment counts: the check errs on the side of keying
  EXPECT_FALSE(sources_name(source, "GRID"));      // GRID_X is another name
  EXPECT_FALSE(sources_name(source, "SPLITS"));
}

}  // namespace
}  // namespace kernlathe
