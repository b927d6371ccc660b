// The attention template compiles with NVRTC in each of its code paths (issues 19 and 33): the fp32 reference, and
// the wgmma path with one, two and three consumer warpgroups, with the products one after another or overlapped with
// the softmax, with consumers taking turns (ping-pong), walking the query tiles of every pair together, and with key
// tiles of 64 and 128 rows; for bf16 and fp16, head dimensions 64, 96 and 128 (96 computed as 128 over TMA's zeros),
// causal and not, at sequences no tile
// divides (1, 63, 1000, 4096 + 77, and keys cached before the queries), grouped-query ratios 1, 4 and 8, in both
// layouts, on sm_90 (where the specs ask for sm_90a). On sm_80 the space offers the reference path only, and that
// compiles.
// Each case is the first configuration of the shipped space, in a deterministic random order, that matches it, so the
// test also fails if the space stops offering a path.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "compile_test_support.h"
#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

using compile_test::constants_for;

using compile_test::read_file;
using compile_test::TemporaryDirectory;

// One spec at one problem: the element type comes with the spec, the rest with the problem.
struct AttentionProblem {
  std::string spec;
  std::int64_t head_dim;
  bool causal;
  std::int64_t sequence;
  std::int64_t heads, kv_heads;
  std::int64_t layout;  // 0: BHSD, 1: BSHD
  std::int64_t cached = 0;
};

void PrintTo(const AttentionProblem& problem, std::ostream* stream) {
  *stream << problem.spec << " HEAD_DIM " << problem.head_dim << " CAUSAL " << (problem.causal ? 1 : 0) << " SEQ "
          << problem.sequence << " HEADS " << problem.heads << " KV_HEADS " << problem.kv_heads << " LAYOUT "
          << problem.layout << " CACHED " << problem.cached;
}

std::string problem_name(const testing::TestParamInfo<AttentionProblem>& info) {
  const AttentionProblem& problem = info.param;
  return problem.spec + "_hd" + std::to_string(problem.head_dim) + (problem.causal ? "_causal" : "") + "_seq" +
         std::to_string(problem.sequence) + "_gqa" + std::to_string(problem.heads / problem.kv_heads) +
         (problem.layout == 1 ? "_bshd" : "_bhsd") + (problem.cached > 0 ? "_cached" : "");
}

KernelSpec load_spec(const AttentionProblem& problem) {
  return load_kernel_spec(std::filesystem::path(KERNLATHE_SOURCE_DIR) / "kernels" / (problem.spec + ".yaml"),
                          {{"SEQ", problem.sequence},
                           {"HEAD_DIM", problem.head_dim},
                           {"CAUSAL", problem.causal ? 1 : 0},
                           {"BATCH", 2},
                           {"HEADS", problem.heads},
                           {"KV_HEADS", problem.kv_heads},
                           {"LAYOUT", problem.layout},
                           {"CACHED", problem.cached}});
}

// A configuration's bindings, with the path it takes.
struct Lookup : compile_test::Lookup {
  bool wgmma() const { return text("PATH") == "wgmma"; }
};

struct PathCase {
  std::string name;
  std::function<bool(const Lookup&)> matches;
};

// Parameters of one path keep their defaults on the other (`when:`), so every wgmma case checks PATH first.
std::vector<PathCase> path_cases() {
  return {
      {"reference", [](const Lookup& c) { return c.text("PATH") == "reference"; }},
      {"wgmma_one_consumer", [](const Lookup& c) { return c.wgmma() && c.integer("AT_CONSUMERS") == 1; }},
      {"wgmma_two_consumers", [](const Lookup& c) { return c.wgmma() && c.integer("AT_CONSUMERS") == 2; }},
      {"wgmma_three_consumers", [](const Lookup& c) { return c.wgmma() && c.integer("AT_CONSUMERS") == 3; }},
      {"wgmma_steps_in_turn", [](const Lookup& c) { return c.wgmma() && !c.flag("AT_OVERLAP"); }},
      {"wgmma_overlapped_without_ping_pong",
       [](const Lookup& c) { return c.wgmma() && c.flag("AT_OVERLAP") && !c.flag("AT_PINGPONG"); }},
      {"wgmma_ping_pong", [](const Lookup& c) { return c.wgmma() && c.flag("AT_PINGPONG"); }},
      {"wgmma_tiles_order", [](const Lookup& c) { return c.wgmma() && c.text("AT_ORDER") == "tiles"; }},
      {"wgmma_64_key_tiles", [](const Lookup& c) { return c.wgmma() && c.integer("AT_BN") == 64; }},
      {"wgmma_128_key_tiles", [](const Lookup& c) { return c.wgmma() && c.integer("AT_BN") == 128; }},
  };
}

