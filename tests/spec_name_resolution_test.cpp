// Name resolution: every expression of a spec is bound at load against what it may read, so unknown names,
// derived values used before they are declared and per-problem sizes that read parameters fail at their line.
#include "tuner/spec/name_resolution.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "spec_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace spec_test;

class NameResolutionTest : public spec_test::SpecFolderTest {};

TEST_F(NameResolutionTest, UnknownNameInAConstraintSuggestsTheParameter) {
  std::string message = input_error_of([&] { parse_spec(simple_space + "  constraints:\n    - BLOKC <= 128\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":13:", 0), 0u) << message;
  EXPECT_NE(message.find("BLOKC"), std::string::npos) << message;
  EXPECT_NE(message.find("BLOCK"), std::string::npos) << message;
}

TEST_F(NameResolutionTest, UnknownNameInLaunchGeometry) {
  std::string message =
      input_error_of([&] { parse_spec(simple_space, "", "launch: {grid: [N], block: [\"BLOK\"]}\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":7:", 0), 0u) << message;
  EXPECT_NE(message.find("BLOK"), std::string::npos) << message;
}

TEST_F(NameResolutionTest, DerivedValueMayOnlyUseEarlierDerivedValues) {
  std::string message = input_error_of([&] {
    parse_spec(simple_space + "  derived:\n    TWICE: HALF * 4\n    HALF: BLOCK // 2\n");
  });
  EXPECT_EQ(message.rfind(spec_file().string() + ":13:", 0), 0u) << message;
  EXPECT_NE(message.find("derived value 'TWICE' uses 'HALF', which is declared after it"), std::string::npos)
      << message;
}

TEST_F(NameResolutionTest, ConstraintsMayUseProblemSymbolsAndDerivedValues) {
  KernelSpec spec = parse_spec(simple_space + "  derived: {HALF: BLOCK // 2}\n  constraints: [N % HALF == 0]\n");
  EXPECT_EQ(spec.space.constraints[0].expression.text(), "N % HALF == 0");
}

TEST_F(NameResolutionTest, AProblemDefaultsConditionReadsProblemSymbolsAndDevicePropertiesOnly) {
  KernelSpec spec = parse_spec(simple_space + "  problem_defaults:\n    - {when: N <= sm_count * 64, values: {BLOCK: 64}}\n");
  ASSERT_EQ(spec.space.problem_defaults.size(), 1u);
  std::string message = input_error_of([&] {
    parse_spec(simple_space + "  problem_defaults:\n    - {when: BLOCK > 64, values: {BLOCK: 64}}\n");
  });
  EXPECT_EQ(message.rfind(spec_file().string() + ":13:", 0), 0u) << message;
  EXPECT_NE(message.find("the when of a problem default reads parameter 'BLOCK'; it may read problem symbols and "
                         "device properties only"),
            std::string::npos)
      << message;
  message = input_error_of(
      [&] { parse_spec(simple_space + "  problem_defaults:\n    - {when: NN <= 128, values: {BLOCK: 64}}\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":13:", 0), 0u) << message;
  EXPECT_NE(message.find("NN"), std::string::npos) << message;
}

TEST_F(NameResolutionTest, BufferCountMayNotUseAParameter) {
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

TEST_F(NameResolutionTest, ScalarValueMayNotUseADerivedValue) {
  std::string message = input_error_of([&] {
    parse_kernel_spec(
        "name: t\ntemplate: kernel.cu\nentry: k\n"
        "space: {parameters: [{name: B, values: [1]}], derived: {D: B + 1}}\n"
        "arguments:\n  - {name: s, type: i32, value: D}\nlaunch: {grid: [1], block: [1]}\n",
        spec_file());
  });
  EXPECT_NE(message.find("the value of scalar 's' uses derived value 'D'"), std::string::npos) << message;
}

TEST_F(NameResolutionTest, ParameterShadowingAProblemSymbol) {
  std::string message = input_error_of([&] { parse_spec("  parameters: [{name: N, values: [1]}]\n"); });
  EXPECT_EQ(message.rfind(spec_file().string() + ":9:", 0), 0u) << message;
  EXPECT_NE(message.find("parameter 'N' has the name of a problem symbol"), std::string::npos) << message;
}

}  // namespace
}  // namespace kernlathe
