// The kernel spec as a whole: the saxpy example read field by field, problem overrides, optional sections, missing
// files and keys, and the verification reference.
#include "tuner/spec/kernel_spec_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "spec_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace spec_test;

class KernelSpecReaderTest : public spec_test::SpecFolderTest {};
class SaxpyKernelSpecReaderTest : public spec_test::SaxpyCopyTest {};

TEST_F(SaxpyKernelSpecReaderTest, SpecHasTheDeclaredArgumentsGeometryAndVerification) {
  KernelSpec spec = load_kernel_spec(saxpy());
  EXPECT_EQ(spec.name, "saxpy");
  EXPECT_EQ(spec.entry_point, "saxpy");
  EXPECT_EQ(spec.template_file, (directory_ / "templates/saxpy.cu").lexically_normal());
  ASSERT_EQ(spec.template_arguments.size(), 4u);
  EXPECT_EQ(spec.template_arguments[3].text(), "GRID_STRIDE");
  EXPECT_FALSE(spec.needs_arch_specific);
  EXPECT_EQ(spec.problem, (std::vector<std::pair<std::string, std::int64_t>>{{"N", 67108864}}));

  ASSERT_EQ(spec.arguments.size(), 4u);
  const Argument& n = spec.arguments[0];
  EXPECT_EQ(n.name, "n");
  EXPECT_FALSE(n.is_buffer);
  EXPECT_EQ(n.dtype, Dtype::i64);
  EXPECT_EQ(n.value.text(), "N");
  EXPECT_EQ(spec.arguments[1].value.text(), "2.5");
  const Argument& x = spec.arguments[2];
  EXPECT_TRUE(x.is_buffer);
  EXPECT_EQ(x.dtype, Dtype::f32);
  EXPECT_EQ(x.count.text(), "N");
  EXPECT_EQ(x.role, Role::in);
  EXPECT_EQ(x.init.kind, Initialisation::Kind::random);
  EXPECT_EQ(x.init.seed, 1u);
  EXPECT_EQ(x.init.low, -1.0);
  EXPECT_EQ(x.init.high, 1.0);
  EXPECT_EQ(spec.arguments[3].role, Role::inout);
  EXPECT_EQ(spec.arguments[3].init.seed, 2u);

  EXPECT_EQ(spec.launch.block[0].text(), "BLOCK");
  EXPECT_EQ(spec.launch.grid[0].text(),
            "sm_count * BLOCKS_PER_SM if GRID_STRIDE else ceil_div(N, ELEMENTS_PER_BLOCK)");
  // The quoted grid expression starts one column after its opening quote.
  EXPECT_EQ(spec.launch.grid[0].where().line, 16);
  EXPECT_EQ(spec.launch.grid[0].where().column, 11);
  EXPECT_EQ(spec.launch.dynamic_shared_bytes.text(), "0");
  EXPECT_EQ(spec.compile_options, std::vector<std::string>{"-std=c++17"});

  EXPECT_TRUE(spec.verification.enabled);
  EXPECT_EQ(spec.verification.reference.at("BLOCK"), Value(std::int64_t{256}));
  EXPECT_EQ(spec.verification.reference.at("GRID_STRIDE"), Value(false));
  EXPECT_EQ(spec.verification.tolerance_for(Dtype::f32).relative, 1.0e-6);
  EXPECT_EQ(spec.verification.tolerance_for(Dtype::f32).absolute, 1.0e-6);
  EXPECT_EQ(spec.verification.tolerance_for(Dtype::f64).relative, 1e-12);  // not overridden: the default
  EXPECT_EQ(spec.metrics.flops.text(), "2 * N");
  EXPECT_EQ(spec.metrics.bytes.text(), "12 * N");
  EXPECT_TRUE(spec.loader.settings.empty());
}

TEST_F(SaxpyKernelSpecReaderTest, ExpressionsEvaluate) {
  KernelSpec spec = load_kernel_spec(saxpy());
  std::map<std::string, Value> env = {{"sm_count", std::int64_t{132}}, {"BLOCKS_PER_SM", std::int64_t{4}},
                                      {"GRID_STRIDE", true},           {"N", std::int64_t{1000}},
                                      {"ELEMENTS_PER_BLOCK", std::int64_t{256}}};
  EXPECT_EQ(spec.launch.grid[0].evaluate(env), Value(std::int64_t{528}));
  env["GRID_STRIDE"] = false;
  EXPECT_EQ(spec.launch.grid[0].evaluate(env), Value(std::int64_t{4}));
  EXPECT_EQ(spec.launch.grid[1].evaluate(std::map<std::string, Value>{}), Value(std::int64_t{1}));
  EXPECT_EQ(spec.launch.dynamic_shared_bytes.evaluate(std::map<std::string, Value>{}), Value(std::int64_t{0}));
}

