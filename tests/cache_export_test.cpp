// tune export (no GPU: NVRTC only): what it writes loads back into the runtime's reader and gives the same
// configuration for the same device and problem; stale entries are left out and said so; the embedded C++ file
// registers every kernel with its cubins.
#include "tuner/cache/export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tuner/cache/best_cache.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/common/error.h"
#include "tuner/runtime/kernel_plan.h"
#include "tuner/runtime/source_bundle.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

const std::filesystem::path source_directory = KERNLATHE_SOURCE_DIR;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream input(path, std::ios::binary);
  std::stringstream contents;
  contents << input.rdbuf();
  return contents.str();
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("kernlathe-export-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    spec_ = load_kernel_spec(source_directory / "kernels" / "saxpy.yaml");
    Constants constants = device_property_values(device_profile("sm_90"));
    for (const auto& [symbol, value] : spec_.problem) constants.emplace_back(symbol, Value{value});
    SpaceEnumerator space(spec_.space, constants);
    description_ = describe_kernel(spec_, space);
    tuned_ = space.at(space.valid_count() / 3);
    DatabaseEntry entry;
    entry.device_name = "NVIDIA H200";
    entry.arch = "sm_90";
    entry.problem = Problem(spec_.problem.begin(), spec_.problem.end());
    entry.configuration = configuration_values(spec_.space, tuned_);
    entry.time = {0.19, 0.01, 40};
    entry.spec_hash = description_.spec_hash;
    BestCache(root_ / "best").update(description_, entry);
    DatabaseEntry stale = entry;
    stale.problem.at("N") = 1024;
    stale.spec_hash = "an-older-spec";
    BestCache(root_ / "best").update(description_, stale);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  ExportOptions options() const {
    ExportOptions exported;
    exported.kernels = {"saxpy"};
    exported.archs = {"sm_90"};
    exported.best_directory = root_ / "best";
    exported.specs = source_directory / "kernels";
    exported.out = root_ / "out";
    exported.cubin_cache = root_ / "cache";
    return exported;
  }

  std::filesystem::path root_;
  KernelSpec spec_;
  KernelDescription description_;
  Configuration tuned_;
};

TEST_F(ExportTest, ExportedDatabaseGivesTheSameConfigurationAndCurrentEntriesOnly) {
  ExportOptions exported = options();
  exported.embed = true;
  std::vector<ExportedKernel> reports = export_kernels(exported);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].entries, 1);
  EXPECT_EQ(reports[0].stale_dropped, 1);
  ASSERT_FALSE(reports[0].notes.empty());
  EXPECT_NE(reports[0].notes[0].find("left out the stale entry"), std::string::npos) << reports[0].notes[0];

  KernelDatabase database = read_database(exported.out / "database" / "saxpy.json");
  ASSERT_EQ(database.entries.size(), 1u);
  KernelSources source = parse_source_bundle(read_text(exported.out / "sources" / "saxpy.source.json"), "bundle");
  EXPECT_EQ(template_hash(source.source), database.description.template_hash);

  DeviceIdentity h200{"NVIDIA H200", 9, 0, {}};
  for (auto& [name, value] : device_property_values(device_profile("sm_90"))) h200.properties.emplace_back(name, value);
  KernelPlan plan = plan_kernel(database, source, h200, {});
  EXPECT_EQ(plan.selection.rung, Rung::exact);
  EXPECT_EQ(configuration_from_values(spec_.space, plan.selection.configuration), tuned_);
  // The cubin the runtime will ask for on that device is in the export, named by its key.
  EXPECT_TRUE(std::filesystem::is_regular_file(exported.out / "cubins" / (plan.embedded_key + ".cubin")));
  EXPECT_EQ(read_text(exported.out / "cubins" / (plan.embedded_key + ".name")).rfind("_Z", 0), 0u);

  std::string embedded = read_text(exported.out / "kernlathe_embedded.cpp");
  EXPECT_NE(embedded.find("#include <kernlathe/embedded.h>"), std::string::npos);
  EXPECT_NE(embedded.find("kernlathe::register_embedded_kernel(kernel_0)"), std::string::npos);
  EXPECT_NE(embedded.find("\"" + plan.embedded_key + "\""), std::string::npos);
}

TEST_F(ExportTest, UnknownKernelAndMissingEntriesAreInputErrors) {
  ExportOptions exported = options();
  exported.kernels = {"softmax"};  // a spec exists, nothing is stored for it in this best directory
  try {
    export_kernels(exported);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("nothing stored for kernel 'softmax'"), std::string::npos) << error.what();
  }
  exported = options();
  exported.out.clear();
  EXPECT_THROW(export_kernels(exported), InputError);
}

