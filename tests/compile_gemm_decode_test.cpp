// The decode GEMM (templates/gemm_decode.cu, kernels/gemm_decode_bf16.yaml): its space admits the problems it
// computes and no others, and every configuration compiles with NVRTC at ragged shapes (rows, columns and K that
// no block divides) on sm_80 and sm_90.
#include <gtest/gtest.h>

#include <string>

#include "compile_test_support.h"
#include "tuner/common/error.h"
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

const std::filesystem::path kSpec = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "kernels/gemm_decode_bf16.yaml";

struct Shape {
  std::int64_t m, n, k, b_layout = 1;
};

KernelSpec decode_spec(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t b_layout = 1) {
  return load_kernel_spec(kSpec, {{"M", m}, {"N", n}, {"K", k}, {"B_LAYOUT", b_layout}});
}

TEST(GemmDecodeSpace, RowGroupsLaunchGeometryAndSharedBytesFollowTheProblem) {
  KernelSpec spec = decode_spec(33, 4000, 4104);
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
  ASSERT_GT(space.valid_count(), 0u);
  const Lookup lookup{space.bindings(space.default_configuration())};
  EXPECT_EQ(lookup.integer("DC_ROW_GROUPS"), 3);                 // 33 rows: three 16-row groups
  EXPECT_EQ(lookup.integer("THREADS"), 4 * 32);
  EXPECT_EQ(lookup.integer("GRID_X"), 250);                      // 4000 columns, 16 per block
  EXPECT_EQ(lookup.integer("SHARED_BYTES"), 4 * 3 * 2 * 4 * 32 * 4);
}

TEST(GemmDecodeSpace, ProblemsOutsideThePathHaveNoValidConfiguration) {
  // More than 64 rows, B stored K x N, K not a multiple of 8: the template cannot compute them, so none is valid.
  for (const Shape shape : {Shape{65, 4096, 4096, 1}, Shape{16, 4096, 4096, 0}, Shape{16, 4096, 4100, 1}}) {
    KernelSpec spec = decode_spec(shape.m, shape.n, shape.k, shape.b_layout);
    EXPECT_THROW(SpaceEnumerator(spec.space, constants_for(spec, "sm_90")), InputError)
        << "M=" << shape.m << " K=" << shape.k << " B_LAYOUT=" << shape.b_layout;
  }
}

TEST(GemmDecodeSpace, RegisterEstimateKeepsTheWidestConfigurationsOutAtManyRows) {
  // At 64 rows (four row groups) eight chunks of 32 columns would hold 448 registers of loads and sums per lane.
  KernelSpec spec = decode_spec(64, 4096, 4096);
  SpaceEnumerator space(spec.space, constants_for(spec, "sm_90"));
  for (std::uint64_t index = 0; index < space.valid_count(); ++index) {
    const Lookup lookup{space.bindings(space.at(index))};
    EXPECT_LE(lookup.integer("DC_REGISTERS") + 40, 255);
  }
}

// Every configuration at ragged shapes, on both architectures, compiles to an ELF cubin with its C entry name.
TEST(GemmDecodeCompile, EveryConfigurationCompilesAtRaggedShapes) {
  TemporaryDirectory cache;
  for (const std::string arch : {"sm_80", "sm_90"}) {
    for (const Shape shape : {Shape{1, 4000, 4104}, Shape{17, 6144, 4096}, Shape{64, 1000, 14336}}) {
      KernelSpec spec = decode_spec(shape.m, shape.n, shape.k);
      SpaceEnumerator space(spec.space, constants_for(spec, arch));
      // Every configuration at M=1 on sm_90, a spread of the others elsewhere (NVRTC takes ~0.2 s each).
      const std::uint64_t step = shape.m == 1 && arch == "sm_90" ? 1 : 7;
      for (std::uint64_t index = 0; index < space.valid_count(); index += step) {
        const Configuration configuration = space.at(index);
        SCOPED_TRACE(arch + " M=" + std::to_string(shape.m) + " " + to_string(spec.space, configuration));
        CompileResult result = compile_cubin(instantiate(spec, space, configuration, arch), cache.path(),
                                             /*use_cache=*/false);
        ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
        EXPECT_EQ(read_file(result.cubin_path).substr(0, 4), std::string("\x7f" "ELF"));
        EXPECT_EQ(result.lowered_name, "gemm_decode");
      }
    }
  }
}

}  // namespace
}  // namespace kernlathe