TEST_F(SaxpyKernelSpecReaderTest, ProblemOverrideReplacesTheDefault) {
  KernelSpec spec = load_kernel_spec(saxpy(), {{"N", 1024}});
  EXPECT_EQ(spec.problem, (std::vector<std::pair<std::string, std::int64_t>>{{"N", 1024}}));
}

TEST_F(SaxpyKernelSpecReaderTest, OverrideOfAnUnknownSymbolNamesTheKnownOnes) {
  std::string message = input_error_of([&] { load_kernel_spec(saxpy(), {{"M", 1024}}); });
  EXPECT_NE(message.find("--problem M=1024"), std::string::npos) << message;
  EXPECT_NE(message.find("no problem symbol 'M'"), std::string::npos) << message;
  EXPECT_NE(message.find("its symbols are N"), std::string::npos) << message;
}

TEST_F(KernelSpecReaderTest, OptionalSectionsTakeDefaults) {
  KernelSpec spec = parse_spec(simple_space);
  EXPECT_TRUE(spec.verification.enabled);
  EXPECT_EQ(spec.verification.tolerance_for(Dtype::f32).relative, 1e-5);
  EXPECT_TRUE(spec.metrics.flops.empty());
  EXPECT_TRUE(spec.template_arguments.empty());
  EXPECT_EQ(spec.space.name, "test");  // an inline space without a name takes the spec's
  EXPECT_TRUE(spec.space.file.empty());
  EXPECT_EQ(spec.space.parameters[0].default_value, Value(std::int64_t{64}));  // the first value
  EXPECT_EQ(spec.arguments[0].init.seed, 1u);
  EXPECT_EQ(spec.arguments[0].role, Role::in);
}

TEST_F(KernelSpecReaderTest, InitialisationsAndLoaderSettings) {
  KernelSpec spec = parse_kernel_spec(
      "name: t\ntemplate: kernel.cu\nentry: k\nspace: {parameters: [{name: B, values: [1]}]}\n"
      "arguments:\n"
      "  - {name: a, type: f64, count: 8, init: {constant: 0.5}, role: out}\n"
      "  - {name: b, type: i32, count: 8, init: {sequence: {start: 3, step: 2}}}\n"
      "launch: {grid: [1, 2, 3], block: [B]}\n"
      "arch_specific: true\n"
      "verify: {enabled: false, tolerance: {f16: {absolute: 0.5}}}\n"
      "loader: {chunk: 4096, mode: pinned}\n",
      spec_file());
  EXPECT_EQ(spec.arguments[0].init.kind, Initialisation::Kind::constant);
  EXPECT_EQ(spec.arguments[0].init.value, 0.5);
  EXPECT_EQ(spec.arguments[0].role, Role::out);
  EXPECT_EQ(spec.arguments[1].init.kind, Initialisation::Kind::sequence);
  EXPECT_EQ(spec.arguments[1].init.start, 3.0);
  EXPECT_EQ(spec.arguments[1].init.step, 2.0);
  EXPECT_EQ(spec.launch.grid[2].text(), "3");
  EXPECT_TRUE(spec.needs_arch_specific);
  EXPECT_FALSE(spec.verification.enabled);
  EXPECT_EQ(spec.verification.tolerance_for(Dtype::f16).absolute, 0.5);
  EXPECT_EQ(spec.verification.tolerance_for(Dtype::f16).relative, 1e-2);  // the unset bound keeps its default
  EXPECT_EQ(spec.loader.settings.at("chunk"), "4096");
  EXPECT_EQ(spec.loader.settings.at("mode"), "pinned");
  EXPECT_TRUE(spec.problem.empty());
}

TEST_F(KernelSpecReaderTest, MissingRequiredKey) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nspace: {}\narguments: []\nlaunch: {grid: [1], block: [1]}\n",
                      spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:1:1: the kernel spec has no 'entry': it is required"), std::string::npos)
      << message;
}

TEST_F(KernelSpecReaderTest, MissingTemplateNamesTheResolvedPath) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: ../elsewhere/missing.cu\nentry: k\n", directory_ / "sub/spec.yaml");
  });
  std::string resolved = (directory_ / "elsewhere/missing.cu").string();
  EXPECT_NE(message.find("sub/spec.yaml:2:11: template file '" + resolved + "' does not exist"), std::string::npos)
      << message;
}

