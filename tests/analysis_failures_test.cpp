// Failure explanations on synthetic recordings whose rule is known: a threshold, a value of an enumeration, a
// product of two sizes, a combination of two values; and the counts of a constraint that explains only part.
#include "tuner/analysis/failures.h"

#include <gtest/gtest.h>

#include "analysis_test_support.h"

namespace kernlathe {
namespace {

using testing::enumeration_parameter;
using testing::failed;
using testing::integer_parameter;
using testing::measured;

const FailureExplanation& only(const std::vector<FailureExplanation>& explanations, FailureKind kind) {
  EXPECT_EQ(explanations.size(), 1u);
  EXPECT_EQ(explanations.front().kind, kind);
  return explanations.front();
}

TEST(FailureExplanation, FailuresExactlyAboveAThresholdGiveThatThreshold) {
  // P in 1..8, Q in {a, b, c}: every configuration with P > 4 fails to launch.
  const std::vector<Parameter> parameters = {integer_parameter("P", {1, 2, 3, 4, 5, 6, 7, 8}),
                                             enumeration_parameter("Q", {"a", "b", "c"})};
  std::vector<Evaluation> evaluations;
  for (std::int64_t p = 1; p <= 8; ++p)
    for (const char* q : {"a", "b", "c"}) {
      Configuration configuration{Value{p}, Value{std::string(q)}};
      evaluations.push_back(p > 4 ? failed(configuration, Status::launch_error, "too many resources requested")
                                  : measured(configuration, 1.0 + static_cast<double>(p)));
    }
  const std::vector<FailureExplanation> explanations = explain_failures(parameters, evaluations);
  const FailureExplanation& explanation = only(explanations, FailureKind::launch_or_resources);
  EXPECT_EQ(explanation.count, 12u);
  EXPECT_EQ(explanation.example_message, "too many resources requested");
  ASSERT_FALSE(explanation.suggestions.empty());
  const ConstraintSuggestion& best = explanation.suggestions.front();
  EXPECT_EQ(best.constraint, "P <= 4");
  EXPECT_EQ(best.explained, 12u);
  EXPECT_EQ(best.failures, 12u);
  EXPECT_EQ(best.valid_excluded, 0u);
  EXPECT_EQ(best.valid, 12u);
  EXPECT_DOUBLE_EQ(best.score, 1.0);
  EXPECT_EQ(best.sentence(explanation.kind),
            "P <= 4 excludes 12 of 12 launch or resource failures and 0 of 12 valid configurations");
  // The runners-up explain less; the same exclusion written as a set of values is not repeated.
  ASSERT_EQ(explanation.suggestions.size(), 3u);
  for (std::size_t i = 1; i < explanation.suggestions.size(); ++i) {
    EXPECT_LT(explanation.suggestions[i].score, 1.0);
    EXPECT_NE(explanation.suggestions[i].constraint, "P not in [5, 6, 7, 8]");
    EXPECT_NE(explanation.suggestions[i].constraint, "P in [1, 2, 3, 4]");
  }
}

TEST(FailureExplanation, OneEnumerationValueIsExcludedByName) {
  const std::vector<Parameter> parameters = {integer_parameter("P", {1, 2, 3}),
                                             enumeration_parameter("LAYOUT", {"row", "col", "tiled"})};
  std::vector<Evaluation> evaluations;
  for (std::int64_t p = 1; p <= 3; ++p)
    for (const char* layout : {"row", "col", "tiled"}) {
      Configuration configuration{Value{p}, Value{std::string(layout)}};
      evaluations.push_back(std::string(layout) == "tiled" ? failed(configuration, Status::compile_error)
                                                           : measured(configuration, 2.0));
    }
  const std::vector<FailureExplanation> explanations = explain_failures(parameters, evaluations);
  const FailureExplanation& explanation = only(explanations, FailureKind::compile);
  ASSERT_FALSE(explanation.suggestions.empty());
  EXPECT_EQ(explanation.suggestions.front().constraint, "LAYOUT != 'tiled'");
  EXPECT_EQ(explanation.suggestions.front().explained, 3u);
  EXPECT_EQ(explanation.suggestions.front().valid_excluded, 0u);
}

TEST(FailureExplanation, AResourceLimitOnAProductOfTwoSizesIsFound) {
  // Fails when BLOCK * TILE > 64: no threshold on one of them separates that.
  const std::vector<Parameter> parameters = {integer_parameter("BLOCK", {8, 16, 32, 64}),
                                             integer_parameter("TILE", {1, 2, 4, 8})};
  std::vector<Evaluation> evaluations;
  for (std::int64_t block : {8, 16, 32, 64})
    for (std::int64_t tile : {1, 2, 4, 8}) {
      Configuration configuration{Value{block}, Value{tile}};
      evaluations.push_back(block * tile > 64 ? failed(configuration, Status::resources_exceeded)
                                              : measured(configuration, 1.0));
    }
  const std::vector<FailureExplanation> explanations = explain_failures(parameters, evaluations);
  const FailureExplanation& explanation = only(explanations, FailureKind::launch_or_resources);
  ASSERT_FALSE(explanation.suggestions.empty());
  EXPECT_EQ(explanation.suggestions.front().constraint, "BLOCK * TILE <= 64");
  EXPECT_EQ(explanation.suggestions.front().explained, 6u);  // 16x8, 32x4, 32x8, 64x2, 64x4, 64x8
  EXPECT_EQ(explanation.suggestions.front().valid_excluded, 0u);
}

TEST(FailureExplanation, PartialExplanationsCountWhatTheyExcludeOfEachKind) {
  // Wrong results at P = 3 (always) and at P = 1, Q = 1 (once); one crash at P = 3 as well.
  const std::vector<Parameter> parameters = {integer_parameter("P", {1, 2, 3}), integer_parameter("Q", {0, 1})};
  std::vector<Evaluation> evaluations = {
      measured({Value{std::int64_t{1}}, Value{std::int64_t{0}}}, 1.0),
      failed({Value{std::int64_t{1}}, Value{std::int64_t{1}}}, Status::wrong_result, "element 7: 2.5 != 3"),
      measured({Value{std::int64_t{2}}, Value{std::int64_t{0}}}, 1.0),
      measured({Value{std::int64_t{2}}, Value{std::int64_t{1}}}, 1.0),
      failed({Value{std::int64_t{3}}, Value{std::int64_t{0}}}, Status::wrong_result),
      failed({Value{std::int64_t{3}}, Value{std::int64_t{1}}}, Status::crashed)};
  const std::vector<FailureExplanation> explanations = explain_failures(parameters, evaluations);
  ASSERT_EQ(explanations.size(), 2u);
  const FailureExplanation& wrong = explanations[0];
  EXPECT_EQ(wrong.kind, FailureKind::wrong_result);
  EXPECT_EQ(wrong.count, 2u);
  EXPECT_EQ(wrong.example_message, "element 7: 2.5 != 3");
  ASSERT_FALSE(wrong.suggestions.empty());
  // "P <= 2" excludes the wrong result at P = 3 (and the crash there), 1 of 2, no valid configuration: score 1/2.
  // "P == 2" excludes both and the valid configuration at P = 1, Q = 0: 2 / (2 + 1), the best.
  EXPECT_EQ(wrong.suggestions[0].constraint, "P == 2");
  EXPECT_EQ(wrong.suggestions[0].explained, 2u);
  EXPECT_EQ(wrong.suggestions[0].valid_excluded, 1u);
  EXPECT_EQ(wrong.suggestions[0].other_failures_excluded, 1u);
  EXPECT_DOUBLE_EQ(wrong.suggestions[0].score, 2.0 / 3);
  ASSERT_GE(wrong.suggestions.size(), 2u);
  EXPECT_EQ(wrong.suggestions[1].explained, 1u);
  EXPECT_EQ(wrong.suggestions[1].valid_excluded, 0u);
  EXPECT_EQ(explanations[1].kind, FailureKind::crash_or_timeout);
  EXPECT_EQ(failure_kind_name(explanations[1].kind), "crash_or_timeout");
}

TEST(FailureExplanation, TwoValuesTogetherAreExcludedAsAPair) {
  // Only TILE = 3 with PAD = 1 fails; TILE = 3 alone and PAD = 1 alone are fine.
  const std::vector<Parameter> parameters = {integer_parameter("TILE", {1, 2, 3, 4}), integer_parameter("PAD", {0, 1})};
  std::vector<Evaluation> evaluations;
  for (std::int64_t tile = 1; tile <= 4; ++tile)
    for (std::int64_t pad = 0; pad <= 1; ++pad) {
      Configuration configuration{Value{tile}, Value{pad}};
      evaluations.push_back(tile == 3 && pad == 1 ? failed(configuration, Status::compile_error)
                                                  : measured(configuration, 1.0));
    }
  const std::vector<FailureExplanation> explanations = explain_failures(parameters, evaluations);
  const FailureExplanation& explanation = only(explanations, FailureKind::compile);
  ASSERT_FALSE(explanation.suggestions.empty());
  EXPECT_EQ(explanation.suggestions.front().constraint, "TILE != 3 or PAD != 1");
  EXPECT_EQ(explanation.suggestions.front().explained, 1u);
  EXPECT_EQ(explanation.suggestions.front().valid_excluded, 0u);
}

TEST(FailureExplanation, NoFailuresNoExplanations) {
  const std::vector<Parameter> parameters = {integer_parameter("P", {1, 2})};
  EXPECT_TRUE(explain_failures(parameters, {measured({Value{std::int64_t{1}}}, 1.0),
                                            measured({Value{std::int64_t{2}}}, 2.0)})
                  .empty());
  EXPECT_EQ(failure_kind_of(Status::ok), std::nullopt);
  EXPECT_EQ(failure_kind_of(Status::invalid), FailureKind::launch_or_resources);
  EXPECT_EQ(failure_kind_of(Status::timeout), FailureKind::crash_or_timeout);
}

}  // namespace
}  // namespace kernlathe
