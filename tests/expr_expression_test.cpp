#include <gtest/gtest.h>
#include "tuner/expr/expression.h"
TEST(Expression, Smoke) { EXPECT_EQ(std::get<std::int64_t>(tuner::expr::Expression::parse("1 + 2").evaluate(std::map<std::string, tuner::expr::Value>{})), 3); }