TEST_F(KernelSpecReaderTest, MissingSpaceFileNamesTheResolvedPath) {
  std::string message = input_error_of([&] {
    parse_kernel_spec(
        "name: t\ntemplate: kernel.cu\nentry: k\nspace: spaces/nope.yaml\narguments: []\n"
        "launch: {grid: [1], block: [1]}\n",
        spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:4:8: space file '" + (directory_ / "spaces/nope.yaml").string() +
                         "' does not exist"),
            std::string::npos)
      << message;
}

TEST_F(KernelSpecReaderTest, TooManyLaunchDimensions) {
  std::string message = input_error_of([&] { parse_spec(simple_space, "", "launch: {grid: [1, 1, 1, 1], block: [1]}\n"); });
  EXPECT_NE(message.find(":7:16: launch.grid has 4 entries; give 1 to 3"), std::string::npos) << message;
}

TEST_F(KernelSpecReaderTest, ReferenceNamesAnUnknownParameter) {
  std::string message = input_error_of([&] { parse_spec(simple_space, "verify: {reference: {BLOK: 64}}\n"); });
  EXPECT_NE(message.find("spec.yaml:8:22: verify.reference names 'BLOK', which is not a parameter of the space "
                         "(did you mean 'BLOCK'?)"),
            std::string::npos)
      << message;
}

TEST_F(KernelSpecReaderTest, MetricsMathNamesTheArithmetic) {
  EXPECT_EQ(parse_spec(simple_space, "metrics: {flops: 2 * N, bytes: 4 * N, math: bf16}\n").metrics.math, "bf16");
  EXPECT_EQ(parse_spec(simple_space, "metrics: {flops: 2 * N, bytes: 4 * N}\n").metrics.math, "");
  std::string message = input_error_of([&] { parse_spec(simple_space, "metrics: {flops: 2 * N, math: fp32}\n"); });
  EXPECT_NE(message.find("metrics.math"), std::string::npos) << message;
  EXPECT_NE(message.find("fp32"), std::string::npos) << message;
}

TEST_F(KernelSpecReaderTest, ReferenceValueNotAmongTheValues) {
  std::string message = input_error_of([&] { parse_spec(simple_space, "verify: {reference: {BLOCK: 96}}\n"); });
  EXPECT_NE(message.find("spec.yaml:8:29: verify.reference value of 'BLOCK' is 96"), std::string::npos) << message;
}

TEST_F(KernelSpecReaderTest, ReferenceListReadsEveryMapping) {
  const KernelSpec spec = parse_spec(simple_space, "verify: {reference: [{BLOCK: 64}, {}]}\n");
  EXPECT_EQ(spec.verification.reference.at("BLOCK"), Value(std::int64_t{64}));
  ASSERT_EQ(spec.verification.reference_alternatives.size(), 1u);
  EXPECT_TRUE(spec.verification.reference_alternatives[0].empty());  // {}: the run's default
  std::string empty = input_error_of([&] { parse_spec(simple_space, "verify: {reference: []}\n"); });
  EXPECT_NE(empty.find("verify.reference is an empty list; name one configuration at least"), std::string::npos)
      << empty;
  std::string bad = input_error_of([&] { parse_spec(simple_space, "verify: {reference: [{BLOCK: 64}, {BLOCK: 96}]}\n"); });
  EXPECT_NE(bad.find("verify.reference value of 'BLOCK' is 96"), std::string::npos) << bad;
}

TEST_F(KernelSpecReaderTest, ProblemDefaultMustBeAnInteger) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nproblem: {N: 1.5}\n", spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:4:14: problem symbol 'N' must be an integer, found '1.5'"), std::string::npos)
      << message;
}


// ---------------------------------------------------------------- what a spec may ask of the tool

KernelSpec parse_with(const fs::path& file, const std::string& head, const std::string& tail = "") {
  return parse_kernel_spec(head +
                               "space: {parameters: [{name: B, values: [64]}]}\n"
                               "arguments: []\n"
                               "launch: {grid: [1], block: [B]}\n" +
                               tail,
                           file);
}

TEST_F(KernelSpecReaderTest, KernelNameMustBeOnePathComponent) {
  std::string climbing = input_error_of([&] { parse_with(spec_file(), "name: ../../x\ntemplate: kernel.cu\nentry: k\n"); });
  EXPECT_EQ(climbing.rfind(spec_file().string() + ":1:7: kernel name '../../x' contains '/'", 0), 0u) << climbing;
  std::string absolute = input_error_of([&] { parse_with(spec_file(), "name: /tmp/x\ntemplate: kernel.cu\nentry: k\n"); });
  EXPECT_EQ(absolute.rfind(spec_file().string() + ":1:7: kernel name '/tmp/x' contains '/'", 0), 0u) << absolute;
  std::string hidden = input_error_of([&] { parse_with(spec_file(), "name: .x\ntemplate: kernel.cu\nentry: k\n"); });
  EXPECT_EQ(hidden.rfind(spec_file().string() + ":1:7: kernel name '.x' starts with a dot", 0), 0u) << hidden;
}

