#include "tuner/spec/spec_loader.h"
#include "spec_test_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

using spec_test::input_error_of;

void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A scratch directory with a template beside the spec, so inline specs load.
class SpecLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 fmt::format("spec_loader_test_{}_{}", getpid(),
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    write_file(directory_ / "kernel.cu", "__global__ void k() {}\n");
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path spec_file() const { return directory_ / "spec.yaml"; }

  // A valid spec around the given space and extra top-level lines.
  // launch_line is line 7 of the spec, extra_lines start at line 8.
  KernelSpec parse_spec(const std::string& space_lines, const std::string& extra_lines = "",
                        const std::string& launch_line = "launch: {grid: [N], block: [64]}\n") {
    return parse_kernel_spec(spec_text(space_lines, extra_lines, launch_line), spec_file());
  }
  static std::string spec_text(const std::string& space_lines, const std::string& extra_lines,
                               const std::string& launch_line) {
    return "name: test\n"
           "template: kernel.cu\n"
           "entry: k\n"
           "problem: {N: 4096}\n"
           "arguments:\n"
           "  - {name: x, type: f32, count: N}\n" +
           launch_line + extra_lines + "space:\n" + space_lines;
  }

  fs::path directory_;
};

const std::string simple_space =
    "  parameters:\n"           // line 9 of spec_text
    "    - name: BLOCK\n"       // line 10
    "      values: [64, 128]\n";  // line 11

// ---------------------------------------------------------------- the saxpy example

// Copies of kernels/saxpy.yaml and spaces/saxpy.yaml in their relative layout, with a stand-in template, so the
// test reads the real example files without depending on the template's contents.
class SaxpyTest : public SpecLoaderTest {
 protected:
  void SetUp() override {
    SpecLoaderTest::SetUp();
    const fs::path source = KERNLATHE_SOURCE_DIR;
    write_file(directory_ / "kernels/saxpy.yaml", read_file(source / "kernels/saxpy.yaml"));
    write_file(directory_ / "spaces/saxpy.yaml", read_file(source / "spaces/saxpy.yaml"));
    write_file(directory_ / "templates/saxpy.cu", "// stand-in\n");
  }
  fs::path saxpy() const { return directory_ / "kernels/saxpy.yaml"; }
};

std::vector<Value> integers(std::initializer_list<std::int64_t> values) {
  return std::vector<Value>(values.begin(), values.end());
}

