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

// ---------------------------------------------------------------- problem defaults are not hashed

const std::string space_without_block =
    "name: tiny\n"
    "parameters:\n"
    "  - {name: A, values: [1, 2]}\n"
    "# the constraints\n"
    "constraints:\n"
    "  - A <= N\n";

const std::string block =
    "problem_defaults:   # where no tuned problem is near\n"
    "  # measured: results/...\n"
    "  - when: N <= 128\n"
    "\n"
    "# a comment at the margin inside the block\n"
    "    values: {A: 2}\n";

TEST(WithoutProblemDefaults, DropsExactlyTheBlockWhereverItStands) {
  EXPECT_EQ(without_problem_defaults(space_without_block), space_without_block);
  EXPECT_EQ(without_problem_defaults(space_without_block + block), space_without_block);
  // Before another key: the comment and blank line just above that key stay with it.
  const std::size_t constraints_comment = space_without_block.find("# the constraints");
  std::string middle = space_without_block;
  middle.insert(constraints_comment, block + "\n");
  EXPECT_EQ(without_problem_defaults(middle), space_without_block.substr(0, constraints_comment) + "\n" +
                                                  space_without_block.substr(constraints_comment));
  // Flow style, quoted, and Windows line ends.
  EXPECT_EQ(without_problem_defaults("problem_defaults: [{when: N > 1,\n    values: {A: 1}}]\nname: x\n"), "name: x\n");
  EXPECT_EQ(without_problem_defaults("\"problem_defaults\" :\r\n  - {when: N > 1, values: {A: 1}}\r\nname: x\r\n"),
            "name: x\r\n");
}

TEST(WithoutProblemDefaults, KeepsWhatIsNotTheTopLevelBlock) {
  const std::string nested = "space:\n  problem_defaults:\n    - {when: N > 1, values: {A: 1}}\n";
  EXPECT_EQ(without_problem_defaults(nested), nested);
  const std::string longer_key = "problem_defaults_old:\n  - 1\nproblem_defaultsx: 2\n";
  EXPECT_EQ(without_problem_defaults(longer_key), longer_key);
  const std::string in_a_value = "name: problem_defaults:\n";
  EXPECT_EQ(without_problem_defaults(in_a_value), in_a_value);
}

TEST(SpecHash, ASpaceHashesTheSameWithAndWithoutItsProblemDefaults) {
  const HashedSpec written = write_hashed_spec("problem_defaults");
  write_file(written.dir / "tiny_space.yaml", space_without_block);
  write_file(written.spec_file, "name: tiny\ntemplate: tiny.cu\nentry: tiny\nspace: tiny_space.yaml\n"
                                "problem: {N: 64, M: 8}\narguments: []\nlaunch: {grid: [1], block: [32]}\n");
  const KernelSpec without = load_kernel_spec(written.spec_file);
  const std::string kernel_hash = spec_hash(without), record_hash = spec_hash(without, "sm_90");
  EXPECT_EQ(kernel_hash, content_hash({spec_test::read_file(written.spec_file), space_without_block,
                                       template_hash(read_template_source(without.template_file))}));

  write_file(written.dir / "tiny_space.yaml", space_without_block + block);
  const KernelSpec with = load_kernel_spec(written.spec_file);
  ASSERT_EQ(with.space.problem_defaults.size(), 1u);
  EXPECT_EQ(spec_hash(with), kernel_hash);
  EXPECT_EQ(spec_hash(with, "sm_90"), record_hash);
  // Another problem default: still the same; another constraint: another kernel.
  write_file(written.dir / "tiny_space.yaml", space_without_block + "problem_defaults:\n  - {when: N > 8, values: {A: 1}}\n");
  EXPECT_EQ(spec_hash(load_kernel_spec(written.spec_file)), kernel_hash);
  write_file(written.dir / "tiny_space.yaml", space_without_block + "  - A >= 1\n" + block);
  EXPECT_NE(spec_hash(load_kernel_spec(written.spec_file)), kernel_hash);
}

}  // namespace
}  // namespace kernlathe