TEST_F(KernelSpecReaderTest, InlineSpaceNameMustBeOnePathComponent) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\n"
                      "space: {name: ../s, parameters: [{name: B, values: [64]}]}\n"
                      "arguments: []\nlaunch: {grid: [1], block: [B]}\n",
                      spec_file());
  });
  EXPECT_EQ(message.rfind(spec_file().string() + ":4:15: space name '../s' contains '/'", 0), 0u) << message;
}

TEST_F(KernelSpecReaderTest, EntryMustAppearInTheTemplate) {
  std::string message = input_error_of([&] { parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: kk\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":3:8: entry 'kk' does not appear in the template " +
                              (directory_ / "kernel.cu").string() + " as an identifier",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("kernels found: k"), std::string::npos) << message;
}

TEST_F(KernelSpecReaderTest, EntryMustAppearAsAWholeIdentifier) {
  write_file(directory_ / "kernel.cu", "template <int kB> __global__ void scale_rows(float* x) {}\n");
  std::string message = input_error_of([&] { parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: scale\n"); });
  EXPECT_NE(message.find(":3:8: entry 'scale' does not appear in the template"), std::string::npos) << message;
  EXPECT_NE(message.find("kernels found: scale_rows"), std::string::npos) << message;
  std::string close = input_error_of([&] { parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: scale_row\n"); });
  EXPECT_NE(close.find("(did you mean 'scale_rows'?)"), std::string::npos) << close;
  EXPECT_NO_THROW(parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: scale_rows\n"));
  EXPECT_NO_THROW(parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: rows::scale_rows\n"));
}

TEST_F(KernelSpecReaderTest, EntryMustBeAKernelName) {
  std::string message = input_error_of([&] { parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: k<64>\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":3:8: entry 'k<64>' is not a kernel name", 0), 0u) << message;
  EXPECT_NE(message.find("template_arguments"), std::string::npos) << message;
}

TEST_F(KernelSpecReaderTest, NegativeProblemDefault) {
  std::string message = input_error_of(
      [&] { parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: k\nproblem: {N: -4096}\n"); });
  EXPECT_EQ(message, spec_file().string() +
                         ":4:14: problem symbol 'N' is -4096; problem symbols are sizes and counts and may not be "
                         "negative");
}

TEST_F(KernelSpecReaderTest, NegativeProblemOverride) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nproblem: {N: 16}\n"
                      "space: {parameters: [{name: B, values: [64]}]}\narguments: []\n"
                      "launch: {grid: [1], block: [B]}\n",
                      spec_file(), {{"N", -3}});
  });
  EXPECT_EQ(message, "--problem N=-3: N is negative; problem symbols are sizes and counts");
}

TEST_F(KernelSpecReaderTest, CompileOptionOffTheListIsRefusedAtItsColumn) {
  std::string message = input_error_of([&] {
    parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: k\n",
               "compile_options: [-std=c++17, --create-pch=k.pch]\n");
  });
  EXPECT_EQ(message.rfind(spec_file().string() + ":7:31: compile option '--create-pch=k.pch' is not allowed: it is "
                                                 "not on the list of options a spec may pass",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("a spec may pass -std=c++11|c++14|c++17|c++20, -D<name>"), std::string::npos) << message;
}

TEST_F(KernelSpecReaderTest, AllowedCompileOptionsAreKept) {
  KernelSpec spec = parse_with(spec_file(), "name: t\ntemplate: kernel.cu\nentry: k\n",
                               "compile_options: [-std=c++20, -DX=1, --use_fast_math, -maxrregcount=64]\n");
  EXPECT_EQ(spec.compile_options, (std::vector<std::string>{"-std=c++20", "-DX=1", "--use_fast_math", "-maxrregcount=64"}));
}

TEST_F(KernelSpecReaderTest, ReferenceKeepsItsLocation) {
  KernelSpec spec = parse_spec(simple_space, "verify: {reference: {BLOCK: 64}}\n");
  EXPECT_EQ(spec.verification.reference_where.to_string(), spec_file().string() + ":8:21");
}

}  // namespace
}  // namespace kernlathe
