#include "tuner/expr/expression.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kernlathe::InputError;
using kernlathe::SourceLocation;
using kernlathe::expr::closest_match;
using kernlathe::expr::EvaluationError;
using kernlathe::expr::Expression;
using kernlathe::expr::Scope;
using kernlathe::expr::Value;
using Environment = std::map<std::string, Value>;

Value I(std::int64_t value) { return Value{value}; }
Value F(double value) { return Value{value}; }
Value B(bool value) { return Value{value}; }
Value S(const char* value) { return Value{std::string(value)}; }

Value evaluate(const std::string& text, const Environment& environment = {}) {
  return Expression::parse(text).evaluate(environment);
}

// The message of the EvaluationError that evaluating text throws, or a failure when it does not throw.
std::string evaluation_error(const std::string& text, const Environment& environment = {}) {
  try {
    Value value = evaluate(text, environment);
    ADD_FAILURE() << text << " evaluated to " << kernlathe::expr::to_string(value) << " instead of throwing";
  } catch (const EvaluationError& error) {
    return error.what();
  }
  return "";
}

InputError parse_error(const std::string& text, const SourceLocation& where = {}) {
  try {
    Expression::parse(text, where);
  } catch (const EvaluationError& error) {
    ADD_FAILURE() << text << ": syntax errors must not be EvaluationErrors: " << error.what();
  } catch (const InputError& error) {
    return error;
  }
  ADD_FAILURE() << text << " parsed";
  return InputError("no error");
}

struct Case {
  const char* text;
  Value expected;
};

void expect_cases(const std::vector<Case>& cases, const Environment& environment = {}) {
  for (const auto& [text, expected] : cases) {
    Value actual = evaluate(text, environment);
    // Value's == compares the alternative too, so 4 and 4.0 differ here as type(4) and type(4.0) do in Python.
    EXPECT_EQ(actual, expected) << text << " gave " << kernlathe::expr::type_name(actual) << " "
                                << kernlathe::expr::to_string(actual);
  }
}

TEST(ExpressionPrecedence, FollowsPython) {
  expect_cases({
      {"1 + 2 * 3", I(7)},
      {"(1 + 2) * 3", I(9)},
      {"2 * 3 ** 2", I(18)},
      {"-2 ** 2", I(-4)},
      {"(-2) ** 2", I(4)},
      {"2 * -3 ** 2", I(-18)},
      {"2 ** -1", F(0.5)},
      {"2 ** 3 ** 2", I(512)},
      {"(2 ** 3) ** 2", I(64)},
      {"10 - 4 - 3", I(3)},
      {"100 // 10 // 3", I(3)},
      {"6 / 3 * 2", F(4.0)},
      {"7 - -2", I(9)},
      {"-3 % 5", I(2)},
      {"2 + 3 < 6", B(true)},
      {"not 1 == 2", B(true)},
      {"not 1 + 1 == 3", B(true)},
      {"not 0 and 0", B(false)},
      {"1 or 0 and 0", B(true)},
      {"(1 or 0) and 0", B(false)},
      {"1 + 2 if 0 else 5", I(5)},
      {"1 if 0 else 2 if 0 else 3", I(3)},
      {"1 if 1 else 2 if 0 else 3", I(1)},
      {"1 < 2 == True", B(false)},  // chained: 1 < 2 and 2 == True
      {"True + True", I(2)},
      {"- - 3", I(3)},
      {"+True", I(1)},
  });
}

TEST(ExpressionArithmetic, FloorDivisionAndModuloFollowPythonOnEverySign) {
  expect_cases({
      {"7 // 2", I(3)},     {"7 % 2", I(1)},      {"-7 // 2", I(-4)},   {"-7 % 2", I(1)},
      {"7 // -2", I(-4)},   {"7 % -2", I(-1)},    {"-7 // -2", I(3)},   {"-7 % -2", I(-1)},
      {"-6 // 2", I(-3)},   {"-6 % 2", I(0)},     {"6 % -3", I(0)},     {"0 // -5", I(0)},
      {"-7.0 // 2", F(-4.0)}, {"-7.5 % 2", F(0.5)}, {"7.5 % -2", F(-0.5)}, {"7 // 0.5", F(14.0)},
      {"7.5 // -2", F(-4.0)}, {"-9223372036854775807 - 1 // 1", I(-9223372036854775807 - 1)},
      {"(-9223372036854775807 - 1) % -1", I(0)},
  });
}

TEST(ExpressionArithmetic, TrueDivisionIsFloat) {
  expect_cases({{"6 / 3", F(2.0)}, {"7 / 2", F(3.5)}, {"-7 / 2", F(-3.5)}, {"1 / 4.0", F(0.25)}});
}

