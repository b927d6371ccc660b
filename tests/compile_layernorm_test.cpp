// The layernorm template compiles with NVRTC in each of its code paths (issue #4): the persistent variant with
// register prefetch, with cp.async stages, with TMA bulk copies, with single-warp rows (its own barrier for the
// run-time row groups), two-pass statistics, and non-persistent rows split over clusters of up to 8 blocks; for
// fp32 and bf16 on sm_90, and what sm_80 allows; with the residual add (add_layernorm, issue 19) on every path as well,
// and in the RMSNorm mode (rmsnorm, rmsnorm_bf16, add_rmsnorm_bf16, issue 30). The row specs (these and softmax)
// have a valid default configuration at every ROWS and COLS, and rows that are not a multiple of ROW_THREADS * VEC
// (4000, 14336) keep the cached paths, whose last items lie past the row.
// Each case is the first configuration of a deterministic sample of the shipped space that matches it, so the test
// also fails if the space stops offering a path.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compile_test_support.h"
#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

using compile_test::constants_for;
using compile_test::Lookup;

using compile_test::read_file;
using compile_test::TemporaryDirectory;

KernelSpec load_spec(const std::string& name, std::int64_t rows, std::int64_t cols) {
  return load_kernel_spec(std::filesystem::path(KERNLATHE_SOURCE_DIR) / "kernels" / (name + ".yaml"),
                          {{"ROWS", rows}, {"COLS", cols}});
}

struct PathCase {
  std::string name;
  std::function<bool(const Lookup&)> matches;
  bool sm_90_only;  // clusters and bulk copies need sm_90
};

std::vector<PathCase> path_cases() {
  return {
      {"persistent_register_prefetch",
       [](const Lookup& c) { return c.flag("PERSISTENT") && c.integer("STAGES") == 0 && c.integer("CLUSTER") == 1; },
       false},
      {"persistent_cp_async_stages_cluster_2",
       [](const Lookup& c) {
         return c.flag("PERSISTENT") && c.integer("STAGES") >= 2 && c.text("COPY") == "thread" &&
                c.integer("CLUSTER") == 2;
       },
       true},
      {"persistent_cp_async_stages",
       [](const Lookup& c) {
         return c.flag("PERSISTENT") && c.integer("STAGES") >= 2 && c.text("COPY") == "thread" &&
                c.integer("CLUSTER") == 1;
       },
       false},
      {"persistent_bulk_copy",
       [](const Lookup& c) { return c.flag("PERSISTENT") && c.text("COPY") == "bulk"; }, true},
      {"persistent_single_warp_rows",
       [](const Lookup& c) {
         return c.flag("PERSISTENT") && c.integer("ROW_THREADS") == 32 && c.integer("ROWS_PER_BLOCK") > 1 &&
                c.integer("CLUSTER") == 1;
       },
       false},
      {"persistent_two_pass",
       [](const Lookup& c) { return c.flag("PERSISTENT") && c.text("STATS") == "two_pass"; }, false},
      {"rows_over_a_cluster_of_8",
       [](const Lookup& c) { return !c.flag("PERSISTENT") && c.integer("CLUSTER") == 8; }, true},
      {"row_groups_streamed",
       [](const Lookup& c) {
         return !c.flag("PERSISTENT") && !c.flag("CACHE_ROW") && !c.flag("SHARED_ROW") && c.text("STATS") == "two_pass";
       },
       false},
      {"row_groups_in_shared_memory", [](const Lookup& c) { return c.flag("SHARED_ROW"); }, false},
      {"row_groups_in_registers", [](const Lookup& c) { return !c.flag("PERSISTENT") && c.flag("CACHE_ROW"); }, false},
      {"persistent_streaming_hints", [](const Lookup& c) { return c.flag("PERSISTENT") && c.flag("STREAM"); }, false},
  };
}

// One problem's spec, space and sample. Rows of 8192 leave room for shared-memory stages of whole rows; rows of
// 1024 are short enough for single-warp persistent rows (at most 64 cached elements per thread).
struct ProblemSample {
  KernelSpec spec;
  SpaceEnumerator space;
  std::vector<Configuration> sample;
  ProblemSample(const std::string& name, std::int64_t rows, std::int64_t cols, const std::string& arch)
      : spec(load_spec(name, rows, cols)), space(spec.space, constants_for(spec, arch)), sample(space.sample(3000, 11)) {}
};

