// The space section: parameters (values, range, pow2, enum, bool), defaults, derived values and constraints, from a
// space file or inline, with the file:line:column of every problem.
#include "tuner/spec/space_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "spec_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace spec_test;

class SpaceReaderTest : public spec_test::SpecFolderTest {};
class SaxpySpaceReaderTest : public spec_test::SaxpyCopyTest {};

TEST_F(SaxpySpaceReaderTest, SpaceHasTheDeclaredParametersValuesAndDefaults) {
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

TEST_F(SaxpySpaceReaderTest, StandaloneSpaceLoads) {
  Space space = load_space(directory_ / "spaces/saxpy.yaml");
  EXPECT_EQ(space.parameters.size(), 5u);
  EXPECT_EQ(space.file, directory_ / "spaces/saxpy.yaml");
}

TEST_F(SpaceReaderTest, RangeCountsDownWithANegativeStep) {
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

TEST_F(SpaceReaderTest, WhenMakesAParameterConditional) {
  Space space = parse_space(
      "parameters:\n"
      "  - {name: PATH, type: enum, values: [simt, wgmma]}\n"
      "  - {name: WG_BM, values: [64, 128], default: 128, when: PATH == \"wgmma\"}\n"
      "  - {name: BM, values: [32, 64]}\n",
      "s.yaml");
  ASSERT_EQ(space.parameters.size(), 3u);
  EXPECT_TRUE(space.parameters[0].relevant_when.empty());
  EXPECT_EQ(space.parameters[1].relevant_when.text(), "PATH == \"wgmma\"");
  EXPECT_EQ(space.parameters[1].relevant_when.where().line, 3);
  EXPECT_TRUE(space.parameters[2].relevant_when.empty());
}

TEST_F(SpaceReaderTest, AConditionReadingItsOwnParameter) {
  std::string message = input_error_of([&] {
    parse_space("parameters:\n  - {name: A, values: [1, 2]}\n  - {name: B, values: [1, 2], when: B > 1}\n", "s.yaml");
  });
  EXPECT_EQ(message.rfind("s.yaml:3:", 0), 0u) << message;
  EXPECT_NE(message.find("the condition of parameter 'B' reads the parameter itself"), std::string::npos) << message;
}

TEST_F(SpaceReaderTest, UnknownParameterKey) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: A, value: [1]}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:15: unknown key 'value'", 0), 0u) << message;
  EXPECT_NE(message.find("did you mean 'values'?"), std::string::npos) << message;
}

TEST_F(SpaceReaderTest, DefaultNotAmongTheValues) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - name: A\n    values: [1, 2]\n    default: 3\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:4:14: default 3 of parameter 'A' is not one of its values (1, 2)", 0), 0u)
      << message;
}

TEST_F(SpaceReaderTest, EnumDefaultMustBeAString) {
  std::string message = input_error_of([&] {
    parse_space("parameters:\n  - {name: L, type: enum, values: [row, col], default: 3}\n", "s.yaml");
  });
  EXPECT_EQ(message.rfind("s.yaml:2:", 0), 0u) << message;
  EXPECT_NE(message.find("parameter 'L' default '3' is not a string"), std::string::npos) << message;
}

TEST_F(SpaceReaderTest, EnumValuesMustBeMacroSuffixes) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: L, type: enum, values: [row, row-major]}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:41: parameter 'L' value 'row-major' must consist of letters, digits and _", 0), 0u)
      << message;
}

TEST_F(SpaceReaderTest, StringValueOfAnIntParameterSuggestsEnum) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: L, values: [row]}\n", "s.yaml"); });
  EXPECT_NE(message.find("s.yaml:2:24: parameter 'L' value must be an integer, found 'row'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("type: enum"), std::string::npos) << message;
}

TEST_F(SpaceReaderTest, UnknownParameterType) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: L, type: boolean}\n", "s.yaml"); });
  EXPECT_NE(message.find("s.yaml:2:21: parameter 'L' type 'boolean' is not one of int, bool, enum"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("did you mean 'bool'?"), std::string::npos) << message;
}