TEST(ExpressionArithmetic, PowerIsRightAssociativeAndNegativeExponentsGiveFloats) {
  expect_cases({
      {"2 ** 10", I(1024)},
      {"2 ** -2", F(0.25)},
      {"(-2) ** 3", I(-8)},
      {"0 ** 0", I(1)},
      {"4 ** 0.5", F(2.0)},
      {"2.0 ** 3", F(8.0)},
      {"2 ** 62", I(std::int64_t{1} << 62)},
      {"(-2) ** 63", I(std::numeric_limits<std::int64_t>::min())},
      {"-2 ** -2", F(-0.25)},
  });
}

TEST(ExpressionArithmetic, IntegerOverflowIsAnEvaluationError) {
  EXPECT_NE(evaluation_error("2 ** 63").find("integer overflow"), std::string::npos);
  EXPECT_NE(evaluation_error("x * x", {{"x", I(std::int64_t{1} << 32)}}).find("integer overflow"), std::string::npos);
  EXPECT_NE(evaluation_error("9223372036854775807 + 1").find("integer overflow"), std::string::npos);
  EXPECT_NE(evaluation_error("-x - 2", {{"x", I(std::numeric_limits<std::int64_t>::max())}}).find("overflow"),
            std::string::npos);
  EXPECT_NE(evaluation_error("-x", {{"x", I(std::numeric_limits<std::int64_t>::min())}}).find("overflow"),
            std::string::npos);
  EXPECT_NE(evaluation_error("(-9223372036854775807 - 1) // -1").find("overflow"), std::string::npos);
}

TEST(ExpressionComparison, ChainsLikePython) {
  const char* text = "32 <= a * b <= 1024";
  EXPECT_EQ(evaluate(text, {{"a", I(4)}, {"b", I(8)}}), B(true));
  EXPECT_EQ(evaluate(text, {{"a", I(4)}, {"b", I(300)}}), B(false));
  EXPECT_EQ(evaluate(text, {{"a", I(1)}, {"b", I(16)}}), B(false));
  expect_cases({
      {"1 < 2 < 3 > 2", B(true)},
      {"1 < 3 < 2", B(false)},
      {"3 > 2 > 1 == 1", B(true)},
      {"1 == 1.0 == True", B(true)},
      {"2 ** 53 + 1 == 2.0 ** 53", B(false)},  // exact int/float comparison, as Python does
      {"2 ** 53 + 1 > 2.0 ** 53", B(true)},
      {"'a' == 1", B(false)},
      {"'a' != 1", B(true)},
      {"'row' == \"row\"", B(true)},
      {"'abc' < 'abd'", B(true)},
      {"float('nan') == float('nan')", B(false)},
      {"float('nan') != float('nan')", B(true)},
      {"1 < float('nan')", B(false)},
  });
}

TEST(ExpressionLogic, ShortCircuits) {
  const char* guarded = "x != 0 and 10 // x > 1";
  EXPECT_EQ(evaluate(guarded, {{"x", I(0)}}), B(false));
  EXPECT_EQ(evaluate(guarded, {{"x", I(2)}}), B(true));
  EXPECT_EQ(evaluate(guarded, {{"x", I(20)}}), B(false));
  EXPECT_EQ(evaluate("x == 0 or 10 % x == 0", {{"x", I(0)}}), B(true));
  expect_cases({
      {"False and 1 // 0", B(false)},
      {"True or 1 // 0", B(true)},
      // Documented difference from Python: and/or give a boolean, not the deciding operand.
      {"3 and 5", B(true)},
      {"0 or ''", B(false)},
      {"not ''", B(true)},
      {"not 'x'", B(false)},
      {"not 0.0", B(true)},
  });
  EXPECT_NE(evaluation_error("True and 1 // 0").find("division by zero"), std::string::npos);
}

TEST(ExpressionLogic, ConditionalEvaluatesOnlyTheChosenBranch) {
  const char* text = "10 // x if x != 0 else -1";
  EXPECT_EQ(evaluate(text, {{"x", I(0)}}), I(-1));
  EXPECT_EQ(evaluate(text, {{"x", I(3)}}), I(3));
  EXPECT_EQ(evaluate("'row' if layout == 0 else 'col'", {{"layout", I(1)}}), S("col"));
}

TEST(ExpressionMembership, InAndNotIn) {
  Environment environment{{"x", I(4)}, {"layout", S("row")}, {"a", I(2)}};
  expect_cases(
      {
          {"x in [1, 2, 4]", B(true)},
          {"x in [1, 2, 8]", B(false)},
          {"x not in (1, 2)", B(true)},
          {"x not in (4,)", B(false)},
          {"x in []", B(false)},
          {"x in (4)", B(true)},
          {"layout in ['row', 'col']", B(true)},
          {"layout in ['col']", B(false)},
          {"4.0 in [4]", B(true)},
          {"True in [1]", B(true)},
          {"x in [a, a * 2]", B(true)},
          {"not x in [4]", B(false)},
          {"x + 1 in [5] and a in [2]", B(true)},
      },
      environment);
  // Python builds the whole list before testing membership, so a failing element fails the test.
  EXPECT_NE(evaluation_error("1 in [1, 1 // 0]").find("division by zero"), std::string::npos);
}