TEST_F(ExportTest, IncludeStaleKeepsEveryEntry) {
  ExportOptions exported = options();
  exported.include_stale = true;
  std::vector<ExportedKernel> reports = export_kernels(exported);
  EXPECT_EQ(reports[0].entries, 2);
  EXPECT_EQ(read_database(exported.out / "database" / "saxpy.json").entries.size(), 2u);
}

// Planted specs (not the shipped ones, which change under other work): any_scale holds everywhere; hopper_scale's
// space holds only where arch == 90, as attention_bf16's wgmma path does.
void plant_spec(const std::filesystem::path& specs, const std::string& name, const std::string& constraints) {
  std::filesystem::create_directories(specs);
  std::ofstream(specs / "scale.cu") << "__global__ void scale(float* x, long long n) {\n"
                                       "  long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;\n"
                                       "  if (i < n) x[i] *= 2.0f;\n}\n";
  std::ofstream(specs / (name + ".yaml")) << "name: " << name << "\n"
                                          << "template: scale.cu\n"
                                             "entry: scale\n"
                                             "problem: {N: 4096}\n"
                                             "space:\n"
                                             "  parameters:\n"
                                             "    - {name: BLOCK, values: [64, 128, 256], default: 128}\n"
                                          << "  constraints: [" << constraints << "]\n"
                                          << "arguments:\n"
                                             "  - {name: x, type: f32, count: N, init: {constant: 1}, role: inout}\n"
                                             "  - {name: n, type: i64, value: N}\n"
                                             "launch: {grid: [\"ceil_div(N, BLOCK)\"], block: [BLOCK]}\n";
}

// Stores one entry of the planted spec, tuned on an H200 at its default problem.
void store_planted(const std::filesystem::path& specs, const std::filesystem::path& best, const std::string& name) {
  KernelSpec spec = load_kernel_spec(specs / (name + ".yaml"));
  Constants constants = device_property_values(device_profile("sm_90"));
  for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, Value{value});
  SpaceEnumerator space(spec.space, constants);
  KernelDescription description = describe_kernel(spec, space);
  DatabaseEntry entry;
  entry.device_name = "NVIDIA H200";
  entry.arch = "sm_90";
  entry.problem = Problem(spec.problem.begin(), spec.problem.end());
  entry.configuration = configuration_values(spec.space, space.at(0));
  entry.time = {0.01, 0.01, 40};
  entry.spec_hash = description.spec_hash;
  BestCache(best).update(description, entry);
}

TEST_F(ExportTest, DefaultBreakingAConstraintOnAnExportedArchIsRefusedBeforeAnythingIsWritten) {
  const std::filesystem::path specs = root_ / "specs";
  plant_spec(specs, "any_scale", "BLOCK >= 64");
  plant_spec(specs, "hopper_scale", "arch == 90");
  store_planted(specs, root_ / "best", "any_scale");
  store_planted(specs, root_ / "best", "hopper_scale");
  ExportOptions exported = options();
  exported.kernels = {"any_scale", "hopper_scale"};  // the first is fine: it must not be written either
  exported.specs = specs;
  exported.archs = {"sm_90", "sm_80"};
  try {
    export_kernels(exported);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "export: hopper_scale on sm_80: its default configuration (space defaults): it breaks the constraint "
              "arch == 90 at its default problem N=4096 (profile sm_80 (A100)), so the runtime would have nothing to "
              "fall back on there; nothing was written (leave sm_80 out of --arch, or give the space defaults that "
              "hold there)");
  }
  EXPECT_FALSE(std::filesystem::exists(exported.out));

  // On the arch where its space holds, the same kernel exports.
  exported.archs = {"sm_90"};
  std::vector<ExportedKernel> reports = export_kernels(exported);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[1].kernel, "hopper_scale");
  EXPECT_GE(reports[1].cubins, 1);
  EXPECT_TRUE(std::filesystem::is_regular_file(exported.out / "database" / "hopper_scale.json"));
}

