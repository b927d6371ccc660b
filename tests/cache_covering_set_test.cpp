// Covering sets (tuner/cache/covering_set.h) on a matrix whose answers are worked out by hand below.
#include "tuner/cache/covering_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kernlathe {
namespace {

// Four problems, four configurations; "-" is not measured there.
//         C0    C1    C2    C3
//   P0   1.0   2.0   1.1    -
//   P1   2.0   1.0   1.1    -
//   P2   1.0   2.0   1.2    -
//   P3    -     -    2.0   1.0
CoveringMatrix hand_matrix() {
  CoveringMatrix matrix;
  matrix.problems = {"P0", "P1", "P2", "P3"};
  matrix.configurations = {"C0", "C1", "C2", "C3"};
  matrix.time_ms = {{1.0, 2.0, 1.1, std::nullopt},
                    {2.0, 1.0, 1.1, std::nullopt},
                    {1.0, 2.0, 1.2, std::nullopt},
                    {std::nullopt, std::nullopt, 2.0, 1.0}};
  return matrix;
}

std::vector<std::size_t> sorted(std::vector<std::size_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

TEST(CoveringSet, OneConfigurationCoversEveryProblemItCanFirst) {
  // C0 is best on two problems but never measured on P3; C2 is measured everywhere.
  const CoveringSet set = choose_covering_set(hand_matrix(), 1);
  EXPECT_EQ(set.chosen, (std::vector<std::size_t>{2}));
  EXPECT_EQ(set.uncovered, 0u);
  EXPECT_NEAR(set.fraction[0], 1 / 1.1, 1e-12);
  EXPECT_NEAR(set.fraction[3], 0.5, 1e-12);
  EXPECT_NEAR(set.worst, 0.5, 1e-12);
  EXPECT_NEAR(set.geometric_mean, std::pow(1 / 1.1 * 1 / 1.1 * 1 / 1.2 * 0.5, 0.25), 1e-12);
}

TEST(CoveringSet, TwoConfigurationsTakeTheOneThatRescuesTheWorstProblem) {
  // Adding C3 lifts P3 from 0.5 to 1 (log gain 0.693); adding C0 lifts P0 and P2 (0.095 + 0.182).
  const CoveringSet set = choose_covering_set(hand_matrix(), 2);
  EXPECT_EQ(sorted(set.chosen), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(set.serves[3], std::optional<std::size_t>(3));
  EXPECT_EQ(set.serves[0], std::optional<std::size_t>(2));
  EXPECT_NEAR(set.worst, 1 / 1.2, 1e-12);
  EXPECT_NEAR(set.geometric_mean, std::pow(1 / 1.1 * 1 / 1.1 * 1 / 1.2, 0.25), 1e-12);
}

TEST(CoveringSet, SwapsFindTheSetThatGreedyAdditionsMiss) {
  // Greedy adds C2, C3, then C0; swapping C2 for C1 gives every problem its own best.
  const CoveringSet set = choose_covering_set(hand_matrix(), 3);
  EXPECT_EQ(sorted(set.chosen), (std::vector<std::size_t>{0, 1, 3}));
  EXPECT_DOUBLE_EQ(set.geometric_mean, 1.0);
  EXPECT_DOUBLE_EQ(set.worst, 1.0);
}

TEST(CoveringSet, ARoomierBudgetStillShipsOnlyWhatIsNeeded) {
  const CoveringSet set = choose_covering_set(hand_matrix(), 6);
  EXPECT_EQ(sorted(set.chosen), (std::vector<std::size_t>{0, 1, 3}));
}

TEST(CoveringSet, HeldOutProblemsAreServedBySetsChosenWithoutThem) {
  // Chosen without P3 (two configurations: C0 and C1 give P0-P2 their best), P3 has neither measured: uncovered.
  const CoveringSet held = held_out_covering(hand_matrix(), 2);
  EXPECT_FALSE(held.serves[3].has_value());
  EXPECT_EQ(held.fraction[3], 0);
  EXPECT_GE(held.uncovered, 1u);
  // Chosen without P0 (on P1-P3: C2 first, the only one measured on all three, then C3 for P3; swapping C2 for
  // C0 or C1 would halve P2 or P1), P0 is served by C2 at 1.1.
  EXPECT_EQ(held.serves[0], std::optional<std::size_t>(2));
  EXPECT_NEAR(held.fraction[0], 1 / 1.1, 1e-12);
}

TEST(CoveringSet, ABadMatrixIsRefused) {
  CoveringMatrix matrix = hand_matrix();
  matrix.time_ms[1].pop_back();
  EXPECT_THROW(choose_covering_set(matrix, 2), std::invalid_argument);
  matrix = hand_matrix();
  matrix.time_ms[0][0] = 0.0;
  EXPECT_THROW(choose_covering_set(matrix, 2), std::invalid_argument);
  EXPECT_THROW(choose_covering_set(hand_matrix(), 0), std::invalid_argument);
}

}  // namespace
}  // namespace kernlathe