TEST(ExpressionFunctions, EveryFunction) {
  expect_cases({
      {"min(3, 1, 2)", I(1)},
      {"max(1, 2.5)", F(2.5)},
      {"max(2, 2.0)", I(2)},  // the first of equal candidates, as Python's max
      {"min(2.0, 2)", F(2.0)},
      {"min('b', 'a')", S("a")},
      {"abs(-3)", I(3)},
      {"abs(-2.5)", F(2.5)},
      {"abs(True)", I(1)},
      {"ceil_div(7, 2)", I(4)},
      {"ceil_div(8, 2)", I(4)},
      {"ceil_div(-7, 2)", I(-3)},
      {"ceil_div(7, -2)", I(-3)},
      {"ceil_div(-7, -2)", I(4)},
      {"ceil_div(0, 5)", I(0)},
      {"ceil_div(7.0, 2)", I(4)},
      {"floor(2.7)", I(2)},
      {"floor(-2.5)", I(-3)},
      {"floor(5)", I(5)},
      {"ceil(2.1)", I(3)},
      {"ceil(-2.5)", I(-2)},
      {"log2(8)", F(3.0)},
      {"log2(0.5)", F(-1.0)},
      {"ilog2(1)", I(0)},
      {"ilog2(1000)", I(9)},
      {"ilog2(1024)", I(10)},
      {"ilog2(2.5)", I(1)},
      {"is_pow2(64)", B(true)},
      {"is_pow2(96)", B(false)},
      {"is_pow2(0)", B(false)},
      {"is_pow2(-4)", B(false)},
      {"is_pow2(8.0)", B(true)},
      {"is_pow2(8.5)", B(false)},
      {"int(2.9)", I(2)},
      {"int(-2.9)", I(-2)},
      {"int(' 42 ')", I(42)},
      {"int(True)", I(1)},
      {"float(3)", F(3.0)},
      {"float('2.5')", F(2.5)},
      {"round(2.5)", I(2)},  // half to even
      {"round(3.5)", I(4)},
      {"round(-0.5)", I(0)},
      {"round(2.6)", I(3)},
      {"round(7)", I(7)},
      {"sqrt(16)", F(4.0)},
  });
  EXPECT_DOUBLE_EQ(std::get<double>(evaluate("log2(10)")), 3.321928094887362);
  EXPECT_DOUBLE_EQ(std::get<double>(evaluate("sqrt(2)")), 1.4142135623730951);
}

TEST(ExpressionErrors, EvaluationErrorsNameTheExpressionAndTheOperation) {
  std::string message = evaluation_error("x > 0 and 10 // y > 1", {{"x", I(1)}, {"y", I(0)}});
  EXPECT_NE(message.find("'x > 0 and 10 // y > 1'"), std::string::npos) << message;
  EXPECT_NE(message.find("integer division by zero"), std::string::npos) << message;
  EXPECT_NE(message.find("'10 // y'"), std::string::npos) << message;
  EXPECT_NE(message.find("y = 0"), std::string::npos) << message;

  struct Failure {
    const char* text;
    const char* problem;
  };
  for (const auto& [text, problem] : std::vector<Failure>{
           {"1 % 0", "modulo by zero"},
           {"1 / 0", "division by zero"},
           {"1.0 // 0", "division by zero"},
           {"2.5 % 0.0", "modulo by zero"},
           {"'a' + 1", "unsupported operand types for +: string and integer"},
           {"1 * 'a'", "unsupported operand types for *: integer and string"},
           {"'a' < 1", "'<' not supported between string and integer"},
           {"-'a'", "bad operand type for unary -: string"},
           {"log2(0)", "math domain error"},
           {"log2(-1)", "math domain error"},
           {"ilog2(0)", "math domain error"},
           {"sqrt(-1)", "math domain error"},
           {"int('abc')", "invalid literal for int()"},
           {"float('x')", "could not convert string to float"},
           {"int(float('inf'))", "cannot convert float infinity to integer"},
           {"floor(float('nan'))", "cannot convert float NaN to integer"},
           {"ceil_div(1, 0)", "division by zero"},
           {"0 ** -1", "0 cannot be raised to a negative power"},
           {"(-8) ** (1 / 3)", "complex"},
           {"10.0 ** 400", "float overflow"},
           {"abs('a')", "bad operand type for abs()"},
       }) {
    std::string text_message = evaluation_error(text);
    EXPECT_NE(text_message.find(problem), std::string::npos) << text << ": " << text_message;
  }
}