TEST_F(SpaceReaderTest, EmptyValueList) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: A, values: []}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:23: parameter 'A' has an empty value list", 0), 0u) << message;
}

TEST_F(SpaceReaderTest, ParameterWithoutValues) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: A}\n", "s.yaml"); });
  EXPECT_NE(message.find("parameter 'A' has no values; add one of values"), std::string::npos) << message;
}

TEST_F(SpaceReaderTest, DuplicateParameter) {
  std::string message = input_error_of([&] {
    parse_space("parameters:\n  - {name: A, values: [1]}\n  - {name: A, values: [2]}\n", "s.yaml");
  });
  EXPECT_EQ(message.rfind("s.yaml:3:12: parameter 'A' is declared twice (first at line 2)", 0), 0u) << message;
}

TEST_F(SpaceReaderTest, DuplicateValue) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - {name: A, values: [1, 2, 1]}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:30: value 1 appears twice in parameter 'A'", 0), 0u) << message;
}

TEST_F(SpaceReaderTest, DerivedValueShadowingAParameter) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: A, values: [1]}\nderived:\n  A: 2\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:4:3: derived value 'A' has the name of the parameter declared at line 2", 0), 0u)
      << message;
}

TEST_F(SpaceReaderTest, DerivedValueShadowingADeviceProperty) {
  std::string message = input_error_of([&] { parse_space("derived:\n  sm_count: 2\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:3: derived value 'sm_count' has the name of a device property", 0), 0u)
      << message;
}

TEST_F(SpaceReaderTest, RangeWithZeroStep) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: A, range: {from: 1, to: 4, step: 0}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:45: parameter 'A' range has step 0", 0), 0u) << message;
}

