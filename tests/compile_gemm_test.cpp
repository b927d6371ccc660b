// Every GEMM spec compiles with NVRTC, per path and per architecture, on configurations drawn from its space
// (issue #5; the fused-epilogue specs of issue 19 too), and each spec's space offers the paths the contract allows
// for its input type and no others.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compile_test_support.h"
#include "tuner/common/error.h"
#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/space/configuration_checks.h"
#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

using compile_test::constants_for;

using compile_test::read_file;
using compile_test::TemporaryDirectory;

std::filesystem::path spec_path(const std::string& name) {
  return std::filesystem::path(KERNLATHE_SOURCE_DIR) / "kernels" / (name + ".yaml");
}

std::string path_of(const SpaceEnumerator& space, const Configuration& configuration) {
  const auto& parameters = space.space().parameters;
  for (std::size_t index = 0; index < parameters.size(); ++index) {
    if (parameters[index].name == "PATH") return std::get<std::string>(configuration[index]);
  }
  return "";
}

// Valid configurations by path, from a deterministic sample of the space.
std::map<std::string, std::vector<Configuration>> sample_by_path(const SpaceEnumerator& space) {
  std::map<std::string, std::vector<Configuration>> by_path;
  for (const Configuration& configuration : space.sample(400, 5)) {
    by_path[path_of(space, configuration)].push_back(configuration);
  }
  return by_path;
}

// Compiles the first sampled configuration of `path` (asserting the sample has one and NVRTC accepts it) into
// `result`, checking the arch instantiate asks for.
void compile_first_of_path(const KernelSpec& spec, const SpaceEnumerator& space,
                           std::map<std::string, std::vector<Configuration>>& by_path, const std::string& path,
                           const std::string& arch, const std::string& compiled_arch, const TemporaryDirectory& cache,
                           CompileResult& result) {
  ASSERT_FALSE(by_path[path].empty()) << "the sample has no " << path << " configuration";
  const Configuration& configuration = by_path[path].front();
  SCOPED_TRACE(to_string(spec.space, configuration));
  CompileRequest request = instantiate(spec, space, configuration, arch);
  EXPECT_EQ(request.arch, compiled_arch);
  result = compile_cubin(request, cache.path(), /*use_cache=*/false);
  ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
}

struct GemmCase {
  std::string spec;
  std::string arch;
  std::vector<std::string> paths;  // the paths the space must offer on this arch, sorted
  std::string compiled_arch;       // what instantiate asks NVRTC for
  bool wgmma_allowed = false;      // wgmma may be offered too (once the wgmma engineer enables it)
};

std::string case_name(const testing::TestParamInfo<GemmCase>& info) {
  return info.param.spec + "_" + info.param.arch;
}

class GemmSpec : public testing::TestWithParam<GemmCase> {};

TEST_P(GemmSpec, SpaceOffersExactlyTheAllowedPaths) {
  const GemmCase& test_case = GetParam();
  KernelSpec spec = load_kernel_spec(spec_path(test_case.spec));
  SpaceEnumerator space(spec.space, constants_for(spec, test_case.arch));
  // Replay data wants recorded runs of >= 2,000 configurations, so each spec's space must have that many.
  EXPECT_GE(space.valid_count(), 2000u);
  std::vector<std::string> paths;
  for (std::uint64_t index = 0; index < space.valid_count(); index += 97) {
    std::string path = path_of(space, space.at(index));
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  std::sort(paths.begin(), paths.end());
  auto wgmma = std::find(paths.begin(), paths.end(), "wgmma");
  if (wgmma != paths.end()) {
    EXPECT_TRUE(test_case.wgmma_allowed) << "wgmma offered for " << test_case.spec << " on " << test_case.arch;
    paths.erase(wgmma);
  }
  EXPECT_EQ(paths, test_case.paths);
}

// The first sampled configuration of each path compiles to an ELF cubin whose entry point keeps its C name.
TEST_P(GemmSpec, SampledConfigurationOfEveryPathCompiles) {
  const GemmCase& test_case = GetParam();
  KernelSpec spec = load_kernel_spec(spec_path(test_case.spec));
  SpaceEnumerator space(spec.space, constants_for(spec, test_case.arch));
  auto by_path = sample_by_path(space);
  TemporaryDirectory cache;
  std::vector<std::string> paths = test_case.paths;
  if (by_path.count("wgmma")) paths.push_back("wgmma");
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    CompileResult result;
    compile_first_of_path(spec, space, by_path, path, test_case.arch, test_case.compiled_arch, cache, result);
    if (HasFatalFailure()) return;
    const std::string cubin = read_file(result.cubin_path);
    ASSERT_GT(cubin.size(), 4u);
    EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
    EXPECT_EQ(result.lowered_name, "gemm");  // extern "C": no mangling
  }
}