TEST(ExpressionErrors, EvaluationErrorCarriesTheExpressionLocation) {
  auto expression = Expression::parse("a // b", {"space.yaml", 12, 5});
  Scope scope;
  scope.add("a");
  scope.add("b");
  expression.bind(scope);
  std::vector<Value> values{I(1), I(0)};
  try {
    expression.evaluate(values);
    FAIL() << "no error";
  } catch (const EvaluationError& error) {
    EXPECT_EQ(error.where().line, 12);
    EXPECT_EQ(error.where().column, 5);
    EXPECT_EQ(std::string(error.what()).rfind("space.yaml:12:5: ", 0), 0u) << error.what();
  }
}

TEST(ExpressionErrors, SyntaxErrorsReportTheColumn) {
  SourceLocation where{"spec.yaml", 3, 10};
  struct Expected {
    const char* text;
    int offset;
    const char* message;
  };
  for (const auto& [text, offset, message] : std::vector<Expected>{
           {"a + * b", 4, "expected an operand (a number, a name, a call or '('), found '*'"},
           {"(a + b", 6, "expected ')' to close the '(' at column 10, found the end of the expression"},
           {"a = b", 2, "'=' is not an operator here; compare with '=='"},
           {"a && b", 2, "use 'and'"},
           {"a b", 2, "expected an operator or the end of the expression, found 'b'"},
           {"1 if a", 6, "expected 'else'"},
           {"x in 3", 5, "expected a list such as [1, 2, 4] after 'in', found '3'"},
           {"max(1)", 0, "max() takes at least 2 arguments, got 1"},
           {"ceil_div(1, 2, 3)", 0, "ceil_div() takes 2 arguments, got 3"},
           {"abs()", 0, "abs() takes 1 argument, got 0"},
           {"a + mx(a, b)", 4, "unknown function 'mx'; did you mean 'max'?"},
           {"a $ b", 2, "unexpected character '$'"},
           {"'abc", 0, "unterminated string"},
           {"", 0, "empty expression"},
           {"007", 0, "leading zeros"},
           {"99999999999999999999", 0, "does not fit in 64 bits"},
           {"a[b]", 2, "expected an integer index"},
           {"x in [1, 2] == True", 12, "a comparison cannot follow 'in [...]'"},
       }) {
    InputError error = parse_error(text, where);
    EXPECT_EQ(error.where().file, "spec.yaml") << text;
    EXPECT_EQ(error.where().line, 3) << text;
    EXPECT_EQ(error.where().column, 10 + offset) << text << ": " << error.what();
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << text << ": " << error.what();
    EXPECT_NE(std::string(error.what()).find(fmt::format("'{}'", text)), std::string::npos) << error.what();
  }
}

TEST(ExpressionErrors, SyntaxErrorWithoutLocationCountsColumnsFromOne) {
  InputError error = parse_error("1 +");
  EXPECT_EQ(error.where().column, 4);
  EXPECT_NE(std::string(error.what()).find("found the end of the expression"), std::string::npos) << error.what();
}

TEST(ExpressionErrors, SyntaxErrorOnALaterLineOfAMultiLineExpression) {
  InputError error = parse_error("a +\n  * b", {"spec.yaml", 7, 3});
  EXPECT_EQ(error.where().line, 8);
  EXPECT_EQ(error.where().column, 3);
}

TEST(ExpressionErrors, DeepNestingIsAnInputErrorNotACrash) {
  std::string deep = std::string(5000, '(') + "1" + std::string(5000, ')');
  EXPECT_NE(std::string(parse_error(deep).what()).find("nested more than"), std::string::npos);
  EXPECT_NE(std::string(parse_error(std::string(5000, '-') + "1").what()).find("nested more than"), std::string::npos);
  std::string long_sum = "1";
  for (int i = 0; i < 5000; ++i) long_sum += " + 1";
  EXPECT_NE(std::string(parse_error(long_sum).what()).find("nested more than"), std::string::npos);
  // Within the limit, nesting is fine.
  EXPECT_EQ(evaluate(std::string(50, '(') + "1" + std::string(50, ')')), I(1));
}

TEST(ExpressionBind, UnknownNameSuggestsTheClosest) {
  Scope scope;
  scope.add("BLOCK");
  scope.add("n");
  auto expression = Expression::parse("BLOKC * 2", {"spec.yaml", 4, 7});
  try {
    expression.bind(scope);
    FAIL() << "bound";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "spec.yaml:4:7: unknown name 'BLOKC' in 'BLOKC * 2'; did you mean 'BLOCK'?");
    EXPECT_EQ(error.where().line, 4);
    EXPECT_EQ(error.where().column, 7);
  }
  EXPECT_FALSE(expression.bound());
  try {
    Expression::parse("n + zzz").bind(scope);
    FAIL() << "bound";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "unknown name 'zzz' in 'n + zzz'; known names are BLOCK, n");
  }
}