TEST_F(SpaceReaderTest, RangeWithWrongSignedStep) {
  std::string message = input_error_of(
      [&] { parse_space("parameters:\n  - {name: A, range: {from: 8, to: 1, step: 2}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:45: parameter 'A' range goes from 8 to 1 but its step is 2", 0), 0u) << message;
  EXPECT_NE(message.find("use step: -2"), std::string::npos) << message;
}

TEST_F(SpaceReaderTest, RangeWithTooManyValues) {
  std::string message = input_error_of([&] {
    parse_space("parameters:\n  - {name: A, range: {from: 0, to: 9223372036854775807}}\n", "s.yaml");
  });
  EXPECT_NE(message.find("more than the 1048576 a parameter may have"), std::string::npos) << message;
}

TEST_F(SpaceReaderTest, Pow2BoundThatIsNotAPowerOfTwo) {
  std::string message =
      input_error_of([&] { parse_space("parameters:\n  - {name: A, pow2: {from: 1, to: 48}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:35: parameter 'A' pow2.to is 48, not a power of two; the nearest are 32 and 64", 0),
            0u)
      << message;
}

TEST_F(SpaceReaderTest, RangeOnABoolParameter) {
  std::string message = input_error_of(
      [&] { parse_space("parameters:\n  - {name: A, type: bool, range: {from: 0, to: 1}}\n", "s.yaml"); });
  EXPECT_NE(message.find("parameter 'A' is bool; range and pow2 are for int parameters"), std::string::npos)
      << message;
}

TEST_F(SpaceReaderTest, ErrorsInASpaceFileNameThatFile) {
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

// ---------------------------------------------------------------- problem_defaults

const std::string decode_parameters =
    "parameters:\n"                                            // line 1
    "  - {name: PATH, type: enum, values: [simt, wgmma]}\n"   // line 2
    "  - {name: BM, values: [64, 128], default: 128}\n"       // line 3
    "  - {name: WIDE, type: bool}\n"                          // line 4
    "problem_defaults:\n";                                     // line 5

TEST_F(SpaceReaderTest, ProblemDefaultsAreReadInOrderWithTypedValues) {
  Space space = parse_space(decode_parameters +
                                "  # decode: few rows\n"                                 // line 6
                                "  - when: M <= 128 and INPUT_KIND in [2, 3]\n"         // line 7
                                "    values: {PATH: wgmma, BM: 64, WIDE: true}\n"       // line 8
                                "  - {when: M > 128, values: {BM: 128}}\n",             // line 9
                            "s.yaml");
  ASSERT_EQ(space.problem_defaults.size(), 2u);
  const ProblemDefault& decode = space.problem_defaults[0];
  EXPECT_EQ(decode.when.text(), "M <= 128 and INPUT_KIND in [2, 3]");
  EXPECT_EQ(decode.when.where().line, 7);
  EXPECT_EQ(decode.where.line, 7);
  EXPECT_EQ(decode.values, (std::map<std::string, Value>{
                               {"PATH", std::string("wgmma")}, {"BM", std::int64_t{64}}, {"WIDE", true}}));
  EXPECT_EQ(space.problem_defaults[1].values, (std::map<std::string, Value>{{"BM", std::int64_t{128}}}));
  EXPECT_EQ(space.problem_defaults[1].where.line, 9);
  EXPECT_TRUE(parse_space(decode_parameters.substr(0, decode_parameters.find("problem_defaults")), "s.yaml")
                  .problem_defaults.empty());
}

TEST_F(SpaceReaderTest, AProblemDefaultNamingNoParameterIsRefused) {
  std::string message =
      input_error_of([&] { parse_space(decode_parameters + "  - {when: M <= 128, values: {BN: 64}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:31: a problem default names 'BN', which is not a parameter of the space (did you "
                          "mean 'BM'?); the parameters are PATH, BM, WIDE",
                          0),
            0u)
      << message;
}

TEST_F(SpaceReaderTest, AProblemDefaultValueMustBeOneOfTheParametersValues) {
  std::string message =
      input_error_of([&] { parse_space(decode_parameters + "  - {when: M <= 128, values: {BM: 32}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:35: problem default value of 'BM' is 32, not one of its values (64, 128)", 0), 0u)
      << message;
  message =
      input_error_of([&] { parse_space(decode_parameters + "  - {when: M <= 128, values: {PATH: 3}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:37: problem default value of 'PATH' '3' is not a string", 0), 0u) << message;
  message = input_error_of(
      [&] { parse_space(decode_parameters + "  - {when: M <= 128, values: {WIDE: maybe}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:37: problem default value of 'WIDE' must be true or false", 0), 0u) << message;
}

TEST_F(SpaceReaderTest, AProblemDefaultNeedsAWhenThatParsesAndSomeValues) {
  std::string message = input_error_of([&] { parse_space(decode_parameters + "  - values: {BM: 64}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:5: a problem default has no 'when': it is required", 0), 0u) << message;
  message = input_error_of(
      [&] { parse_space(decode_parameters + "  - when: M <= * 2\n    values: {BM: 64}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:", 0), 0u) << message;
  message = input_error_of([&] { parse_space(decode_parameters + "  - when: M <= 128\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:5: a problem default has no 'values': it is required", 0), 0u) << message;
  message = input_error_of([&] { parse_space(decode_parameters + "  - {when: M <= 128, values: {}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:30: problem default values is empty", 0), 0u) << message;
  message = input_error_of(
      [&] { parse_space(decode_parameters + "  - {when: M <= 128, value: {BM: 64}}\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:22: unknown key 'value' in a problem default (did you mean 'values'?)", 0), 0u)
      << message;
  message = input_error_of([&] { parse_space(decode_parameters + "  when: M <= 128\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:6:3: problem_defaults must be a list", 0), 0u) << message;
}

TEST_F(SpaceReaderTest, ExpressionSyntaxErrorHasItsLocation) {
  std::string message = input_error_of([&] { parse_spec(simple_space + "  constraints:\n    - BLOCK <= * 2\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":13:", 0), 0u) << message;
}

}  // namespace
}  // namespace kernlathe