void expect_every_path_compiles(const std::string& spec_name, const std::string& arch) {
  std::vector<std::unique_ptr<ProblemSample>> problems;
  problems.push_back(std::make_unique<ProblemSample>(spec_name, 8192, 8192, arch));
  problems.push_back(std::make_unique<ProblemSample>(spec_name, 256, 1024, arch));
  TemporaryDirectory cache;
  for (const PathCase& path : path_cases()) {
    if (path.sm_90_only && arch != "sm_90") continue;
    SCOPED_TRACE(spec_name + " " + arch + " " + path.name);
    const ProblemSample* problem = nullptr;
    const Configuration* found = nullptr;
    for (const auto& candidate : problems) {
      for (const Configuration& configuration : candidate->sample) {
        if (path.matches(Lookup{candidate->space.bindings(configuration)})) {
          problem = candidate.get();
          found = &configuration;
          break;
        }
      }
      if (found) break;
    }
    ASSERT_NE(found, nullptr) << "no configuration of this path in samples of 8192 x 8192 and 256 x 1024";
    SCOPED_TRACE(to_string(problem->spec.space, *found));
    CompileResult result =
        compile_cubin(instantiate(problem->spec, problem->space, *found, arch), cache.path(), /*use_cache=*/false);
    ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
    const std::string cubin = read_file(result.cubin_path);
    ASSERT_GT(cubin.size(), 4u);
    EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
  }
}

TEST(LayernormTemplate, EveryPathCompilesForFp32OnSm90) { expect_every_path_compiles("layernorm", "sm_90"); }
TEST(LayernormTemplate, EveryPathCompilesForBf16OnSm90) { expect_every_path_compiles("layernorm_bf16", "sm_90"); }
TEST(LayernormTemplate, EveryPathSm80AllowsCompilesForFp32) { expect_every_path_compiles("layernorm", "sm_80"); }
// The residual add (issue 19) runs through every path too: two matrices read, the sum written.
TEST(LayernormTemplate, EveryPathCompilesWithTheResidualAddForFp32OnSm90) {
  expect_every_path_compiles("add_layernorm", "sm_90");
}
TEST(LayernormTemplate, EveryPathCompilesWithTheResidualAddForBf16OnSm90) {
  expect_every_path_compiles("add_layernorm_bf16", "sm_90");
}
// RMSNorm (-DLAYERNORM_RMS): no beta argument, the mean left out; STATS is irrelevant, held at two_pass, so the
// two-pass cases pick RMSNorm configurations too (which compute the one statistic).
TEST(LayernormTemplate, EveryPathCompilesForRmsnormBf16OnSm90) { expect_every_path_compiles("rmsnorm_bf16", "sm_90"); }
TEST(LayernormTemplate, EveryPathSm80AllowsCompilesForRmsnorm) { expect_every_path_compiles("rmsnorm", "sm_80"); }
TEST(LayernormTemplate, EveryPathCompilesForAddRmsnormBf16OnSm90) {
  expect_every_path_compiles("add_rmsnorm_bf16", "sm_90");
}

// Application shapes (issue 30): a valid default at every ROWS and COLS, because the runtime falls back to the
// default where nothing was tuned; COLS 3 and 17 allow only single-element vectors, 4000 and 14336 are no power
// of two, and ROWS 1 and 1000 divide no row group.
TEST(RowSpecs, DefaultConfigurationIsValidAtEveryShape) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 1}, {1, 3}, {1000, 17}, {1000, 4000}, {7, 4096}, {16384, 14336}, {4096, 4000}};
  for (const std::string name : {"softmax", "softmax_bf16", "layernorm", "layernorm_bf16", "add_layernorm",
                                 "add_layernorm_bf16", "rmsnorm", "rmsnorm_bf16", "add_rmsnorm_bf16"}) {
    for (const auto& [rows, cols] : shapes) {
      for (const std::string arch : {"sm_80", "sm_90"}) {
        SCOPED_TRACE(name + " " + std::to_string(rows) + " x " + std::to_string(cols) + " " + arch);
        KernelSpec spec = load_spec(name, rows, cols);
        SpaceEnumerator space(spec.space, constants_for(spec, arch));
        EXPECT_TRUE(space.is_valid(space.default_configuration()));
      }
    }
  }
  for (const std::string name : {"reduce_sum", "reduce_sum_bf16"}) {
    for (const std::int64_t n : {1, 3, 17, 4000, 1000 * 14336}) {
      SCOPED_TRACE(name + " N=" + std::to_string(n));
      KernelSpec spec = load_kernel_spec(std::filesystem::path(KERNLATHE_SOURCE_DIR) / "kernels" / (name + ".yaml"),
                                         {{"N", n}});
      SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
      EXPECT_TRUE(space.is_valid(space.default_configuration()));
    }
  }
}

// Whether a cached configuration's slots run past its row (or slice): ROW_ITEMS rounded up.
bool cached_and_ragged(const Lookup& c, std::int64_t width) {
  return c.flag("CACHE_ROW") && c.integer("ROW_ITEMS") * c.integer("ROW_THREADS") * c.integer("VEC") > width;
}