// The whole space in a deterministic random order, so each path's case is a varied configuration and a path the
// space offers is always found: a sample of 48 stopped finding the 6 reference configurations once AT_KV_SHARE made
// a grouped-query problem's space 400 to 600 configurations.
constexpr std::uint64_t sample_seed = 19;

class AttentionTemplate : public testing::TestWithParam<AttentionProblem> {};

TEST_P(AttentionTemplate, EveryPathCompilesOnSm90) {
  const AttentionProblem& problem = GetParam();
  KernelSpec spec = load_spec(problem);
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
  const std::vector<Configuration> sample = space.sample(space.valid_count(), sample_seed);
  ASSERT_EQ(sample.size(), space.valid_count());
  TemporaryDirectory cache;
  for (const PathCase& path : path_cases()) {
    SCOPED_TRACE(path.name);
    const Configuration* found = nullptr;
    for (const Configuration& configuration : sample) {
      if (path.matches(Lookup{space.bindings(configuration)})) {
        found = &configuration;
        break;
      }
    }
    ASSERT_NE(found, nullptr) << "no configuration of this path in the sample";
    SCOPED_TRACE(to_string(spec.space, *found));
    const Lookup values{space.bindings(*found)};
    // The problem reaches the template through the derived values.
    EXPECT_EQ(values.integer("AT_HEAD_DIM"), problem.head_dim);
    EXPECT_EQ(values.integer("AT_CAUSAL"), problem.causal ? 1 : 0);
    EXPECT_EQ(values.integer("AT_HEADS"), problem.heads);
    EXPECT_EQ(values.integer("AT_KV_GROUP"), problem.heads / problem.kv_heads);
    EXPECT_EQ(values.integer("AT_LAYOUT"), problem.layout);
    CompileRequest request = instantiate(spec, space, *found, "sm_90");
    EXPECT_EQ(request.arch, "sm_90a");  // arch_specific: wgmma and setmaxnreg exist on sm_90a only
    CompileResult result = compile_cubin(request, cache.path(), /*use_cache=*/false);
    ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
    const std::string cubin = read_file(result.cubin_path);
    ASSERT_GT(cubin.size(), 4u);
    EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
    EXPECT_EQ(result.lowered_name, "attention");  // extern "C": no mangling
  }
}

// Without wgmma (sm_80) only the reference remains: every configuration of the space is a reference one, all six
// of them (REF_WARPS 4 or 8 by REF_ROWS 8, 16 or 32), and one of them compiles for plain sm_80.
TEST_P(AttentionTemplate, Sm80OffersOnlyTheReferenceAndItCompiles) {
  const AttentionProblem& problem = GetParam();
  KernelSpec spec = load_spec(problem);
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_80"));
  ASSERT_EQ(space.valid_count(), 6u);
  std::set<std::pair<std::int64_t, std::int64_t>> shapes;
  for (std::uint64_t index = 0; index < space.valid_count(); ++index) {
    const Lookup values{space.bindings(space.at(index))};
    EXPECT_EQ(values.text("PATH"), "reference") << to_string(spec.space, space.at(index));
    shapes.emplace(values.integer("REF_WARPS"), values.integer("REF_ROWS"));
  }
  EXPECT_EQ(shapes.size(), 6u);
  const Configuration configuration = space.sample(1, sample_seed).front();
  SCOPED_TRACE(to_string(spec.space, configuration));
  TemporaryDirectory cache;
  CompileRequest request = instantiate(spec, space, configuration, "sm_80");
  EXPECT_EQ(request.arch, "sm_80");
  CompileResult result = compile_cubin(request, cache.path(), /*use_cache=*/false);
  ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
  const std::string cubin = read_file(result.cubin_path);
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
}