TEST(ExpressionBind, SlotsFollowTheScope) {
  Scope scope;
  EXPECT_EQ(scope.add("b"), 0);
  EXPECT_EQ(scope.add("a"), 1);
  EXPECT_EQ(scope.add("b"), 0);
  EXPECT_EQ(scope.slot_of("a"), 1);
  EXPECT_EQ(scope.slot_of("c"), -1);
  EXPECT_EQ(scope.size(), 2u);

  auto expression = Expression::parse("a - b");
  auto copy = expression;
  expression.bind(scope);
  EXPECT_TRUE(expression.bound());
  std::vector<Value> values{I(10), I(3)};  // b = 10, a = 3
  EXPECT_EQ(expression.evaluate(values), I(-7));
  EXPECT_EQ(expression.evaluate_integer(values), -7);
  EXPECT_DOUBLE_EQ(expression.evaluate_number(values), -7.0);
  EXPECT_TRUE(expression.evaluate_bool(values));
  // Binding one copy leaves the other unbound.
  EXPECT_FALSE(copy.bound());
  EXPECT_THROW(copy.evaluate(values), kernlathe::TunerError);
}

TEST(ExpressionBind, AFailedBindLeavesTheExpressionAsParsed) {
  Scope partial;
  partial.add("a");
  // Deeper than the compiled program's stack, so evaluated by walking the tree, which reads the slots a bind sets:
  // after a failed bind the product must not read `a` and short-circuit past `zzz` as if bound.
  std::string product = "(a - a + 1)";
  for (int level = 0; level < 70; ++level) product = "(a - a + 1) * (" + product + ")";
  for (const std::string& text : {std::string("a + zzz"), product + " or zzz"}) {
    Expression expression = Expression::parse(text);
    EXPECT_THROW(expression.bind(partial), InputError) << text;
    EXPECT_FALSE(expression.bound());
    try {
      expression.evaluate(std::vector<Value>{I(5), I(5)});
      ADD_FAILURE() << text << " evaluated after a failed bind";
    } catch (const kernlathe::TunerError& error) {
      EXPECT_NE(std::string(error.what()).find("before bind()"), std::string::npos) << error.what();
    }
    Scope full;
    full.add("zzz");
    full.add("a");
    expression.bind(full);
    EXPECT_EQ(expression.evaluate(std::vector<Value>{I(40), I(2)}), text == "a + zzz" ? I(42) : B(true)) << text;
  }
}

