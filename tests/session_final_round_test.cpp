// The final round's bookkeeping (tuner/session/final_round.h) with a scripted measurement: the order of each round,
// the interval, what "faster beyond the noise" means, and candidates that fail drop out.
#include "tuner/session/final_round.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace kernlathe {
namespace {

Configuration configuration(std::int64_t value) { return Configuration{Value{value}}; }

TEST(FinalRound, EachRoundStartsOneCandidateLaterAndMeasuresEveryCandidateOnce) {
  std::vector<std::int64_t> order;
  auto measure = [&](const Configuration& candidate) {
    order.push_back(std::get<std::int64_t>(candidate[0]));
    Evaluation evaluation;
    evaluation.time.median_ms = 1.0 + static_cast<double>(order.size()) * 0.001;
    return evaluation;
  };
  const std::vector<Configuration> candidates{configuration(0), configuration(1), configuration(2)};
  std::vector<FinalFigures> figures =
      run_final_round(candidates.size(), 3, [&](std::size_t index, bool) { return measure(candidates[index]); });
  EXPECT_EQ(order, (std::vector<std::int64_t>{0, 1, 2, 1, 2, 0, 2, 0, 1}));
  ASSERT_EQ(figures.size(), 3u);
  for (const FinalFigures& candidate : figures) {
    EXPECT_TRUE(candidate.complete);
    EXPECT_EQ(candidate.round_ms.size(), 3u);
  }
  EXPECT_DOUBLE_EQ(figures[0].round_ms[1], 1.006);  // candidate 0 was sixth in all
}

TEST(FinalRound, TheIntervalIsStudentsTOverTheRounds) {
  FinalFigures figures = summarise_rounds({1.0, 1.2, 1.1});
  EXPECT_DOUBLE_EQ(figures.mean_ms, 1.1);
  // s = 0.1, n = 3, t(0.975, 2) = 4.303: half-width 4.303 * 0.1 / sqrt(3) = 0.24843
  EXPECT_NEAR(figures.high_ms - figures.mean_ms, 0.24843, 1e-4);
  EXPECT_NEAR(figures.mean_ms - figures.low_ms, 0.24843, 1e-4);
  FinalFigures one = summarise_rounds({2.0});
  EXPECT_TRUE(one.complete);
  EXPECT_DOUBLE_EQ(one.low_ms, 2.0);
  EXPECT_DOUBLE_EQ(one.high_ms, 2.0);
  EXPECT_FALSE(summarise_rounds({}).complete);
}

TEST(FinalRound, FasterBeyondTheNoiseNeedsIntervalsThatDoNotOverlap) {
  FinalFigures fast = summarise_rounds({1.00, 1.01, 0.99});
  FinalFigures slow = summarise_rounds({1.10, 1.11, 1.09});
  FinalFigures noisy = summarise_rounds({0.9, 1.3, 1.0});
  EXPECT_TRUE(faster_beyond_noise(fast, slow));
  EXPECT_FALSE(faster_beyond_noise(slow, fast));
  EXPECT_FALSE(faster_beyond_noise(fast, noisy));  // noisy's interval reaches below fast's
  EXPECT_FALSE(faster_beyond_noise(fast, fast));
  FinalFigures failed = fast;
  failed.complete = false;
  EXPECT_FALSE(faster_beyond_noise(failed, slow));
}

TEST(FinalRound, ACandidateThatFailsIsNotMeasuredAgainAndSaysWhy) {
  std::map<std::int64_t, int> measured;
  auto measure = [&](const Configuration& candidate) {
    std::int64_t value = std::get<std::int64_t>(candidate[0]);
    Evaluation evaluation;
    evaluation.time.median_ms = 1.0;
    if (value == 1 && ++measured[value] == 2) {
      evaluation.status = Status::wrong_result;
      evaluation.message = "element 3 differs";
    } else if (value != 1) {
      ++measured[value];
    }
    return evaluation;
  };
  const std::vector<Configuration> candidates{configuration(0), configuration(1)};
  std::vector<FinalFigures> figures =
      run_final_round(candidates.size(), 4, [&](std::size_t index, bool) { return measure(candidates[index]); });
  EXPECT_EQ(measured[0], 4);
  EXPECT_EQ(measured[1], 2);  // measured once more to fail, then never
  EXPECT_TRUE(figures[0].complete);
  EXPECT_FALSE(figures[1].complete);
  EXPECT_EQ(figures[1].failure, "round 2: wrong_result: element 3 differs");
}

TEST(FinalRound, EnergyIsSummarisedOnlyWhenEveryRoundMeasuredIt) {
  int rounds_of[2] = {0, 0};
  auto measure = [&](std::size_t index, bool with_energy) {
    EXPECT_TRUE(with_energy);
    Evaluation evaluation;
    evaluation.time.median_ms = 2.0;
    const int round = rounds_of[index]++;
    // Candidate 0 has energy in every round (3, 4, 5 mJ); candidate 1 misses it in its second round.
    if (index == 0) evaluation.energy_mj = 3.0 + round;
    if (index == 1 && round != 1) evaluation.energy_mj = 1.0;
    return evaluation;
  };
  std::vector<FinalFigures> figures = run_final_round(2, 3, measure, {}, 3);
  ASSERT_EQ(figures[0].round_energy_mj.size(), 3u);
  EXPECT_DOUBLE_EQ(figures[0].energy_mj, 4.0);
  // Student t with 2 degrees of freedom: 4.303 * 1 / sqrt(3).
  EXPECT_NEAR(figures[0].energy_high_mj - figures[0].energy_mj, 4.303 / std::sqrt(3.0), 1e-9);
  EXPECT_TRUE(figures[1].round_energy_mj.empty());
  EXPECT_EQ(figures[1].energy_mj, 0);
}

TEST(FinalRound, OnlyTheLastEnergyRoundsAskForEnergyAndTheirFiguresAreSummarised) {
  std::vector<std::pair<int, bool>> asked;  // (round, with_energy) of candidate 0
  int round_of_first = 0;
  auto measure = [&](std::size_t index, bool with_energy) {
    Evaluation evaluation;
    evaluation.time.median_ms = 2.0;
    if (index == 0) asked.emplace_back(round_of_first++, with_energy);
    if (with_energy) evaluation.energy_mj = index == 0 ? 5.0 : 7.0;
    return evaluation;
  };
  std::vector<FinalFigures> figures = run_final_round(2, 3, measure, {}, 1);
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_FALSE(asked[0].second);
  EXPECT_FALSE(asked[1].second);
  EXPECT_TRUE(asked[2].second);
  ASSERT_EQ(figures[0].round_energy_mj.size(), 1u);
  EXPECT_EQ(figures[0].energy_mj, 5.0);
  EXPECT_EQ(figures[0].energy_high_mj, 5.0);  // one figure: an interval of zero width
  EXPECT_EQ(figures[1].energy_mj, 7.0);
  EXPECT_EQ(run_final_round(1, 2, measure, {}, 0)[0].energy_mj, 0);  // no energy round: no energy
}

// A scripted candidate for the sized final round: its k-th measurement is mean * (1 + noise * wobble(k)), where
// wobble cycles through -1, +1, 0, so its rounds have a known spread.
Evaluation scripted(double mean, double noise, int k) {
  static const double wobble[] = {-1.0, 1.0, 0.0};
  Evaluation evaluation;
  evaluation.time.median_ms = mean * (1 + noise * wobble[k % 3]);
  return evaluation;
}

TEST(FinalRoundSized, AClearWinnerStopsAtTheMinimumRounds) {
  std::vector<int> count(3, 0);
  const std::vector<double> means{1.00, 1.10, 1.20};
  auto measure = [&](std::size_t index, bool) { return scripted(means[index], 0.002, count[index]++); };
  FinalRoundPlan plan;
  FinalRoundOutcome outcome = run_final_round_sized(3, plan, measure);
  EXPECT_EQ(outcome.rounds, 3);
  EXPECT_EQ(outcome.stopped_because, "separated");
  EXPECT_EQ(outcome.leader, 0);
  EXPECT_EQ(outcome.runner_up, 1);
  EXPECT_GT(outcome.confidence, 0.999);
  EXPECT_DOUBLE_EQ(outcome.worst_regret, 0);
}

TEST(FinalRoundSized, ANoisyCloseRaceRunsMoreRoundsUntilDecided) {
  // The winner is 1% faster but each measurement wobbles by 2%: three rounds leave the runner-up possibly faster
  // by more than the tolerance (0.5%); the intervals narrow with the rounds until picking the leader costs at most
  // the tolerance.
  std::vector<int> count(2, 0);
  const std::vector<double> means{1.00, 1.01};
  auto measure = [&](std::size_t index, bool) { return scripted(means[index], 0.02, count[index]++); };
  FinalRoundPlan plan;
  plan.max_rounds = 40;
  FinalRoundOutcome outcome = run_final_round_sized(2, plan, measure);
  EXPECT_GT(outcome.rounds, 3);
  EXPECT_LT(outcome.rounds, 40);
  EXPECT_NE(outcome.stopped_because, "cap");
  EXPECT_EQ(outcome.leader, 0);
  EXPECT_LE(outcome.worst_regret, plan.tolerance);
  ASSERT_EQ(outcome.figures[0].round_ms.size(), static_cast<std::size_t>(outcome.rounds));
  // Three rounds alone were undecided.
  FinalRoundOutcome after_three;
  std::vector<FinalFigures> first_three;
  for (const FinalFigures& figures : outcome.figures)
    first_three.push_back(summarise_rounds({figures.round_ms.begin(), figures.round_ms.begin() + 3}));
  decide_final_round(first_three, plan, after_three);
  EXPECT_EQ(after_three.stopped_because, "");
  EXPECT_GT(after_three.worst_regret, plan.tolerance);
}

TEST(FinalRoundSized, TwoEqualCandidatesStopWhenKnownWithinTheTolerance) {
  std::vector<int> count(2, 0);
  auto measure = [&](std::size_t index, bool) { return scripted(1.0, 0.001, count[index]++); };
  FinalRoundOutcome outcome = run_final_round_sized(2, FinalRoundPlan{}, measure);
  EXPECT_EQ(outcome.stopped_because, "within tolerance");
  EXPECT_LE(outcome.worst_regret, 0.005);
  EXPECT_NEAR(outcome.confidence, 0.5, 1e-9);  // equal means: a coin toss, and it does not matter
}

TEST(FinalRoundSized, AnUndecidableRaceStopsAtTheCap) {
  std::vector<int> count(2, 0);
  auto measure = [&](std::size_t index, bool) { return scripted(1.0 + 0.001 * static_cast<double>(index), 0.05, count[index]++); };
  FinalRoundPlan plan;
  plan.max_rounds = 6;
  FinalRoundOutcome outcome = run_final_round_sized(2, plan, measure);
  EXPECT_EQ(outcome.rounds, 6);
  EXPECT_EQ(outcome.stopped_because, "cap");
  EXPECT_GT(outcome.worst_regret, 0.005);
  EXPECT_GT(outcome.confidence, 0.5);
  EXPECT_LT(outcome.confidence, 0.9);
}

TEST(FinalRoundSized, TheBaselineIsTimedInEveryRoundButNeverWins) {
  // Candidate 2 is the baseline, faster than both; it does not contend, so the race is 0 against 1.
  std::vector<int> count(3, 0);
  const std::vector<double> means{1.00, 1.20, 0.5};
  auto measure = [&](std::size_t index, bool) { return scripted(means[index], 0.001, count[index]++); };
  FinalRoundPlan plan;
  plan.contends = {true, true, false};
  FinalRoundOutcome outcome = run_final_round_sized(3, plan, measure);
  EXPECT_EQ(outcome.leader, 0);
  EXPECT_EQ(outcome.runner_up, 1);
  EXPECT_EQ(count[2], outcome.rounds);
  EXPECT_TRUE(outcome.figures[2].complete);
}

TEST(FinalRoundSized, AFailedLeaderLeavesTheRaceToTheOthers) {
  std::vector<int> count(3, 0);
  const std::vector<double> means{0.9, 1.0, 1.2};
  auto measure = [&](std::size_t index, bool) {
    Evaluation evaluation = scripted(means[index], 0.001, count[index]++);
    if (index == 0 && count[0] == 2) evaluation.status = Status::wrong_result;
    return evaluation;
  };
  FinalRoundOutcome outcome = run_final_round_sized(3, FinalRoundPlan{}, measure);
  EXPECT_FALSE(outcome.figures[0].complete);
  EXPECT_EQ(outcome.leader, 1);
  EXPECT_EQ(outcome.runner_up, 2);
  EXPECT_EQ(outcome.stopped_because, "separated");
}

TEST(FinalRoundSized, EnergyIsAskedInEveryRoundWhenThePlanSaysSo) {
  int asked = 0;
  auto measure = [&](std::size_t index, bool with_energy) {
    Evaluation evaluation = scripted(1.0 + static_cast<double>(index), 0.0, 0);
    if (with_energy) {
      ++asked;
      evaluation.energy_mj = 2.0;
    }
    return evaluation;
  };
  FinalRoundPlan plan;
  plan.energy_every_round = true;
  FinalRoundOutcome outcome = run_final_round_sized(2, plan, measure);
  EXPECT_EQ(asked, 2 * outcome.rounds);
  EXPECT_EQ(outcome.figures[0].energy_mj, 2.0);
}

}  // namespace
}  // namespace kernlathe
