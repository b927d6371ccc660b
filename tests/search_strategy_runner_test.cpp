// The strategy runner: inline it is the strategy called directly; in the background a slow strategy answers waiting
// requests in one batch, so the queue of a loop that measures faster than the strategy answers one by one never
// runs dry.
#include "tuner/search/strategy_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kernlathe {
namespace {

Configuration numbered(std::int64_t number) { return {Value{number}}; }

// Proposes 0, 1, 2, ... up to `limit`; each ask takes ask_ms whatever it is asked for; keeps the calls it saw.
class CountingStrategy final : public Strategy {
 public:
  explicit CountingStrategy(std::int64_t limit, int ask_ms = 0) : limit_(limit), ask_ms_(ask_ms) {}
  std::string name() const override { return "counting"; }
  std::vector<Configuration> ask(std::size_t count) override {
    if (ask_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ask_ms_));
    std::vector<Configuration> proposals;
    while (proposals.size() < count && next_ < limit_) proposals.push_back(numbered(next_++));
    std::lock_guard lock(mutex_);
    calls_.push_back("ask " + std::to_string(count));
    return proposals;
  }
  void tell(const Evaluation& evaluation) override {
    std::lock_guard lock(mutex_);
    calls_.push_back("tell " + std::to_string(std::get<std::int64_t>(evaluation.configuration.front())));
  }
  ModelUpdates model_updates() const override { return {3, 0.5}; }
  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::int64_t limit_;
  int ask_ms_;
  std::int64_t next_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::string> calls_;
};

Evaluation result_of(const Configuration& configuration) {
  Evaluation evaluation;
  evaluation.configuration = configuration;
  evaluation.time.median_ms = 1;
  return evaluation;
}

TEST(StrategyRunner, InlineCallsRunAtOnceInTheCallersOrder) {
  CountingStrategy strategy(100);
  StrategyRunner runner(strategy, StrategyMode::inline_calls);
  EXPECT_FALSE(runner.in_background());
  runner.request(3);
  EXPECT_EQ(runner.outstanding(), 0u);
  const std::vector<Configuration> first = runner.take();
  ASSERT_EQ(first.size(), 3u);
  runner.tell(result_of(first[0]));
  runner.request(1);
  runner.tell(result_of(first[1]));
  runner.request(2);
  EXPECT_EQ(strategy.calls(), (std::vector<std::string>{"ask 3", "tell 0", "ask 1", "tell 1", "ask 2"}));
  EXPECT_EQ(runner.take(), (std::vector<Configuration>{numbered(3), numbered(4), numbered(5)}));
  const StrategyTimes times = runner.times();
  EXPECT_EQ(times.asks, 3u);
  EXPECT_EQ(times.proposals, 6u);
  EXPECT_EQ(times.model_updates.count, 3u);  // the strategy's own figures, passed on
  EXPECT_DOUBLE_EQ(times.model_updates.seconds, 0.5);
}

TEST(StrategyRunner, AnEmptyAnswerEndsTheRequests) {
  CountingStrategy strategy(2);
  StrategyRunner runner(strategy, StrategyMode::background);
  runner.request(5);
  runner.wait_for_proposals();
  // Short of the request: settled, not exhausted; the next request is answered with nothing.
  while (runner.outstanding() > 0) runner.wait_for_proposals();
  EXPECT_EQ(runner.take().size(), 2u);
  EXPECT_FALSE(runner.exhausted());
  runner.request(1);
  runner.wait_for_proposals();
  EXPECT_TRUE(runner.exhausted());
  EXPECT_EQ(runner.outstanding(), 0u);
  EXPECT_TRUE(runner.take().empty());
  runner.request(4);  // asks nothing more of a spent strategy
  EXPECT_EQ(runner.outstanding(), 0u);
}

TEST(StrategyRunner, WaitingRequestsAreAnsweredWithOneAskAfterTheWaitingResults) {
  // The first ask takes 100 ms; meanwhile the loop tells two results and asks twice: the strategy is then told both
  // and asked once for the sum, the batch that one model update serves.
  CountingStrategy strategy(100, 100);
  StrategyRunner runner(strategy, StrategyMode::background);
  runner.request(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the thread has taken the first ask
  runner.tell(result_of(numbered(0)));
  runner.request(1);
  runner.tell(result_of(numbered(1)));
  runner.request(3);
  EXPECT_EQ(runner.outstanding(), 6u);
  while (runner.outstanding() > 0) runner.wait_for_proposals();
  EXPECT_EQ(strategy.calls(), (std::vector<std::string>{"ask 2", "tell 0", "tell 1", "ask 4"}));
  EXPECT_EQ(runner.take().size(), 6u);
}

// Four lanes that measure in 10 ms each take a configuration every 2.5 ms; the strategy needs 20 ms for any ask.
// Asked one at a time it would supply one every 20 ms and the lanes would wait; answering what waits in one batch
// it keeps the queue of 32 filled: after the first answer, no lane ever finds it empty.
TEST(StrategyRunner, ASlowStrategyInTheBackgroundNeverLetsTheQueueRunDry) {
  constexpr std::size_t lookahead = 32;
  constexpr int results = 240;
  CountingStrategy strategy(100000, 20);
  StrategyRunner runner(strategy, StrategyMode::background);
  std::deque<Configuration> queue;
  const auto refill = [&] {
    for (Configuration& configuration : runner.take()) queue.push_back(std::move(configuration));
    if (queue.size() + runner.outstanding() < lookahead) runner.request(lookahead - queue.size() - runner.outstanding());
  };
  refill();
  runner.wait_for_proposals();
  refill();
  int dry = 0;
  for (int result = 0; result < results; ++result) {
    std::this_thread::sleep_for(std::chrono::microseconds(2500));
    refill();
    if (queue.empty()) {
      ++dry;
      runner.wait_for_proposals();
      refill();
    }
    ASSERT_FALSE(queue.empty());
    runner.tell(result_of(queue.front()));
    queue.pop_front();
    refill();
  }
  EXPECT_EQ(dry, 0);
  runner.stop();
  const StrategyTimes times = runner.times();
  EXPECT_LT(times.asks, static_cast<std::uint64_t>(results / 4)) << "asked one by one";
}

TEST(StrategyRunner, StopDropsWhatIsQueuedAndEndsTheThread) {
  CountingStrategy strategy(1000, 50);
  StrategyRunner runner(strategy, StrategyMode::background);
  runner.request(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int i = 0; i < 5; ++i) {
    runner.tell(result_of(numbered(i)));
    runner.request(1);
  }
  runner.stop();  // waits for the first ask (50 ms), runs nothing after it
  const std::vector<std::string> calls = strategy.calls();
  EXPECT_EQ(calls, (std::vector<std::string>{"ask 1"}));
}

}  // namespace
}  // namespace kernlathe