TEST_F(SaxpyTest, SpaceHasTheDeclaredParametersValuesAndDefaults) {
  KernelSpec spec = load_kernel_spec(saxpy());
  const Space& space = spec.space;
  EXPECT_EQ(space.name, "saxpy");
  EXPECT_EQ(space.file, (directory_ / "spaces/saxpy.yaml").lexically_normal());
  ASSERT_EQ(space.parameters.size(), 5u);

  EXPECT_EQ(space.parameters[0].name, "BLOCK");
  EXPECT_EQ(space.parameters[0].type, ParameterType::integer);
  EXPECT_EQ(space.parameters[0].values, integers({64, 128, 256, 512, 1024}));
  EXPECT_EQ(space.parameters[0].default_value, Value(std::int64_t{256}));
  EXPECT_EQ(space.parameters[0].where.line, 4);

  EXPECT_EQ(space.parameters[1].name, "VEC");
  EXPECT_EQ(space.parameters[1].values, integers({1, 2, 4}));

  EXPECT_EQ(space.parameters[2].name, "ITEMS");
  EXPECT_EQ(space.parameters[2].values, integers({1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(space.parameters[2].default_value, Value(std::int64_t{1}));

  EXPECT_EQ(space.parameters[3].name, "GRID_STRIDE");
  EXPECT_EQ(space.parameters[3].type, ParameterType::boolean);
  EXPECT_EQ(space.parameters[3].values, (std::vector<Value>{false, true}));
  EXPECT_EQ(space.parameters[3].default_value, Value(false));

  EXPECT_EQ(space.parameters[4].name, "BLOCKS_PER_SM");
  EXPECT_EQ(space.parameters[4].values, integers({1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(space.parameters[4].default_value, Value(std::int64_t{4}));

  ASSERT_EQ(space.derived.size(), 1u);
  EXPECT_EQ(space.derived[0].name, "ELEMENTS_PER_BLOCK");
  EXPECT_EQ(space.derived[0].expression.text(), "BLOCK * VEC * ITEMS");
  ASSERT_EQ(space.constraints.size(), 3u);
  EXPECT_EQ(space.constraints[0].expression.text(), "BLOCK <= max_threads_per_block");
  EXPECT_EQ(space.constraints[2].expression.text(), "N % VEC == 0");
  EXPECT_EQ(space.constraints[2].expression.where().line, 24);
}

TEST_F(SaxpyTest, SpecHasTheDeclaredArgumentsGeometryAndVerification) {
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

TEST_F(SaxpyTest, ExpressionsEvaluate) {
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

TEST_F(SaxpyTest, ProblemOverrideReplacesTheDefault) {
  KernelSpec spec = load_kernel_spec(saxpy(), {{"N", 1024}});
  EXPECT_EQ(spec.problem, (std::vector<std::pair<std::string, std::int64_t>>{{"N", 1024}}));
}

TEST_F(SaxpyTest, OverrideOfAnUnknownSymbolNamesTheKnownOnes) {
  std::string message = input_error_of([&] { load_kernel_spec(saxpy(), {{"M", 1024}}); });
  EXPECT_NE(message.find("--problem M=1024"), std::string::npos) << message;
  EXPECT_NE(message.find("no problem symbol 'M'"), std::string::npos) << message;
  EXPECT_NE(message.find("its symbols are N"), std::string::npos) << message;
}

TEST_F(SaxpyTest, StandaloneSpaceLoads) {
  Space space = load_space(directory_ / "spaces/saxpy.yaml");
  EXPECT_EQ(space.parameters.size(), 5u);
  EXPECT_EQ(space.file, directory_ / "spaces/saxpy.yaml");
}

TEST(ShippedSpecs, EveryKernelSpecInTheRepositoryLoads) {
  const fs::path kernels = fs::path(KERNLATHE_SOURCE_DIR) / "kernels";
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(kernels)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_kernel_spec(entry.path()));
    ++loaded;
  }
  EXPECT_GE(loaded, 1);
}

// ---------------------------------------------------------------- values and forms

TEST_F(SpecLoaderTest, RangeCountsDownWithANegativeStep) {
  KernelSpec spec = parse_spec(
      "  parameters:\n"
      "    - {name: A, range: {from: 8, to: 2, step: -2}}\n"
      "    - {name: B, pow2: {from: 16, to: 2}}\n"
      "    - {name: C, type: enum, values: [row, \"col\"], default: col}\n"
      "    - {name: D, type: bool, values: [true]}\n");
  const auto& parameters = spec.space.parameters;
  EXPECT_EQ(parameters[0].values, integers({8, 6, 4, 2}));
  EXPECT_EQ(parameters[1].values, integers({16, 8, 4, 2}));
  EXPECT_EQ(parameters[2].values, (std::vector<Value>{std::string("row"), std::string("col")}));
  EXPECT_EQ(parameters[2].default_value, Value(std::string("col")));
  EXPECT_EQ(parameters[3].values, std::vector<Value>{true});
}

TEST_F(SpecLoaderTest, YamlNumbersAndBooleansAreExpressions) {
  KernelSpec spec = parse_spec(simple_space + "  constraints:\n    - true\n    - 1\n",
                               "", "launch: {grid: [N], block: [64], shared_memory: 0}\n");
  ASSERT_EQ(spec.space.constraints.size(), 2u);
  EXPECT_EQ(spec.space.constraints[0].expression.evaluate(std::map<std::string, Value>{}), Value(true));
  EXPECT_EQ(spec.launch.dynamic_shared_bytes.evaluate(std::map<std::string, Value>{}), Value(std::int64_t{0}));
}

TEST_F(SpecLoaderTest, OptionalSectionsTakeDefaults) {
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

TEST_F(SpecLoaderTest, InitialisationsAndLoaderSettings) {
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

TEST_F(SpecLoaderTest, ScratchBuffersAreZeroInitialisedInputs) {
  auto spec_with = [&](const std::string& argument) {
    return parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nspace: {parameters: [{name: B, values: [1]}]}\n"
                             "arguments:\n  - " + argument + "\nlaunch: {grid: [1], block: [B]}\n",
                             spec_file());
  };
  EXPECT_TRUE(spec_with("{name: c, type: i32, count: 2, init: {constant: 0}, role: in, scratch: true}").arguments[0].scratch);
  EXPECT_FALSE(spec_with("{name: c, type: i32, count: 2, init: {constant: 0}, role: in}").arguments[0].scratch);
  std::string message = input_error_of([&] { spec_with("{name: c, type: i32, count: 2, scratch: true}"); });
  EXPECT_NE(message.find("spec.yaml:6:"), std::string::npos) << message;
  EXPECT_NE(message.find("a scratch buffer needs init: {constant: 0}"), std::string::npos) << message;
  message = input_error_of([&] { spec_with("{name: c, type: i32, count: 2, init: {constant: 1}, scratch: true}"); });
  EXPECT_NE(message.find("a scratch buffer needs init: {constant: 0}"), std::string::npos) << message;
  message = input_error_of([&] { spec_with("{name: c, type: i32, value: 2, scratch: true}"); });
  EXPECT_NE(message.find("scratch applies to buffers only"), std::string::npos) << message;
  message = input_error_of([&] { spec_with("{name: c, type: i32, count: 2, init: {constant: 0}, scratch: maybe}"); });
  EXPECT_NE(message.find("must be true or false"), std::string::npos) << message;
}

// ---------------------------------------------------------------- bad input

TEST_F(SpecLoaderTest, MalformedYamlNamesLineAndColumn) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - name: A\n    values: [1, 2\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find("malformed YAML"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, MalformedYamlIndentation) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - name: A\n   values: [1]\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:3:", 0), 0u) << message;
  EXPECT_NE(message.find("malformed YAML"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, UnknownKeySuggestsTheClosest) {
  std::string message = input_error_of(
      [&] { parse_space("parameters:\n  - {name: A, values: [1]}\nconstriants:\n  - A > 0\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:3:1: unknown key 'constriants'", 0), 0u) << message;
  EXPECT_NE(message.find("did you mean 'constraints'?"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, UnknownParameterKey) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: A, value: [1]}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:15: unknown key 'value'", 0), 0u) << message;
  EXPECT_NE(message.find("did you mean 'values'?"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, MissingRequiredKey) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nspace: {}\narguments: []\nlaunch: {grid: [1], block: [1]}\n",
                      spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:1:1: the kernel spec has no 'entry': it is required"), std::string::npos)
      << message;
}

TEST_F(SpecLoaderTest, MissingTemplateNamesTheResolvedPath) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: ../elsewhere/missing.cu\nentry: k\n", directory_ / "sub/spec.yaml");
  });
  std::string resolved = (directory_ / "elsewhere/missing.cu").string();
  EXPECT_NE(message.find("sub/spec.yaml:2:11: template file '" + resolved + "' does not exist"), std::string::npos)
      << message;
}

TEST_F(SpecLoaderTest, MissingSpaceFileNamesTheResolvedPath) {
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

TEST_F(SpecLoaderTest, ErrorsInASpaceFileNameThatFile) {
  write_file(directory_ / "space.yaml", "parameters:\n  - {name: A, values: []}\n");
  std::string message = input_error_of([&] {
    parse_kernel_spec(
        "name: t\ntemplate: kernel.cu\nentry: k\nspace: space.yaml\narguments: []\n"
        "launch: {grid: [1], block: [1]}\n",
        spec_file());
  });
  EXPECT_EQ(message.rfind((directory_ / "space.yaml").string() + ":2:", 0), 0u) << message;
  EXPECT_NE(message.find("empty value list"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, ExpressionSyntaxErrorHasItsLocation) {
  std::string message = input_error_of([&] { parse_spec(simple_space + "  constraints:\n    - BLOCK <= * 2\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":13:", 0), 0u) << message;
}

TEST_F(SpecLoaderTest, UnknownNameInAConstraintSuggestsTheParameter) {
  std::string message = input_error_of([&] { parse_spec(simple_space + "  constraints:\n    - BLOKC <= 128\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":13:", 0), 0u) << message;
  EXPECT_NE(message.find("BLOKC"), std::string::npos) << message;
  EXPECT_NE(message.find("BLOCK"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, UnknownNameInLaunchGeometry) {
  std::string message =
      input_error_of([&] { parse_spec(simple_space, "", "launch: {grid: [N], block: [\"BLOK\"]}\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":7:", 0), 0u) << message;
  EXPECT_NE(message.find("BLOK"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, DerivedValueMayOnlyUseEarlierDerivedValues) {
  std::string message = input_error_of([&] {
    parse_spec(simple_space + "  derived:\n    TWICE: HALF * 4\n    HALF: BLOCK // 2\n");
  });
  EXPECT_EQ(message.rfind(spec_file().string() + ":13:", 0), 0u) << message;
  EXPECT_NE(message.find("derived value 'TWICE' uses 'HALF', which is declared after it"), std::string::npos)
      << message;
}

TEST_F(SpecLoaderTest, ConstraintsMayUseProblemSymbolsAndDerivedValues) {
  KernelSpec spec = parse_spec(simple_space + "  derived: {HALF: BLOCK // 2}\n  constraints: [N % HALF == 0]\n");
  EXPECT_EQ(spec.space.constraints[0].expression.text(), "N % HALF == 0");
}

TEST_F(SpecLoaderTest, BufferCountMayNotUseAParameter) {
  std::string message = input_error_of([&] {
    parse_kernel_spec(
        "name: t\ntemplate: kernel.cu\nentry: k\nspace: {parameters: [{name: BLOCK, values: [1]}]}\n"
        "arguments:\n  - {name: x, type: f32, count: BLOCK * 4}\nlaunch: {grid: [1], block: [1]}\n",
        spec_file());
  });
  EXPECT_EQ(message.rfind(spec_file().string() + ":6:", 0), 0u) << message;
  EXPECT_NE(message.find("the count of buffer 'x' uses tuning parameter 'BLOCK'"), std::string::npos) << message;
  EXPECT_NE(message.find("only use problem symbols and device properties"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, ScalarValueMayNotUseADerivedValue) {
  std::string message = input_error_of([&] {
    parse_kernel_spec(
        "name: t\ntemplate: kernel.cu\nentry: k\n"
        "space: {parameters: [{name: B, values: [1]}], derived: {D: B + 1}}\n"
        "arguments:\n  - {name: s, type: i32, value: D}\nlaunch: {grid: [1], block: [1]}\n",
        spec_file());
  });
  EXPECT_NE(message.find("the value of scalar 's' uses derived value 'D'"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, DefaultNotAmongTheValues) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - name: A\n    values: [1, 2]\n    default: 3\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:4:14: default 3 of parameter 'A' is not one of its values (1, 2)", 0), 0u)
      << message;
}

TEST_F(SpecLoaderTest, EnumDefaultMustBeAString) {
  std::string message = input_error_of([&] {
    parse_space("parameters:\n  - {name: L, type: enum, values: [row, col], default: 3}\n", "s.yaml");
  });
  EXPECT_EQ(message.rfind("s.yaml:2:", 0), 0u) << message;
  EXPECT_NE(message.find("parameter 'L' default '3' is not a string"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, EnumValuesMustBeMacroSuffixes) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: L, type: enum, values: [row, row-major]}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:41: parameter 'L' value 'row-major' must consist of letters, digits and _", 0), 0u)
      << message;
}

TEST_F(SpecLoaderTest, StringValueOfAnIntParameterSuggestsEnum) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: L, values: [row]}\n", "s.yaml"); });
  EXPECT_NE(message.find("s.yaml:2:24: parameter 'L' value must be an integer, found 'row'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("type: enum"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, UnknownParameterType) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: L, type: boolean}\n", "s.yaml"); });
  EXPECT_NE(message.find("s.yaml:2:21: parameter 'L' type 'boolean' is not one of int, bool, enum"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("did you mean 'bool'?"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, EmptyValueList) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: A, values: []}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:23: parameter 'A' has an empty value list", 0), 0u) << message;
}

TEST_F(SpecLoaderTest, ParameterWithoutValues) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: A}\n", "s.yaml"); });
  EXPECT_NE(message.find("parameter 'A' has no values; add one of values"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, DuplicateParameter) {
  std::string message = input_error_of([&] {
    parse_space("parameters:\n  - {name: A, values: [1]}\n  - {name: A, values: [2]}\n", "s.yaml");
  });
  EXPECT_EQ(message.rfind("s.yaml:3:12: parameter 'A' is declared twice (first at line 2)", 0), 0u) << message;
}

TEST_F(SpecLoaderTest, DuplicateValue) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: A, values: [1, 2, 1]}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:30: value 1 appears twice in parameter 'A'", 0), 0u) << message;
}

TEST_F(SpecLoaderTest, DuplicateYamlKey) {
  std::string message = input_error_of([&] { parse_space("name: a\nname: b\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:1: key 'name' appears twice in the space (first at line 1)", 0), 0u) << message;
}

TEST_F(SpecLoaderTest, DerivedValueShadowingAParameter) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: A, values: [1]}\nderived:\n  A: 2\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:4:3: derived value 'A' has the name of the parameter declared at line 2", 0), 0u)
      << message;
}

TEST_F(SpecLoaderTest, DerivedValueShadowingADeviceProperty) {
  std::string message = input_error_of([&] { parse_space("derived:\n  sm_count: 2\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:3: derived value 'sm_count' has the name of a device property", 0), 0u)
      << message;
}

TEST_F(SpecLoaderTest, ParameterShadowingAProblemSymbol) {
  std::string message = input_error_of([&] { parse_spec("  parameters: [{name: N, values: [1]}]\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":9:", 0), 0u) << message;
  EXPECT_NE(message.find("parameter 'N' has the name of a problem symbol"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, RangeWithZeroStep) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: A, range: {from: 1, to: 4, step: 0}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:45: parameter 'A' range has step 0", 0), 0u) << message;
}

TEST_F(SpecLoaderTest, RangeWithWrongSignedStep) {
  std::string message = input_error_of(
      [&] { parse_space("parameters:\n  - {name: A, range: {from: 8, to: 1, step: 2}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:45: parameter 'A' range goes from 8 to 1 but its step is 2", 0), 0u) << message;
  EXPECT_NE(message.find("use step: -2"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, RangeWithTooManyValues) {
  std::string message = input_error_of([&] {
    parse_space("parameters:\n  - {name: A, range: {from: 0, to: 9223372036854775807}}\n", "s.yaml");
  });
  EXPECT_NE(message.find("more than the 1048576 a parameter may have"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, Pow2BoundThatIsNotAPowerOfTwo) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: A, pow2: {from: 1, to: 48}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:35: parameter 'A' pow2.to is 48, not a power of two; the nearest are 32 and 64", 0),
            0u)
      << message;
}

TEST_F(SpecLoaderTest, RangeOnABoolParameter) {
  std::string message = input_error_of(
      [&] { parse_space("parameters:\n  - {name: A, type: bool, range: {from: 0, to: 1}}\n", "s.yaml"); });
  EXPECT_NE(message.find("parameter 'A' is bool; range and pow2 are for int parameters"), std::string::npos)
      << message;
}

TEST_F(SpecLoaderTest, ScalarWhereAListWasExpected) {
  std::string message = input_error_of([&] { parse_space("constraints: A > 1\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:1:14: constraints must be a list, found 'A > 1'; write [A > 1] for a list of one", 0),
            0u)
      << message;
}

TEST_F(SpecLoaderTest, MappingWhereAScalarWasExpected) {
  std::string message = input_error_of([&] { parse_spec(simple_space, "", "launch: {grid: [N], block: [{x: 1}]}\n"); });
  EXPECT_NE(message.find(":7:29: launch.block[0] must be an expression, found a mapping"), std::string::npos)
      << message;
}

TEST_F(SpecLoaderTest, CommaInsideAFlowListExpression) {
  std::string message =
      input_error_of([&] { parse_spec(simple_space, "", "launch: {grid: [ceil_div(N, BLOCK)], block: [BLOCK]}\n"); });
  EXPECT_NE(message.find(":7:17: launch.grid[0] 'ceil_div(N' has unbalanced parentheses"), std::string::npos)
      << message;
  EXPECT_NE(message.find("quote an expression that contains a comma"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, TooManyLaunchDimensions) {
  std::string message = input_error_of([&] { parse_spec(simple_space, "", "launch: {grid: [1, 1, 1, 1], block: [1]}\n"); });
  EXPECT_NE(message.find(":7:16: launch.grid has 4 entries; give 1 to 3"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, UnknownDtypeSuggestsOurSpelling) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nspace: {}\narguments:\n  - {name: x, type: float, "
                      "count: 4}\nlaunch: {grid: [1], block: [1]}\n",
                      spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:6:21: argument 'x' type 'float' is not a dtype (did you mean 'f32'?)"),
            std::string::npos)
      << message;
}

TEST_F(SpecLoaderTest, ArgumentNeedsCountOrValue) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nspace: {}\narguments:\n  - {name: x, type: f32}\n"
                      "launch: {grid: [1], block: [1]}\n",
                      spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:6:5: argument 'x' needs count"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, ReferenceNamesAnUnknownParameter) {
  std::string message = input_error_of([&] { parse_spec(simple_space, "verify: {reference: {BLOK: 64}}\n"); });
  EXPECT_NE(message.find("spec.yaml:8:22: verify.reference names 'BLOK', which is not a parameter of the space "
                         "(did you mean 'BLOCK'?)"),
            std::string::npos)
      << message;
}

TEST_F(SpecLoaderTest, ReferenceValueNotAmongTheValues) {
  std::string message = input_error_of([&] { parse_spec(simple_space, "verify: {reference: {BLOCK: 96}}\n"); });
  EXPECT_NE(message.find("spec.yaml:8:29: verify.reference value of 'BLOCK' is 96"), std::string::npos) << message;
}

TEST_F(SpecLoaderTest, ProblemDefaultMustBeAnInteger) {
  std::string message = input_error_of([&] {
    parse_kernel_spec("name: t\ntemplate: kernel.cu\nentry: k\nproblem: {N: 1.5}\n", spec_file());
  });
  EXPECT_NE(message.find("spec.yaml:4:14: problem symbol 'N' must be an integer, found '1.5'"), std::string::npos)
      << message;
}

TEST_F(SpecLoaderTest, EmptyInputIsAnError) {
  EXPECT_NE(input_error_of([&] { parse_space("", "s.yaml"); }).find("s.yaml: the space file is empty"),
            std::string::npos);
  EXPECT_NE(input_error_of([&] { parse_space("[1, 2]", "s.yaml"); }).find("s.yaml:1:1: the space must be a mapping"),
            std::string::npos);
}

TEST_F(SpecLoaderTest, MissingFiles) {
  EXPECT_NE(input_error_of([&] { load_space(directory_ / "none.yaml"); }).find("space file does not exist"),
            std::string::npos);
  EXPECT_NE(input_error_of([&] { load_kernel_spec(directory_ / "none.yaml"); }).find("spec file does not exist"),
            std::string::npos);
}

// ---------------------------------------------------------------- command-line helpers

TEST(ProblemOverrides, ParsesNameValuePairs) {
  EXPECT_EQ(parse_problem_overrides("M=1024,N=2048"), (ProblemOverrides{{"M", 1024}, {"N", 2048}}));
  EXPECT_EQ(parse_problem_overrides(" M = 1024 , N=-3 "), (ProblemOverrides{{"M", 1024}, {"N", -3}}));
  EXPECT_TRUE(parse_problem_overrides("").empty());
}

TEST(ProblemOverrides, RejectsBadText) {
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N=1.5"); }).find("the value of N is '1.5', not an integer"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N"); }).find("'N' is not NAME=VALUE"), std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N=1,"); }).find("'' is not NAME=VALUE"), std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("2N=1"); }).find("'2N' is not a symbol name"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N=1,N=2"); }).find("N is given twice"), std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N=99999999999999999999"); }).find("not an integer"),
            std::string::npos);
}

TEST_F(SpecLoaderTest, FindSpecLooksUnderKernels) {
  write_file(directory_ / "kernels/gemm.yaml", "name: gemm\n");
  const fs::path previous = fs::current_path();
  fs::current_path(directory_);
  fs::path found = find_spec("gemm");
  fs::path direct = find_spec("kernels/gemm.yaml");
  std::string message = input_error_of([] { find_spec("gem"); });
  fs::current_path(previous);
  EXPECT_EQ(found, fs::path("kernels/gemm.yaml"));
  EXPECT_EQ(direct, fs::path("kernels/gemm.yaml"));
  EXPECT_NE(message.find("no kernel spec 'gem': tried 'gem' and 'kernels/gem.yaml'"), std::string::npos) << message;
  EXPECT_NE(message.find("specs in ./kernels: gemm"), std::string::npos) << message;
}

}  // namespace
}  // namespace kernlathe
