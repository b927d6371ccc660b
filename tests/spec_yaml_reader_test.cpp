// Reading YAML with locations: malformed YAML, unknown and duplicate keys, values of the wrong shape, and expression
// fields that YAML would read as numbers or split at commas, each reported at its file:line:column.
#include "tuner/spec/yaml_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "spec_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace spec_test;

class YamlReaderTest : public spec_test::SpecFolderTest {};

TEST_F(YamlReaderTest, MalformedYamlNamesLineAndColumn) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - name: A\n    values: [1, 2\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find("malformed YAML"), std::string::npos) << message;
}

TEST_F(YamlReaderTest, MalformedYamlIndentation) {
  std::string message = input_error_of([&] { parse_space("parameters:\n  - name: A\n   values: [1]\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:3:", 0), 0u) << message;
  EXPECT_NE(message.find("malformed YAML"), std::string::npos) << message;
}

TEST_F(YamlReaderTest, UnknownKeySuggestsTheClosest) {
  std::string message = input_error_of(
      [&] { parse_space("parameters:\n  - {name: A, values: [1]}\nconstriants:\n  - A > 0\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:3:1: unknown key 'constriants'", 0), 0u) << message;
  EXPECT_NE(message.find("did you mean 'constraints'?"), std::string::npos) << message;
}

TEST_F(YamlReaderTest, DuplicateYamlKey) {
  std::string message = input_error_of([&] { parse_space("name: a\nname: b\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:2:1: key 'name' appears twice in the space (first at line 1)", 0), 0u) << message;
}

TEST_F(YamlReaderTest, ScalarWhereAListWasExpected) {
  std::string message = input_error_of([&] { parse_space("constraints: A > 1\n", "s.yaml"); });
  EXPECT_EQ(message.rfind("s.yaml:1:14: constraints must be a list, found 'A > 1'; write [A > 1] for a list of one", 0),
            0u)
      << message;
}

TEST_F(YamlReaderTest, MappingWhereAScalarWasExpected) {
  std::string message = input_error_of([&] { parse_spec(simple_space, "", "launch: {grid: [N], block: [{x: 1}]}\n"); });
  EXPECT_NE(message.find(":7:29: launch.block[0] must be an expression, found a mapping"), std::string::npos)
      << message;
}

TEST_F(YamlReaderTest, CommaInsideAFlowListExpression) {
  std::string message =
      input_error_of([&] { parse_spec(simple_space, "", "launch: {grid: [ceil_div(N, BLOCK)], block: [BLOCK]}\n"); });
  EXPECT_NE(message.find(":7:17: launch.grid[0] 'ceil_div(N' has unbalanced parentheses"), std::string::npos)
      << message;
  EXPECT_NE(message.find("quote an expression that contains a comma"), std::string::npos) << message;
}

TEST_F(YamlReaderTest, YamlNumbersAndBooleansAreExpressions) {
  KernelSpec spec = parse_spec(simple_space + "  constraints:\n    - true\n    - 1\n",
                               "", "launch: {grid: [N], block: [64], shared_memory: 0}\n");
  ASSERT_EQ(spec.space.constraints.size(), 2u);
  EXPECT_EQ(spec.space.constraints[0].expression.evaluate(std::map<std::string, Value>{}), Value(true));
  EXPECT_EQ(spec.launch.dynamic_shared_bytes.evaluate(std::map<std::string, Value>{}), Value(std::int64_t{0}));
}

TEST(YamlReader, PlainScalarsFollowTheCoreSchemaAndQuotedOnesAreStrings) {
  const YAML::Node root = YAML::Load("{a: 12, b: '12', c: True, d: -2.5, e: ~, f: row}");
  using Kind = spec_loading::ScalarValue::Kind;
  EXPECT_EQ(spec_loading::classify(root["a"]).kind, Kind::integer);
  EXPECT_EQ(spec_loading::classify(root["a"]).integer, 12);
  EXPECT_EQ(spec_loading::classify(root["b"]).kind, Kind::string);
  EXPECT_EQ(spec_loading::classify(root["c"]).kind, Kind::boolean);
  EXPECT_TRUE(spec_loading::classify(root["c"]).boolean);
  EXPECT_EQ(spec_loading::classify(root["d"]).real, -2.5);
  EXPECT_EQ(spec_loading::classify(root["e"]).kind, Kind::null);
  EXPECT_EQ(spec_loading::classify(root["f"]).kind, Kind::string);
}

TEST(YamlReader, QuotedTextStartsOneColumnAfterTheQuote) {
  const std::string text = "a: \"x + 1\"\nb: y\n";
  spec_loading::Document document(text, "t.yaml");
  const YAML::Node root = document.root();
  EXPECT_EQ(document.where(root["a"]).to_string(), "t.yaml:1:4");
  EXPECT_EQ(document.text_start(root["a"]).to_string(), "t.yaml:1:5");
  EXPECT_EQ(document.text_start(root["b"]).to_string(), "t.yaml:2:4");
}

TEST(YamlReader, ReadNameRejectsWordsOfTheExpressionLanguage) {
  const std::string text = "a: and\nb: 2x\n";
  spec_loading::Document document(text, "t.yaml");
  const YAML::Node root = document.root();
  EXPECT_EQ(input_error_of([&] { spec_loading::read_name(document, root["a"], "the name"); }),
            "t.yaml:1:4: the name 'and' is a word of the expression language; choose another name");
  EXPECT_EQ(input_error_of([&] { spec_loading::read_name(document, root["b"], "the name"); }).rfind("t.yaml:2:4: the name '2x' is not a name", 0),
            0u);
}

}  // namespace
}  // namespace kernlathe