// Rows of 4000 and 14336 elements (Llama-3's MLP width) are cached in registers, a thread's last item past the
// row; before issue 30 the space required a multiple of ROW_THREADS * VEC, which left 4000 only the streamed paths.
// The ragged persistent paths (register prefetch, cp.async stages, bulk copies) and the row groups compile.
TEST(RowSpecs, RaggedCachedRowsAreOfferedAndCompile) {
  TemporaryDirectory cache;
  const std::vector<std::pair<std::string, std::function<bool(const Lookup&)>>> layernorm_paths = {
      {"persistent_register_prefetch",
       [](const Lookup& c) { return c.flag("PERSISTENT") && c.integer("STAGES") == 0; }},
      {"persistent_cp_async_stages",
       [](const Lookup& c) { return c.flag("PERSISTENT") && c.integer("STAGES") >= 2 && c.text("COPY") == "thread"; }},
      {"persistent_bulk_copy", [](const Lookup& c) { return c.flag("PERSISTENT") && c.text("COPY") == "bulk"; }},
      {"row_groups_in_registers", [](const Lookup& c) { return !c.flag("PERSISTENT"); }},
  };
  for (const std::int64_t cols : {4000, 14336}) {
    for (const std::string name : {"rmsnorm_bf16", "add_rmsnorm_bf16", "layernorm", "softmax", "softmax_bf16"}) {
      const bool softmax = name.rfind("softmax", 0) == 0;
      ProblemSample problem(name, 1000, cols, "sm_90");
      const std::vector<std::pair<std::string, std::function<bool(const Lookup&)>>> paths =
          softmax ? decltype(layernorm_paths){{"cached_row", [](const Lookup&) { return true; }}} : layernorm_paths;
      for (const auto& [path, matches] : paths) {
        SCOPED_TRACE(name + " COLS=" + std::to_string(cols) + " " + path);
        const Configuration* found = nullptr;
        for (const Configuration& configuration : problem.sample) {
          const Lookup values{problem.space.bindings(configuration)};
          if (cached_and_ragged(values, softmax ? cols : values.integer("SLICE")) && matches(values)) {
            found = &configuration;
            break;
          }
        }
        ASSERT_NE(found, nullptr) << "no ragged cached configuration of this path in a sample of the space";
        SCOPED_TRACE(to_string(problem.spec.space, *found));
        CompileResult result =
            compile_cubin(instantiate(problem.spec, problem.space, *found, "sm_90"), cache.path(), /*use_cache=*/false);
        ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
      }
    }
  }
}

// Staged slices and register prefetch hold a row of each matrix read: with the residual, the space sizes the stages
// twice as large, and rejects register prefetch that no longer fits. Rows of 12288 floats: 256 threads hold 48
// floats each, and a register-prefetching thread with gamma and beta in registers 48 x (1 + 1 + 2) = 192 (the
// limit) without a residual, 48 x (1 + 2 + 2) = 240 with it.
TEST(LayernormTemplate, ResidualSpecsStageAndPrefetchTwoMatrices) {
  KernelSpec plain = load_spec("layernorm", 8192, 12288);
  KernelSpec fused = load_spec("add_layernorm", 8192, 12288);
  SpaceEnumerator plain_space(plain.space, constants_for(plain, "sm_90"));
  SpaceEnumerator fused_space(fused.space, constants_for(fused, "sm_90"));
  int staged = 0, rejected_prefetch = 0;
  for (const Configuration& configuration : plain_space.sample(3000, 3)) {
    const Lookup plain_values{plain_space.bindings(configuration)};
    if (!plain_values.flag("PERSISTENT")) continue;
    const bool at_the_limit = plain_values.integer("SLICE") / plain_values.integer("ROW_THREADS") == 48 &&
                              plain_values.text("AFFINE") == "registers";
    if (plain_values.integer("STAGES") == 0 && at_the_limit) {
      EXPECT_FALSE(fused_space.is_valid(configuration)) << to_string(plain.space, configuration);
      ++rejected_prefetch;
    } else if (plain_values.integer("STAGES") >= 2 && fused_space.is_valid(configuration)) {
      const Lookup fused_values{fused_space.bindings(configuration)};
      EXPECT_EQ(fused_values.integer("STAGE_BYTES"), 2 * plain_values.integer("STAGE_BYTES"));
      ++staged;
    }
  }
  EXPECT_GT(staged, 10);
  EXPECT_GT(rejected_prefetch, 0);
}

// The persistent variant hands out row groups from this argument and leaves it zero after every launch; the spec
// must create it zeroed and restore it like any input.
TEST(LayernormTemplate, SpecsDeclareZeroedRowCounters) {
  for (const std::string name : {"layernorm", "layernorm_bf16", "add_layernorm", "add_layernorm_bf16", "rmsnorm",
                                 "rmsnorm_bf16", "add_rmsnorm_bf16"}) {
    SCOPED_TRACE(name);
    KernelSpec spec = load_spec(name, 8192, 8192);
    ASSERT_FALSE(spec.arguments.empty());
    const auto& last = spec.arguments.back();
    EXPECT_EQ(last.name, "row_counters");
    EXPECT_EQ(last.dtype, Dtype::i32);
    EXPECT_EQ(last.role, Role::in);
    EXPECT_TRUE(last.scratch);  // the runtime library allocates it zeroed, once per kernel
    EXPECT_EQ(last.init.kind, Initialisation::Kind::constant);
    EXPECT_EQ(last.init.value, 0.0);
  }
}

}  // namespace
}  // namespace kernlathe
