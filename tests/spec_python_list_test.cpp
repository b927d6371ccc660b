// The Python value-list forms of community T1 files (tuner/spec/python_list.h), as published files write them.
#include <gtest/gtest.h>

#include <string>

#include "tuner/spec/python_list.h"

namespace kernlathe {
namespace {

using expr::Value;

std::vector<std::int64_t> integers(const std::string& text) {
  std::vector<std::int64_t> result;
  for (const Value& value : evaluate_python_list(text)) result.push_back(std::get<std::int64_t>(value));
  return result;
}

std::string message_of(const std::string& text) {
  try {
    evaluate_python_list(text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

TEST(PythonList, LiteralListsAsPublished) {
  EXPECT_EQ(integers("[16, 32, 48, 64]"), (std::vector<std::int64_t>{16, 32, 48, 64}));
  EXPECT_EQ(integers("[1]"), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(integers("[1, 2,]"), (std::vector<std::int64_t>{1, 2}));  // a trailing comma, as Python allows
  EXPECT_EQ(integers("(4, 8)"), (std::vector<std::int64_t>{4, 8}));
  EXPECT_EQ(integers("[2**5, 3*4, min(4, 9), 7 // 2]"), (std::vector<std::int64_t>{32, 12, 4, 3}));
  EXPECT_TRUE(evaluate_python_list("[]").empty());
}

TEST(PythonList, ComprehensionsAndRanges) {
  EXPECT_EQ(integers("[2**i for i in range(5)]"), (std::vector<std::int64_t>{1, 2, 4, 8, 16}));
  const std::vector<std::int64_t> one_to_32 = integers("list(range(1, 33))");
  ASSERT_EQ(one_to_32.size(), 32u);
  EXPECT_EQ(one_to_32.front(), 1);
  EXPECT_EQ(one_to_32.back(), 32);
  const std::vector<std::int64_t> multiples = integers("[i for i in range(16, 1025, 16)]");
  ASSERT_EQ(multiples.size(), 64u);
  EXPECT_EQ(multiples[1], 32);
  EXPECT_EQ(multiples.back(), 1024);
  EXPECT_EQ(integers("range(10, 0, -3)"), (std::vector<std::int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(integers("[i for i in range(1, 17) if 16 % i == 0]"), (std::vector<std::int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(integers("[32 * i for i in [1, 2, 4]]"), (std::vector<std::int64_t>{32, 64, 128}));
  EXPECT_EQ(integers("list(2 * i for i in range(3))"), (std::vector<std::int64_t>{0, 2, 4}));
  EXPECT_EQ(integers("[1, 2] + list(range(3, 5))"), (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(integers("tuple(range(2))"), (std::vector<std::int64_t>{0, 1}));
  // As the benchmark hub's hotspot file writes its block widths and unroll factors.
  const std::vector<std::int64_t> widths = integers("[1, 2, 4, 8, 16] + list(range(32, 1024+1, 32))");
  ASSERT_EQ(widths.size(), 37u);
  EXPECT_EQ(widths[4], 16);
  EXPECT_EQ(widths[5], 32);
  EXPECT_EQ(widths.back(), 1024);
  EXPECT_EQ(integers("[i for i in range(1, 10+1)]").size(), 10u);
}

TEST(PythonList, OtherValueTypes) {
  std::vector<Value> strings = evaluate_python_list("['row', \"column, major\"]");
  ASSERT_EQ(strings.size(), 2u);
  EXPECT_EQ(std::get<std::string>(strings[1]), "column, major");  // the comma inside the string is not a separator
  std::vector<Value> booleans = evaluate_python_list("[True, False]");
  ASSERT_EQ(booleans.size(), 2u);
  EXPECT_EQ(std::get<bool>(booleans[0]), true);
  std::vector<Value> reals = evaluate_python_list("[0.5, 1.0, 1 / 2]");
  ASSERT_EQ(reals.size(), 3u);
  EXPECT_DOUBLE_EQ(std::get<double>(reals[0]), 0.5);
  EXPECT_DOUBLE_EQ(std::get<double>(reals[2]), 0.5);
}

TEST(PythonList, WhatIsNotUnderstoodIsNamed) {
  EXPECT_NE(message_of("numpy.arange(4)").find("'numpy.arange' is not one of range, list, tuple"), std::string::npos)
      << message_of("numpy.arange(4)");
  EXPECT_NE(message_of("[i for i in rnage(4)]").find("'rnage' is not one of range"), std::string::npos);
  EXPECT_NE(message_of("[1, 2").find("']' is missing"), std::string::npos) << message_of("[1, 2");
  EXPECT_NE(message_of("range(1.5)").find("range() takes integers"), std::string::npos);
  EXPECT_NE(message_of("range(0, 10, 0)").find("step must not be zero"), std::string::npos);
  EXPECT_NE(message_of("[x for i in range(3)]").find("'x'"), std::string::npos) << message_of("[x for i in range(3)]");
  EXPECT_NE(message_of("[i * j for i in range(3) for j in range(2)]").find("more than one `for`"), std::string::npos);
  EXPECT_NE(message_of("16").find("this is not a list"), std::string::npos);
  EXPECT_NE(message_of("[1,, 2]").find("an element is empty"), std::string::npos);
  // Every message lists the forms that are understood.
  EXPECT_NE(message_of("16").find("[EXPR for NAME in LIST]"), std::string::npos);
  EXPECT_NE(message_of("range(10**7)").find("more than 1000000 values"), std::string::npos);
}

}  // namespace
}  // namespace kernlathe