TEST(ExpressionBind, ParseWithAScopeIsParseThenBind) {
  Scope scope;
  scope.add("BLOCK");
  scope.add("n");
  const std::vector<Value> values{I(256), I(1000)};
  for (const char* text : {"ceil_div(n, BLOCK) * BLOCK", "BLOCK if n > 512 else 2 * BLOCK", "n % BLOCK == 0 or n in [1, 2]"}) {
    Expression separately = Expression::parse(text);
    separately.bind(scope);
    Expression at_once = Expression::parse(text, scope);
    EXPECT_TRUE(at_once.bound());
    EXPECT_EQ(at_once.evaluate(values), separately.evaluate(values)) << text;
    EXPECT_EQ(at_once.to_string(), separately.to_string());
    EXPECT_EQ(at_once.names(), separately.names());
  }
  auto message = [&](const std::string& text) {
    try {
      Expression::parse(text, scope, {"spec.yaml", 4, 7});
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("(parsed and bound)");
  };
  // Syntax first, then names, with the messages parse and bind give.
  EXPECT_EQ(message("BLOKC * 2"), "spec.yaml:4:7: unknown name 'BLOKC' in 'BLOKC * 2'; did you mean 'BLOCK'?");
  EXPECT_EQ(message("BLOKC * "), std::string(parse_error("BLOKC * ", {"spec.yaml", 4, 7}).what()));
}

TEST(ExpressionBind, EvaluateIntegerAcceptsWholeFloatsOnly) {
  Scope scope;
  scope.add("x");
  auto grid = Expression::parse("262144 / x");
  grid.bind(scope);
  std::vector<Value> values{I(32)};
  EXPECT_EQ(grid.evaluate_integer(values), 8192);
  values[0] = I(3);
  EXPECT_THROW(grid.evaluate_integer(values), EvaluationError);
  auto text = Expression::parse("'row'");
  EXPECT_THROW(text.evaluate_integer({}), EvaluationError);
  EXPECT_THROW(text.evaluate_number({}), EvaluationError);
  EXPECT_TRUE(text.evaluate_bool({}));
}

TEST(ExpressionBind, ClosestMatch) {
  EXPECT_EQ(closest_match("tile_sise_x", {"tile_size_y", "tile_size_x"}), "tile_size_x");
  EXPECT_EQ(closest_match("foo", {"bar", "baz"}), "");
  EXPECT_EQ(closest_match("ab", {"abc"}), "abc");        // distance 1 <= max(1, 2 / 3)
  EXPECT_EQ(closest_match("ab", {"abcd"}), "");          // distance 2 > 1
  EXPECT_EQ(closest_match("BLOKC", {"BLOCK"}), "BLOCK");    // a swap of neighbours is one edit
  EXPECT_EQ(closest_match("BKOLC", {"BLOCK"}), "");         // two swaps are two
  EXPECT_EQ(closest_match("blocksize", {"block_size_x", "blocksize_"}), "blocksize_");
  EXPECT_EQ(closest_match("block_size", {"BLOCK_SIZE"}), "BLOCK_SIZE");  // case only
  EXPECT_EQ(closest_match("x", {}), "");
}

TEST(ExpressionText, NamesAreSortedUniqueWithoutFunctions) {
  EXPECT_EQ(Expression::parse("b + a * b + max(a, c) if d in [e, 1] else log2(f)").names(),
            (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));
  EXPECT_EQ(Expression::parse("ProblemSize[0] * ProblemSize[1]").names(),
            (std::vector<std::string>{"ProblemSize[0]", "ProblemSize[1]"}));
  EXPECT_TRUE(Expression::parse("1 + 2").names().empty());
  EXPECT_TRUE(Expression().names().empty());
}

TEST(ExpressionText, CanonicalFormAddsParenthesesOnlyWhereNeeded) {
  struct Canonical {
    const char* text;
    const char* canonical;
  };
  for (const auto& [text, canonical] : std::vector<Canonical>{
           {"(a+b)*c", "(a + b) * c"},
           {"a-(b-c)", "a - (b - c)"},
           {"(a-b)-c", "a - b - c"},
           {"-(2**2)", "-2 ** 2"},
           {"(-2)**2", "(-2) ** 2"},
           {"2**(3**2)", "2 ** 3 ** 2"},
           {"(2**3)**2", "(2 ** 3) ** 2"},
           {"2**-x", "2 ** -x"},
           {"not (a and b)", "not (a and b)"},
           {"(not a) and b", "not a and b"},
           {"(a if b else c) if d else e", "(a if b else c) if d else e"},
           {"a if b else (c if d else e)", "a if b else c if d else e"},
           {"x in (1,2)", "x in [1, 2]"},
           {"x not in [ ]", "x not in []"},
           {"(a < b) == c", "(a < b) == c"},
           {"a < b == c", "a < b == c"},
           {"(a or b) or c", "(a or b) or c"},
           {"a*(b//c)", "a * (b // c)"},
           {"'it\\'s' == \"x\"", "'it\\'s' == 'x'"},
           {"True != False", "True != False"},
           {"1.0 + .5 + 1e3 + 2.5e-3", "1.0 + 0.5 + 1000.0 + 0.0025"},
           {"0x10 + 0b11", "16 + 3"},
           {"max(a,b, c)", "max(a, b, c)"},
           {"ProblemSize[0]", "ProblemSize[0]"},
       }) {
    EXPECT_EQ(Expression::parse(text).to_string(), canonical) << text;
  }
  EXPECT_EQ(Expression::constant(I(-3)).to_string(), "-3");
  EXPECT_EQ(Expression::constant(F(2.0)).to_string(), "2.0");
  EXPECT_EQ(Expression::constant(S("row")).to_string(), "'row'");
  EXPECT_EQ(Expression::constant(B(true)).to_string(), "True");
}

TEST(ExpressionText, RoundTripEvaluatesTheSameOnManyInputs) {
  const std::vector<std::string> texts{
      "use_shmem == 0 or (block_size_x*tile_size_x + 14) * (block_size_y*tile_size_y + 14) < 12*1024",
      "a - (b - c) * -a ** 2 // (c or 1)",
      "a % b if b != 0 else a ** 2 - c",
      "32 <= a * b <= 1024 and not c in [0, 1, a]",
      "-a ** -b if a != 0 else 0",
      "(a if b else c) + (a if not b else -c) * 2",
      "max(a, b, -c) - min(a / (b or 1), c) + abs(a - b)",
      "ceil_div(a, b or 1) * floor(a / 3) + ceil(c / 2) - round(a / 4)",
      "(a < b) + (b < c) == (a != c)",
      "a ** 2 ** 2 % 7 - (-a) ** 3",
      "int(a / 2) + float(b) - ilog2(abs(c) + 1) + (is_pow2(a) and sqrt(abs(b)) > 1)",
  };
  const std::vector<std::int64_t> samples{-3, -2, -1, 0, 1, 2, 3, 7};
  for (const auto& text : texts) {
    auto original = Expression::parse(text);
    auto reparsed = Expression::parse(original.to_string());
    EXPECT_EQ(reparsed.to_string(), original.to_string()) << text;
    int compared = 0;
    for (auto a : samples) {
      for (auto b : samples) {
        for (auto c : samples) {
          Environment environment{{"a", I(a)}, {"b", I(b)}, {"c", I(c)}, {"use_shmem", I(a & 1)},
                                  {"block_size_x", I(a * 32)}, {"block_size_y", I(b + 4)},
                                  {"tile_size_x", I(c + 4)},   {"tile_size_y", I(2)}};
          std::string first;
          std::string second;
          try {
            first = kernlathe::expr::type_name(original.evaluate(environment)) + " " +
                    kernlathe::expr::to_string(original.evaluate(environment));
          } catch (const EvaluationError&) {
            first = "error";
          }
          try {
            second = kernlathe::expr::type_name(reparsed.evaluate(environment)) + " " +
                     kernlathe::expr::to_string(reparsed.evaluate(environment));
          } catch (const EvaluationError&) {
            second = "error";
          }
          EXPECT_EQ(first, second) << text << " with a=" << a << " b=" << b << " c=" << c;
          compared += first != "error";
        }
      }
    }
    EXPECT_GT(compared, 100) << text << " failed on almost every input, so the round trip was not exercised";
  }
}

TEST(ExpressionValues, ToStringTypeNameTruthyEquality) {
  EXPECT_EQ(kernlathe::expr::to_string(I(3)), "3");
  EXPECT_EQ(kernlathe::expr::to_string(F(2.5)), "2.5");
  EXPECT_EQ(kernlathe::expr::to_string(F(2.0)), "2.0");
  EXPECT_EQ(kernlathe::expr::to_string(B(true)), "true");
  EXPECT_EQ(kernlathe::expr::to_string(S("row")), "row");
  EXPECT_EQ(kernlathe::expr::type_name(I(3)), "integer");
  EXPECT_EQ(kernlathe::expr::type_name(F(3)), "float");
  EXPECT_EQ(kernlathe::expr::type_name(B(false)), "boolean");
  EXPECT_EQ(kernlathe::expr::type_name(S("")), "string");
  EXPECT_FALSE(kernlathe::expr::truthy(I(0)));
  EXPECT_TRUE(kernlathe::expr::truthy(F(0.1)));
  EXPECT_FALSE(kernlathe::expr::truthy(S("")));
  EXPECT_TRUE(kernlathe::expr::operator_equal(I(1), F(1.0)));
  EXPECT_TRUE(kernlathe::expr::operator_equal(I(1), B(true)));
  EXPECT_FALSE(kernlathe::expr::operator_equal(I(1), S("1")));
  EXPECT_TRUE(kernlathe::expr::operator_equal(S("a"), S("a")));
}

TEST(ExpressionValues, ConstantEvaluatesWithoutBind) {
  EXPECT_EQ(Expression::constant(I(7)).evaluate(std::span<const Value>{}), I(7));
  EXPECT_EQ(Expression::constant(S("row")).evaluate(std::span<const Value>{}), S("row"));
  EXPECT_TRUE(Expression::constant(I(7)).bound());
  EXPECT_TRUE(Expression().empty());
  EXPECT_THROW(Expression().evaluate(std::span<const Value>{}), kernlathe::TunerError);
}

// ------------------------------------------------------------------ T1 files of the community data sets
// (tests/data/t4/community: copies of Kernel Tuner benchmark hub files)

struct T1Space {
  Scope scope;
  std::vector<Value> defaults;
  nlohmann::json document;
};

T1Space load_t1(const std::string& name) {
  std::ifstream file(std::string(KERNLATHE_SOURCE_DIR) + "/tests/data/t4/community/" + name);
  EXPECT_TRUE(file.good()) << name;
  T1Space space;
  space.document = nlohmann::json::parse(file);
  for (const auto& parameter : space.document["ConfigurationSpace"]["TuningParameters"]) {
    space.scope.add(parameter["Name"].get<std::string>());
    space.defaults.emplace_back(std::in_place_type<std::int64_t>, parameter["Default"].get<std::int64_t>());
  }
  return space;
}

Value evaluate_on_defaults(T1Space& space, const std::string& text) {
  auto expression = Expression::parse(text, {"t1", 1, 1});
  expression.bind(space.scope);
  return expression.evaluate(space.defaults);
}

TEST(ExpressionT1, ConvolutionConstraintsAndSizesEvaluateAsPythonDoes) {
  T1Space space = load_t1("convolution.T1.json");
  const auto& conditions = space.document["ConfigurationSpace"]["Conditions"];
  ASSERT_EQ(conditions.size(), 4u);
  // Defaults: block_size_x = 16, block_size_y = 16, tile sizes 1, use_padding = 1, use_shmem = 1, filters 15.
  // 16 % 32 = 16 != 0; 16 * 16 = 256 <= 1024; use_shmem = 1 != 0; (16 + 14) * (16 + 14) = 900 < 12288.
  const std::vector<Value> expected{B(true), B(true), B(true), B(true)};
  for (std::size_t i = 0; i < conditions.size(); ++i) {
    EXPECT_EQ(evaluate_on_defaults(space, conditions[i]["Expression"].get<std::string>()), expected[i]) << i;
  }
  const auto& kernel = space.document["KernelSpecification"];
  // 262144 // 16 // 1 = 16384 in both dimensions.
  const std::map<std::string, Value> sizes{{"X", I(16384)}, {"Y", I(16384)}, {"Z", I(1)}};
  for (const auto& [axis, value] : sizes) {
    EXPECT_EQ(evaluate_on_defaults(space, kernel["GlobalSize"][axis].get<std::string>()), value) << axis;
  }
  EXPECT_EQ(evaluate_on_defaults(space, kernel["LocalSize"]["X"].get<std::string>()), I(16));
  EXPECT_EQ(evaluate_on_defaults(space, kernel["LocalSize"]["Y"].get<std::string>()), I(16));
  EXPECT_EQ(evaluate_on_defaults(space, kernel["LocalSize"]["Z"].get<std::string>()), I(1));
}

TEST(ExpressionT1, DedispersionConstraintsAndSizesEvaluateAsPythonDoes) {
  T1Space space = load_t1("dedispersion.T1.json");
  const auto& conditions = space.document["ConfigurationSpace"]["Conditions"];
  ASSERT_EQ(conditions.size(), 3u);
  // Defaults: block_size_x = 16, block_size_y = 32, tile sizes 1, tile strides 1.
  // 32 <= 512 <= 1024; 1 > 1 is false and stride 1 == 0 is false, twice.
  const std::vector<Value> expected{B(true), B(false), B(false)};
  for (std::size_t i = 0; i < conditions.size(); ++i) {
    EXPECT_EQ(evaluate_on_defaults(space, conditions[i]["Expression"].get<std::string>()), expected[i]) << i;
  }
  const auto& kernel = space.document["KernelSpecification"];
  EXPECT_EQ(evaluate_on_defaults(space, kernel["GlobalSize"]["X"].get<std::string>()), I(16384));  // 262144 // 16
  EXPECT_EQ(evaluate_on_defaults(space, kernel["GlobalSize"]["Y"].get<std::string>()), I(8192));   // 262144 // 32
  EXPECT_EQ(evaluate_on_defaults(space, kernel["GlobalSize"]["Z"].get<std::string>()), I(1));
  EXPECT_EQ(evaluate_on_defaults(space, kernel["LocalSize"]["Y"].get<std::string>()), I(32));
}

TEST(ExpressionT1, ArgumentSizesParseExceptSingleArgumentMax) {
  // The argument sizes read ProblemSize[i] (one variable each here) and, in convolution, max(filter_width):
  // T1's "largest value of the parameter", which is not Python and is refused at parse time.
  for (const char* name : {"convolution.T1.json", "dedispersion.T1.json"}) {
    T1Space space = load_t1(name);
    const auto& problem_size = space.document["KernelSpecification"]["ProblemSize"];
    for (std::size_t i = 0; i < problem_size.size(); ++i) {
      space.scope.add(fmt::format("ProblemSize[{}]", i));
      space.defaults.emplace_back(std::in_place_type<std::int64_t>, problem_size[i].get<std::int64_t>());
    }
    for (const auto& argument : space.document["KernelSpecification"]["Arguments"]) {
      std::string size = argument["Size"].is_string() ? argument["Size"].get<std::string>()
                                                      : std::to_string(argument["Size"].get<std::int64_t>());
      if (size.find("max(") != std::string::npos) {
        EXPECT_NE(std::string(parse_error(size).what()).find("max() takes at least 2 arguments"), std::string::npos);
        continue;
      }
      EXPECT_NO_THROW(evaluate_on_defaults(space, size)) << size;
    }
  }
  T1Space convolution = load_t1("convolution.T1.json");
  convolution.scope.add("ProblemSize[0]");
  convolution.scope.add("ProblemSize[1]");
  convolution.defaults.push_back(I(4096));
  convolution.defaults.push_back(I(4096));
  EXPECT_EQ(evaluate_on_defaults(convolution, "ProblemSize[0]*ProblemSize[1]"), I(4096 * 4096));
}

}  // namespace
