#include "tuner/analysis/covering_set.h"

#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

// Four problems, four configurations. Computed by hand (products of the per-problem fractions, fourth roots):
//   one column: 0: 1 * 0.5 * 0.9 * 0.6 = 0.27; 1: 0.6 * 1 * 0.5 * 0.9 = 0.27; 2: 0.9 * 0.6 * 1 * 0.4 = 0.216;
//     3: 0.8 * 0.9 * 0.4 * 1 = 0.288, the best mean (0.7326) although its worst problem is at 0.4
//   two columns: {0, 1}, {0, 3}, {1, 2} and {2, 3} each give two problems at 1 and two at 0.9: 0.81 -> 0.9487, worst
//     0.9; the tie goes to the lowest columns, {0, 1}
//   three columns: any three give three problems at 1 and one at 0.9 -> 0.9^(1/4) = 0.9740; {0, 1, 2} by the tie
const std::vector<std::vector<double>> matrix = {
    {1.0, 0.6, 0.9, 0.8},
    {0.5, 1.0, 0.6, 0.9},
    {0.9, 0.5, 1.0, 0.4},
    {0.6, 0.9, 0.4, 1.0},
};

TEST(CoveringSet, EvaluatesASetByItsBestColumnPerProblem) {
  const CoveringSet set = evaluate_covering_set(matrix, {3, 0});
  EXPECT_EQ(set.configurations, (std::vector<std::size_t>{0, 3}));
  EXPECT_EQ(set.served_by, (std::vector<std::size_t>{0, 3, 0, 3}));
  EXPECT_EQ(set.fractions, (std::vector<double>{1.0, 0.9, 0.9, 1.0}));
  EXPECT_NEAR(set.geometric_mean, std::pow(0.81, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(set.worst, 0.9);
}

TEST(CoveringSet, ChoosesTheHandComputedSetsForOneTwoAndThreeConfigurations) {
  const CoveringSet one = choose_covering_set(matrix, 1);
  EXPECT_EQ(one.configurations, (std::vector<std::size_t>{3}));
  EXPECT_NEAR(one.geometric_mean, std::pow(0.288, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(one.worst, 0.4);

  const CoveringSet two = choose_covering_set(matrix, 2);
  EXPECT_EQ(two.configurations, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(two.served_by, (std::vector<std::size_t>{0, 1, 0, 1}));
  EXPECT_NEAR(two.geometric_mean, std::pow(0.81, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(two.worst, 0.9);

  const CoveringSet three = choose_covering_set(matrix, 3);
  EXPECT_EQ(three.configurations, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_NEAR(three.geometric_mean, std::pow(0.9, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(three.worst, 0.9);

  const CoveringSet all = choose_covering_set(matrix, 10);  // more than there are: every problem at its best
  EXPECT_DOUBLE_EQ(all.geometric_mean, 1.0);
  EXPECT_EQ(all.configurations.size(), 4u);
}

TEST(CoveringSet, AProblemNoColumnServesMakesTheMeanZeroAndBadShapesThrow) {
  const CoveringSet set = evaluate_covering_set({{1.0, 0.0}, {0.0, 0.0}}, {0, 1});
  EXPECT_DOUBLE_EQ(set.geometric_mean, 0.0);
  EXPECT_DOUBLE_EQ(set.worst, 0.0);
  EXPECT_THROW(choose_covering_set(matrix, 0), std::invalid_argument);
  EXPECT_THROW(choose_covering_set({{1.0, 0.5}, {1.0}}, 1), std::invalid_argument);
}

TEST(CoveringSet, ManyColumnsFindAPlantedCoverBySearchingGreedilyAndSwapping) {
  // 60 columns, at most 6: too many subsets to try each (C(60, 6) = 5e7). Columns 7, 23 and 41 serve a third of the
  // 30 problems each at their best; every other column is at 0.8 to 0.95 everywhere.
  std::vector<std::vector<double>> fractions(30, std::vector<double>(60));
  for (std::size_t problem = 0; problem < 30; ++problem)
    for (std::size_t column = 0; column < 60; ++column)
      fractions[problem][column] = 0.8 + 0.15 * static_cast<double>((problem * 7 + column * 13) % 11) / 10.0;
  const std::size_t planted[] = {7, 23, 41};
  for (std::size_t problem = 0; problem < 30; ++problem) {
    for (std::size_t column : planted) fractions[problem][column] = 0.5;
    fractions[problem][planted[problem % 3]] = 1.0;
  }
  const CoveringSet set = choose_covering_set(fractions, 6);
  EXPECT_DOUBLE_EQ(set.geometric_mean, 1.0);
  EXPECT_EQ(set.configurations, (std::vector<std::size_t>{7, 23, 41}));  // a fourth column would add nothing
}

}  // namespace
}  // namespace kernlathe
