#include "tuner/spec/spec_hash.h"

#include <gtest/gtest.h>

#include "spec_test_support.h"
#include "tuner/common/hash.h"
#include "tuner/nvrtc/compile_request.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using spec_test::write_file;

struct HashedSpec {
  fs::path dir;
  fs::path spec_file;
};

HashedSpec write_hashed_spec(const std::string& name) {
  HashedSpec written;
  written.dir = fs::temp_directory_path() / ("spec_hash_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(written.dir);
  write_file(written.dir / "tiny.cuh", "#define TINY 1\n");
  write_file(written.dir / "tiny.cu", "#include \"tiny.cuh\"\nextern \"C\" __global__ void tiny() {}\n");
  written.spec_file = written.dir / "tiny.yaml";
  write_file(written.spec_file, "name: tiny\ntemplate: tiny.cu\nentry: tiny\n"
                                "space:\n  parameters:\n    - {name: A, values: [1, 2]}\n"
                                "problem: {N: 64, M: 8}\narguments: []\nlaunch: {grid: [1], block: [32]}\n");
  return written;
}

TEST(ProblemText, NamesEverySymbolInDeclaredOrder) {
  const HashedSpec written = write_hashed_spec("problem");
  KernelSpec spec = load_kernel_spec(written.spec_file, {{"N", 128}});
  EXPECT_EQ(problem_text(spec), "N=128,M=8");
}

TEST(SpecHash, KernelHashIsSpecSpaceAndTemplateWithIncludes) {
  const HashedSpec written = write_hashed_spec("kernel");
  KernelSpec spec = load_kernel_spec(written.spec_file);
  const std::string spec_text = spec_test::read_file(written.spec_file);
  const std::string expected = content_hash({spec_text, "", template_hash(read_template_source(spec.template_file))});
  EXPECT_EQ(spec_hash(spec), expected);
  EXPECT_EQ(spec_hash(spec, "sm_90"),
            content_hash({spec_text, "", template_hash(read_template_source(spec.template_file)), "N=64,M=8", "sm_90"}));
}

TEST(SpecHash, RecordHashNarrowsToProblemAndArch) {
  const HashedSpec written = write_hashed_spec("narrow");
  KernelSpec small = load_kernel_spec(written.spec_file);
  KernelSpec large = load_kernel_spec(written.spec_file, {{"N", 4096}});
  EXPECT_EQ(spec_hash(small), spec_hash(large));  // one kernel, whatever the problem
  EXPECT_NE(spec_hash(small, "sm_90"), spec_hash(large, "sm_90"));
  EXPECT_NE(spec_hash(small, "sm_90"), spec_hash(small, "sm_80"));
  EXPECT_NE(spec_hash(small, "sm_90"), spec_hash(small));
}

TEST(SpecHash, AnEditOfTheSpecChangesItInTheSameProcess) {
  const HashedSpec written = write_hashed_spec("edit");
  KernelSpec spec = load_kernel_spec(written.spec_file);
  const std::string before = spec_hash(spec, "sm_90");
  std::ofstream(written.spec_file, std::ios::app) << "# edited\n";
  EXPECT_NE(spec_hash(spec, "sm_90"), before);
}

}  // namespace
}  // namespace kernlathe