// The paths listed per arch follow the contract: f32 -> simt, tf32 -> mma_sync, 16-bit -> simt and mma_sync, plus
// wgmma for tf32 and 16-bit inputs on sm_90 (never on sm_80). Those specs are arch_specific, so they compile for
// sm_90a on Hopper.
INSTANTIATE_TEST_SUITE_P(
    Specs, GemmSpec,
    testing::Values(GemmCase{"gemm_f32", "sm_80", {"simt"}, "sm_80"},
                    GemmCase{"gemm_f32", "sm_90", {"simt"}, "sm_90"},
                    GemmCase{"gemm_tf32", "sm_80", {"mma_sync"}, "sm_80"},
                    GemmCase{"gemm_tf32", "sm_90", {"mma_sync"}, "sm_90a", true},
                    GemmCase{"gemm_f16", "sm_80", {"mma_sync", "simt"}, "sm_80"},
                    GemmCase{"gemm_f16", "sm_90", {"mma_sync", "simt"}, "sm_90a", true},
                    GemmCase{"gemm_bf16", "sm_80", {"mma_sync", "simt"}, "sm_80"},
                    GemmCase{"gemm_bf16", "sm_90", {"mma_sync", "simt"}, "sm_90a", true},
                    // Fused epilogues (issue 19): every path applies them, so every path must compile with them.
                    GemmCase{"gemm_bf16_bias_gelu", "sm_80", {"mma_sync", "simt"}, "sm_80"},
                    GemmCase{"gemm_bf16_bias_gelu", "sm_90", {"mma_sync", "simt"}, "sm_90a", true},
                    GemmCase{"gemm_bf16_bias_residual", "sm_80", {"mma_sync", "simt"}, "sm_80"},
                    GemmCase{"gemm_bf16_bias_residual", "sm_90", {"mma_sync", "simt"}, "sm_90a", true}),
    case_name);


// The SiLU-gated epilogue (gemm_bf16_silu_gated, issue 34) compiles on every path that can take it: simt and
// mma_sync with B stored K x N at a whole-tile shape (their only layout), and wgmma in the nn.Linear layout at a
// ragged M on sm_90, where the edge tiles store pairs behind bounds checks.
struct GatedCase {
  std::string arch;
  ProblemOverrides problem;
  std::vector<std::string> paths;
  std::string compiled_arch;
};

class GemmSiluGated : public testing::TestWithParam<GatedCase> {};