// Head dimension 256 (issue 33): a narrower space, 64-key tiles and one or two consumers only (128 fp32 output
// accumulators a thread leave no room for more), and the reference with 16-key tiles; each of those compiles, and the
// default configuration is one of them (tune run starts from it, the runtime falls back to it).
TEST(AttentionTemplateHeadDim256, TheNarrowerSpaceCompilesOnSm90) {
  const AttentionProblem problem{"attention_bf16", 256, true, 1000, 32, 8, 1};
  KernelSpec spec = load_spec(problem);
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
  ASSERT_GT(space.valid_count(), 0u);
  EXPECT_TRUE(space.is_valid(space.default_configuration()));
  std::set<std::string> kinds;
  std::vector<Configuration> chosen;
  for (std::uint64_t index = 0; index < space.valid_count(); ++index) {
    const Configuration configuration = space.at(index);
    const Lookup values{space.bindings(configuration)};
    if (!values.wgmma()) {
      if (kinds.insert("reference").second) chosen.push_back(configuration);
      continue;
    }
    EXPECT_EQ(values.integer("AT_KEY_TILE"), 64) << to_string(spec.space, configuration);
    EXPECT_LE(values.integer("AT_CONSUMERS"), 2) << to_string(spec.space, configuration);
    const std::string kind = "wgmma_" + std::to_string(values.integer("AT_CONSUMERS")) +
                             (values.flag("AT_PINGPONG") ? "_ping_pong" : "");
    if (kinds.insert(kind).second) chosen.push_back(configuration);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"reference", "wgmma_1", "wgmma_2", "wgmma_2_ping_pong"}));
  TemporaryDirectory cache;
  for (const Configuration& configuration : chosen) {
    SCOPED_TRACE(to_string(spec.space, configuration));
    CompileResult result = compile_cubin(instantiate(spec, space, configuration, "sm_90"), cache.path(),
                                         /*use_cache=*/false);
    ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
  }
}

// Both element types, both head dimensions, causal and not, ragged sequences (one row, less than a tile, a
// thousand, 4096 + 77), grouped-query ratios 1, 4 and 8, both layouts, keys cached before the queries; each spec
// meets each head dimension, each masking and each layout.
INSTANTIATE_TEST_SUITE_P(Problems, AttentionTemplate,
                         testing::Values(AttentionProblem{"attention_bf16", 128, false, 1000, 16, 16, 0},
                                         AttentionProblem{"attention_bf16", 64, true, 4173, 32, 8, 1},
                                         AttentionProblem{"attention_bf16", 128, true, 63, 32, 4, 1, 1000},
                                         AttentionProblem{"attention_f16", 64, false, 1, 8, 1, 1, 77},
                                         AttentionProblem{"attention_f16", 128, true, 1000, 16, 2, 0},
                                         AttentionProblem{"attention_f16", 64, true, 4173, 8, 1, 0},
                                         AttentionProblem{"attention_bf16", 96, true, 1000, 32, 8, 1},
                                         AttentionProblem{"attention_f16", 96, false, 63, 16, 4, 0, 100}),
                         problem_name);

// Grouped-query heads in thread-block clusters (AT_KV_SHARE): the space offers exactly the cluster sizes of 1, 2, 4
// and 8 that divide the group (HEADS / KV_HEADS) and keeps 1 as the default; every configuration's grid is whole
// clusters along x, one block per (pair, query tile) without AT_PERSISTENT and at most one per SM with it, and a K / V
// box is one block's share of a tile. Each offered size compiles in two kinds the schedule tells apart (one block per
// query tile in "heads" order; persistent in "tiles" order), with a cubin that declares the cluster shape (the
// launch takes it from there) and no ptxas performance warnings (spills, serialised wgmma); without a cluster the
// cubin declares none.
class AttentionKvShare : public testing::TestWithParam<AttentionProblem> {};

