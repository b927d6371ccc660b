// Which rank tunes which problem of a sweep under mpirun (tuner/cluster/sweep_deal.h), without messages or GPUs:
// problems dealt in workload order to the ranks that offer devices, at most one per free device, never twice and
// never two of one record key at once; a rank without a GPU gives its problem to another; a lost rank's problems
// are not dealt again; the deal ends when nothing more can start.
#include "tuner/cluster/sweep_deal.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace kernlathe {
namespace {

std::vector<std::string> distinct_keys(std::size_t count) {
  std::vector<std::string> keys;
  for (std::size_t index = 0; index < count; ++index) keys.push_back("saxpy N=" + std::to_string(index));
  return keys;
}

std::map<int, std::vector<std::size_t>> by_rank(const std::vector<RankDeal>& deals) {
  std::map<int, std::vector<std::size_t>> problems;
  for (const RankDeal& deal : deals) problems[deal.rank] = deal.problems;
  return problems;
}

TEST(SweepDeal, RanksThatOfferDevicesGetTheNextProblemsInWorkloadOrderInRankOrder) {
  SweepDeal deal(distinct_keys(7), std::vector<bool>(7, false), 3);
  deal.offer(2, 1);
  deal.offer(0, 2);
  deal.offer(1, 1);
  const auto dealt = by_rank(deal.deal());
  EXPECT_EQ(dealt.at(0), (std::vector<std::size_t>{0, 1}));  // two free devices: two problems
  EXPECT_EQ(dealt.at(1), (std::vector<std::size_t>{2}));
  EXPECT_EQ(dealt.at(2), (std::vector<std::size_t>{3}));
  EXPECT_EQ(deal.rank_of(1), 0);
  EXPECT_EQ(deal.rank_of(3), 2);
  EXPECT_FALSE(deal.rank_of(4).has_value());
  // Offers are spent: nothing more until a rank offers again.
  EXPECT_TRUE(deal.deal().empty());
  deal.finished(2);
  deal.offer(1, 1);
  EXPECT_EQ(by_rank(deal.deal()).at(1), (std::vector<std::size_t>{4}));
}

TEST(SweepDeal, EveryProblemIsDealtOnceAndTheFastRankTakesMore) {
  // Rank 1 finishes each problem at once, rank 0 never: rank 1 tunes all but rank 0's first.
  SweepDeal deal(distinct_keys(6), std::vector<bool>(6, false), 2);
  deal.offer(0, 1);
  deal.offer(1, 1);
  std::map<std::size_t, int> dealt_to;
  for (int round = 0; round < 10 && !deal.waiting().empty(); ++round) {
    for (const RankDeal& each : deal.deal())
      for (std::size_t problem : each.problems) {
        EXPECT_TRUE(dealt_to.emplace(problem, each.rank).second) << "problem " << problem << " dealt twice";
        if (each.rank == 1) deal.finished(problem);
      }
    deal.offer(1, 1);
  }
  ASSERT_EQ(dealt_to.size(), 6u);
  EXPECT_EQ(dealt_to.at(0), 0);
  for (std::size_t problem = 1; problem < 6; ++problem) EXPECT_EQ(dealt_to.at(problem), 1) << problem;
  EXPECT_FALSE(deal.over());  // problem 0 still runs on rank 0
  deal.finished(0);
  EXPECT_TRUE(deal.over());
}

TEST(SweepDeal, ProblemsDoneBeforeAreNeverDealt) {
  SweepDeal deal(distinct_keys(4), {true, false, true, false}, 2);
  deal.offer(0, 4);
  EXPECT_EQ(by_rank(deal.deal()).at(0), (std::vector<std::size_t>{1, 3}));
  deal.finished(1);
  deal.finished(3);
  EXPECT_TRUE(deal.over());
}

TEST(SweepDeal, TwoProblemsOfOneRecordKeyNeverRunAtOnceOnTwoRanks) {
  // Problems 0 and 2 write the same records: 2 waits until 0 finishes, and problem 3 goes ahead of it.
  SweepDeal deal({"gemm M=16", "gemm M=32", "gemm M=16", "gemm M=64"}, std::vector<bool>(4, false), 2);
  deal.offer(0, 2);
  deal.offer(1, 2);
  const auto dealt = by_rank(deal.deal());
  EXPECT_EQ(dealt.at(0), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(dealt.at(1), (std::vector<std::size_t>{3}));  // its offer of two: one startable problem
  deal.finished(1);
  deal.offer(0, 1);
  EXPECT_TRUE(deal.deal().empty());  // problem 2 is held while problem 0 runs
  EXPECT_FALSE(deal.over());
  deal.finished(0);
  deal.offer(0, 2);
  EXPECT_EQ(by_rank(deal.deal()).at(0), (std::vector<std::size_t>{2}));
}

TEST(SweepDeal, ARankWithoutAGpuGivesItsProblemToAnotherAndTakesNoMore) {
  SweepDeal deal(distinct_keys(3), std::vector<bool>(3, false), 2);
  deal.offer(0, 1);
  deal.offer(1, 1);
  EXPECT_EQ(by_rank(deal.deal()).at(1), (std::vector<std::size_t>{1}));
  deal.no_gpu(1, 1);
  deal.offer(1, 1);  // ignored: the rank has no GPU
  EXPECT_EQ(deal.ranks_without_gpu(), std::vector<int>{1});
  EXPECT_TRUE(deal.deal().empty());
  deal.finished(0);
  deal.offer(0, 1);
  EXPECT_EQ(by_rank(deal.deal()).at(0), (std::vector<std::size_t>{1}));  // the given-back problem, first
  deal.finished(1);
  deal.offer(0, 1);
  EXPECT_EQ(by_rank(deal.deal()).at(0), (std::vector<std::size_t>{2}));
  deal.finished(2);
  EXPECT_TRUE(deal.over());
  EXPECT_TRUE(deal.waiting().empty());
}

TEST(SweepDeal, WhenNoRankHasAGpuTheDealEndsWithTheProblemsWaiting) {
  SweepDeal deal(distinct_keys(3), std::vector<bool>(3, false), 2);
  deal.offer(0, 1);
  deal.offer(1, 1);
  deal.deal();
  deal.no_gpu(0, 0);
  EXPECT_FALSE(deal.over());  // rank 1 still runs problem 1
  deal.no_gpu(1, 1);
  EXPECT_TRUE(deal.over());
  EXPECT_EQ(deal.waiting(), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(deal.ranks_without_gpu(), (std::vector<int>{0, 1}));
}

TEST(SweepDeal, ALostRanksProblemsAreNotDealtAgainAndHoldTheirKeys) {
  // Problem 3 has problem 1's key: rank 1, lost while tuning problem 1, may still write that record folder.
  SweepDeal deal({"a", "b", "c", "b", "d"}, std::vector<bool>(5, false), 3);
  deal.offer(0, 1);
  deal.offer(1, 1);
  deal.offer(2, 1);
  deal.deal();
  EXPECT_EQ(deal.lose(1), std::vector<std::size_t>{1});
  EXPECT_EQ(deal.lost_ranks(), std::vector<int>{1});
  EXPECT_FALSE(deal.rank_of(1).has_value());
  deal.offer(1, 1);  // a message from the lost rank that arrives late changes nothing
  deal.finished(0);
  deal.offer(0, 1);
  EXPECT_EQ(by_rank(deal.deal()).at(0), (std::vector<std::size_t>{4}));  // not 1, and not 3 (problem 1's key)
  deal.finished(2);
  deal.finished(4);
  deal.offer(0, 1);
  deal.offer(2, 1);
  EXPECT_TRUE(deal.deal().empty());
  EXPECT_TRUE(deal.over());
  EXPECT_EQ(deal.waiting(), std::vector<std::size_t>{3});
}

}  // namespace
}  // namespace kernlathe