TEST_P(GemmSiluGated, EveryPathThatTakesTheProblemCompiles) {
  const GatedCase& test_case = GetParam();
  KernelSpec spec = load_kernel_spec(spec_path("gemm_bf16_silu_gated"), test_case.problem);
  SpaceEnumerator space(spec.space, constants_for(spec, test_case.arch));
  auto by_path = sample_by_path(space);
  std::vector<std::string> offered;
  for (const auto& [path, unused] : by_path) offered.push_back(path);
  EXPECT_EQ(offered, test_case.paths);
  TemporaryDirectory cache;
  for (const std::string& path : test_case.paths) {
    SCOPED_TRACE(path);
    CompileResult result;
    compile_first_of_path(spec, space, by_path, path, test_case.arch, test_case.compiled_arch, cache, result);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(
    PathsAndLayouts, GemmSiluGated,
    testing::Values(GatedCase{"sm_80", {{"M", 4096}, {"N", 4096}, {"K", 4096}, {"B_LAYOUT", 0}}, {"mma_sync", "simt"},
                              "sm_80"},
                    GatedCase{"sm_90", {{"M", 4096}, {"N", 4096}, {"K", 4096}, {"B_LAYOUT", 0}},
                              {"mma_sync", "simt", "wgmma"}, "sm_90a"},
                    GatedCase{"sm_90", {{"M", 1000}, {"N", 28672}, {"K", 4096}, {"B_LAYOUT", 1}}, {"wgmma"}, "sm_90a"}),
    [](const testing::TestParamInfo<GatedCase>& info) {
      return info.param.arch + "_B_LAYOUT" + std::to_string(info.param.problem.back().second);
    });

// WG_STORE bulk (templates/gemm/wgmma.cuh): a cooperative and a ping-pong configuration of every 16-bit GEMM spec,
// at a ragged nn.Linear problem and a K x N one, compile for sm_90a without ptxas's performance warnings (a
// serialised wgmma among them), and differ from the same configuration with direct stores, except with the SiLU-gated
// epilogue, which stores directly whatever WG_STORE says (its C is n / 2 wide).
TEST(GemmBulkStore, EverySixteenBitSpecCompilesItWithoutPerformanceWarnings) {
  using Assignment = std::vector<std::pair<std::string, Value>>;
  const std::vector<Assignment> configurations = {
      {{"WG_BM", std::int64_t{128}}, {"WG_BN", std::int64_t{256}}, {"WG_STAGES", std::int64_t{3}},
       {"WG_CONSUMERS", std::int64_t{2}}},
      {{"WG_BM", std::int64_t{128}}, {"WG_BN", std::int64_t{128}}, {"WG_STAGES", std::int64_t{4}},
       {"WG_CONSUMERS", std::int64_t{2}}, {"WG_PINGPONG", true}, {"WG_CLUSTER", std::int64_t{2}}},
  };
  const std::vector<ProblemOverrides> problems = {{{"M", 1000}, {"N", 4000}, {"K", 4096}, {"B_LAYOUT", 1}},
                                                  {{"M", 300}, {"N", 1024}, {"K", 520}, {"B_LAYOUT", 0}}};
  TemporaryDirectory cache;
  int compiled = 0;
  for (const char* name : {"gemm_bf16", "gemm_f16", "gemm_bf16_bias_gelu", "gemm_bf16_bias_residual",
                           "gemm_bf16_silu_gated"}) {
    for (const ProblemOverrides& problem : problems) {
      KernelSpec spec = load_kernel_spec(spec_path(name), problem);
      SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
      for (const Assignment& assignment : configurations) {
        std::string cubins[2];
        for (const char* store : {"direct", "bulk"}) {
          Assignment values = assignment;
          values.emplace_back("PATH", std::string("wgmma"));
          values.emplace_back("BLOCKS_PER_SM", std::int64_t{1});
          values.emplace_back("WG_STORE", std::string(store));
          Configuration configuration = space.default_configuration();
          for (const auto& [parameter, value] : values) {
            const auto& parameters = spec.space.parameters;
            const auto found = std::find_if(parameters.begin(), parameters.end(),
                                            [&](const Parameter& candidate) { return candidate.name == parameter; });
            ASSERT_NE(found, parameters.end()) << parameter;
            configuration[static_cast<std::size_t>(found - parameters.begin())] = value;
          }
          configuration = space.canonical(std::move(configuration));
          SCOPED_TRACE(fmt::format("{} {}", name, to_string(spec.space, configuration)));
          ASSERT_TRUE(space.is_valid(configuration));
          CompileResult result = compile_cubin(instantiate(spec, space, configuration, "sm_90"), cache.path(), false);
          ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
          EXPECT_EQ(performance_warnings(result.log), std::vector<std::string>{}) << result.log;
          cubins[std::string(store) == "bulk"] = read_file(result.cubin_path);
          ++compiled;
        }
        if (std::string(name) == "gemm_bf16_silu_gated") {
          EXPECT_EQ(cubins[0], cubins[1]) << name << ": the gated epilogue stores directly";
        } else {
          EXPECT_NE(cubins[0], cubins[1]) << name << ": bulk stores compiled to the direct kernel";
        }
      }
    }
  }
  EXPECT_EQ(compiled, 5 * 2 * 2 * 2);
}

// An odd N leaves a gate column without its up column: the spec's count of C is negative there, so the problem is
// refused before any configuration is compiled.
TEST(GemmSiluGated, OddColumnCountIsRefused) {
  KernelSpec spec = load_kernel_spec(spec_path("gemm_bf16_silu_gated"), {{"M", 2}, {"N", 7}, {"K", 64}});
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
  try {
    check_spec_configurations(spec, space);
    FAIL() << "an odd N was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("buffer 'c'"), std::string::npos) << error.what();
  }
}

// The space's defaults are the fastest fp32 configuration measured on the H200 (128 x 128 x 16 blocks, 8 x 8 thread
// tiles, two blocks per SM); the register and shared-memory estimates must not exclude it.
TEST(GemmSpace, MeasuredFastestSimtConfigurationIsValid) {
  KernelSpec spec = load_kernel_spec(spec_path("gemm_f32"));
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
  const Configuration fastest = space.default_configuration();
  EXPECT_TRUE(space.is_valid(fastest)) << to_string(spec.space, fastest);
  Bindings bindings = space.bindings(fastest);
  EXPECT_EQ(std::get<std::int64_t>(bindings.get("THREADS")), 256);
  EXPECT_EQ(std::get<std::int64_t>(bindings.get("SHARED_BYTES")), 2 * 16 * (128 + 4 + 128) * 4);
  EXPECT_EQ(std::get<std::int64_t>(bindings.get("GRID_X")), (4096 / 128) * (4096 / 128));
}

TEST(GemmSpace, TileShapesThatDoNotDivideTheProblemAreRejected) {
  KernelSpec spec = load_kernel_spec(spec_path("gemm_f32"), {{"M", 4096 + 32}, {"N", 4096}, {"K", 4096}});
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
  const auto& parameters = space.space().parameters;
  const auto block_rows = std::find_if(parameters.begin(), parameters.end(),
                                       [](const Parameter& parameter) { return parameter.name == "BM"; }) -
                          parameters.begin();
  // M = 4128 = 32 * 129: only BM = 32 divides it.
  for (std::uint64_t index = 0; index < space.valid_count(); index += 13) {
    EXPECT_EQ(std::get<std::int64_t>(space.at(index)[block_rows]), 32);
  }
}

}  // namespace
}  // namespace kernlathe