// The attribute by which a cubin fixes its cluster shape at compile time (EIATTR_CTA_PER_CLUSTER, a value of three
// 32-bit words): format 4, attribute 0x3d, 12 bytes, then x, y, z.
std::string cluster_attribute(std::uint8_t blocks) {
  const unsigned char bytes[] = {4, 0x3d, 12, 0, blocks, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
  return std::string(reinterpret_cast<const char*>(bytes), sizeof bytes);
}

TEST_P(AttentionKvShare, TheSpaceOffersTheDivisorsOfTheGroupAndEachCompiles) {
  const AttentionProblem& problem = GetParam();
  KernelSpec spec = load_spec(problem);
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
  const std::int64_t group = problem.heads / problem.kv_heads;
  const std::int64_t pairs = 2 * problem.heads;  // BATCH 2
  const std::int64_t sm_count = Lookup{space.bindings(space.default_configuration())}.integer("sm_count");
  EXPECT_EQ(Lookup{space.bindings(space.default_configuration())}.integer("AT_KV_SHARE"), 1);

  std::set<std::int64_t> offered, expected;
  for (const std::int64_t size : {1, 2, 4, 8})
    if (group % size == 0) expected.insert(size);
  // Per offered size, the first configuration of each kind in the space's order.
  std::map<std::pair<std::int64_t, bool>, Configuration> chosen;
  for (std::uint64_t index = 0; index < space.valid_count(); ++index) {
    const Configuration configuration = space.at(index);
    const Lookup values{space.bindings(configuration)};
    if (!values.wgmma()) {
      EXPECT_EQ(values.integer("AT_KV_SHARE"), 1);
      continue;
    }
    SCOPED_TRACE(to_string(spec.space, configuration));
    const std::int64_t share = values.integer("AT_KV_SHARE");
    offered.insert(share);
    const std::int64_t tiles = (problem.sequence + values.integer("AT_BM") - 1) / values.integer("AT_BM");
    EXPECT_EQ(values.integer("GRID_X") % share, 0);
    if (values.flag("AT_PERSISTENT")) {
      EXPECT_EQ(values.integer("GRID_Y"), 1);
      EXPECT_LE(values.integer("GRID_X"), sm_count);
      EXPECT_EQ(values.integer("GRID_X"), std::min(sm_count / share, pairs / share * tiles) * share);
    } else {
      EXPECT_EQ(values.integer("GRID_X") * values.integer("GRID_Y"), pairs * tiles);
      // "heads": a query tile's cluster along x, the sets of heads along y; "tiles": the pairs along x.
      EXPECT_EQ(values.integer("GRID_X"), values.text("AT_ORDER") == "tiles" ? pairs : tiles * share);
    }
    EXPECT_EQ(values.integer("KV_BOX_ROWS") * share, values.integer("AT_KEY_TILE"));
    const bool persistent_tiles = values.flag("AT_PERSISTENT") && values.text("AT_ORDER") == "tiles";
    const bool heads = !values.flag("AT_PERSISTENT") && values.text("AT_ORDER") == "heads";
    if (persistent_tiles || heads) chosen.emplace(std::make_pair(share, persistent_tiles), configuration);
  }
  EXPECT_EQ(offered, expected);
  ASSERT_EQ(chosen.size(), 2 * expected.size());

  TemporaryDirectory cache;
  for (const auto& [kind, configuration] : chosen) {
    SCOPED_TRACE(to_string(spec.space, configuration));
    CompileResult result = compile_cubin(instantiate(spec, space, configuration, "sm_90"), cache.path(),
                                         /*use_cache=*/false);
    ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
    EXPECT_EQ(performance_warnings(result.log), std::vector<std::string>{}) << result.log;
    const std::string cubin = read_file(result.cubin_path);
    const std::int64_t share = kind.first;
    if (share > 1) {
      EXPECT_NE(cubin.find(cluster_attribute(static_cast<std::uint8_t>(share))), std::string::npos);
    } else {
      EXPECT_EQ(cubin.find(cluster_attribute(static_cast<std::uint8_t>(share)).substr(0, 4)), std::string::npos);
    }
  }
}

// Grouped-query ratios 1 (no cluster offered), 4 and 8, at ragged sequences (one row, less than a tile, 4096 + 77,
// keys cached before the queries), both layouts, head dimensions 64 and 128, causal and not, both element types.
INSTANTIATE_TEST_SUITE_P(Problems, AttentionKvShare,
                         testing::Values(AttentionProblem{"attention_bf16", 128, false, 1000, 32, 8, 0},
                                         AttentionProblem{"attention_bf16", 64, true, 4173, 32, 4, 1},
                                         AttentionProblem{"attention_f16", 128, true, 63, 16, 2, 1, 1000},
                                         AttentionProblem{"attention_f16", 64, false, 1, 8, 2, 0, 77},
                                         AttentionProblem{"attention_bf16", 128, true, 4173, 16, 16, 1}),
                         problem_name);

}  // namespace
}  // namespace kernlathe