// A planted grid-stride kernel whose grid is GRID = sm_count * PER_SM blocks. compiled_in: the template reads GRID
// (as gemm's template reads WG_SPLITS), else it strides by gridDim and GRID only shapes the launch.
void plant_grid_spec(const std::filesystem::path& specs, const std::string& name, bool compiled_in) {
  std::filesystem::create_directories(specs);
  std::ofstream(specs / (name + ".cu"))
      << "__global__ void stride(float* x, long long n) {\n"
      << "  const long long stride = " << (compiled_in ? "GRID * 128LL" : "gridDim.x * static_cast<long long>(blockDim.x)")
      << ";\n"
         "  for (long long i = blockIdx.x * 128LL + threadIdx.x; i < n; i += stride) x[i] *= 2.0f;\n}\n";
  std::ofstream(specs / (name + ".yaml")) << "name: " << name << "\n"
                                          << "template: " << name << ".cu\n"
                                          << "entry: stride\n"
                                             "problem: {N: 1048576}\n"
                                             "space:\n"
                                             "  parameters:\n"
                                             "    - {name: PER_SM, values: [1, 2], default: 2}\n"
                                             "  derived:\n"
                                             "    GRID: sm_count * PER_SM\n"
                                             "arguments:\n"
                                             "  - {name: x, type: f32, count: N, init: {constant: 1}, role: inout}\n"
                                             "  - {name: n, type: i64, value: N}\n"
                                             "launch: {grid: [GRID], block: [128]}\n";
}

// Issue 36: the cubins of an sm_90 export are found on every sm_90 board, whatever its SM count.
TEST_F(ExportTest, Sm90CubinsAreFoundOnTheH100SxmAndTheH100Pcie) {
  const std::filesystem::path specs = root_ / "specs";
  plant_grid_spec(specs, "launch_grid", false);
  plant_grid_spec(specs, "compiled_grid", true);
  store_planted(specs, root_ / "best", "launch_grid");
  store_planted(specs, root_ / "best", "compiled_grid");
  ExportOptions exported = options();
  exported.kernels = {"launch_grid", "compiled_grid"};
  exported.specs = specs;
  exported.embed = true;
  std::vector<ExportedKernel> reports = export_kernels(exported);
  ASSERT_EQ(reports.size(), 2u);
  const DeviceIdentity sxm = runtime_identity(device_profile("sm_90"));            // 132 SMs
  const DeviceIdentity pcie = runtime_identity(named_device_profile("NVIDIA H100 PCIe"));  // 114 SMs
  const std::string embedded = read_text(exported.out / "kernlathe_embedded.cpp");
  auto plans = [&](const std::string& kernel) {
    KernelDatabase database = read_database(exported.out / "database" / (kernel + ".json"));
    KernelSources source = parse_source_bundle(read_text(exported.out / "sources" / (kernel + ".source.json")), kernel);
    return std::pair{plan_kernel(database, source, sxm, {}), plan_kernel(database, source, pcie, {})};
  };
  auto exported_cubin = [&](const KernelPlan& plan) {
    return std::filesystem::is_regular_file(exported.out / "cubins" / (plan.embedded_key + ".cubin")) &&
           embedded.find("\"" + plan.embedded_key + "\"") != std::string::npos;
  };

  // GRID only shapes the launch: bound there (132 and 114 blocks for the stored PER_SM=1), one cubin under one key
  // for both boards.
  auto [launch_sxm, launch_pcie] = plans("launch_grid");
  EXPECT_EQ(launch_sxm.grid[0], 132);
  EXPECT_EQ(launch_pcie.grid[0], 114);
  EXPECT_EQ(launch_sxm.unkeyed_values, std::vector<std::string>{"GRID"});
  EXPECT_EQ(launch_sxm.embedded_key, launch_pcie.embedded_key);
  EXPECT_TRUE(exported_cubin(launch_sxm));
  EXPECT_EQ(reports[0].cubins, 1);

  // The template compiles GRID in: a cubin per value the sm_90 boards give it (132 and 114 SMs), each found.
  auto [compiled_sxm, compiled_pcie] = plans("compiled_grid");
  EXPECT_TRUE(compiled_sxm.unkeyed_values.empty());
  EXPECT_NE(compiled_sxm.embedded_key, compiled_pcie.embedded_key);
  EXPECT_TRUE(exported_cubin(compiled_sxm));
  EXPECT_TRUE(exported_cubin(compiled_pcie));
  EXPECT_EQ(reports[1].cubins, 2);
}

TEST_F(ExportTest, UnknownArchIsRefusedBeforeAnythingIsWritten) {
  ExportOptions exported = options();
  exported.archs = {"sm_90", "sm_75"};
  EXPECT_THROW(export_kernels(exported), InputError);
  EXPECT_FALSE(std::filesystem::exists(exported.out));
}

}  // namespace
}  // namespace kernlathe
