// The queue between the strategy and the lanes: a lane takes the first configuration whose compilation is done, so a
// slow compilation at the front does not hold up the ones behind it, and the proposal order holds otherwise.
#include "tuner/session/compile_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace kernlathe {
namespace {

Configuration configuration(std::int64_t value) { return Configuration{Value{value}}; }

std::int64_t value_of(const QueuedConfiguration& item) { return std::get<std::int64_t>(item.configuration.front()); }

// A configuration whose compilation finishes when the test says so.
struct Compilation {
  std::promise<CompileResult> promise;
  QueuedConfiguration queued(std::int64_t value) { return {configuration(value), promise.get_future()}; }
  void finish() {
    CompileResult result;
    result.ok = true;
    promise.set_value(std::move(result));
  }
};

TEST(CompileQueue, TakesInProposalOrderWhenEveryCompilationIsDone) {
  CompileQueue queue;
  Compilation first, second, third;
  queue.push(first.queued(1));
  queue.push(second.queued(2));
  queue.push(third.queued(3));
  third.finish();
  second.finish();
  first.finish();
  EXPECT_EQ(value_of(queue.take_next()), 1);
  EXPECT_EQ(value_of(queue.take_next()), 2);
  EXPECT_EQ(value_of(queue.take_next()), 3);
  EXPECT_TRUE(queue.empty());
}

TEST(CompileQueue, ASlowCompilationAtTheFrontDoesNotHoldUpTheOnesBehindIt) {
  CompileQueue queue;
  Compilation slow, fast, later;
  queue.push(slow.queued(1));
  queue.push(fast.queued(2));
  queue.push(later.queued(3));
  fast.finish();
  std::optional<QueuedConfiguration> taken = queue.take_ready();
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(value_of(*taken), 2);
  EXPECT_TRUE(taken->compiled->get().ok);
  EXPECT_FALSE(queue.take_ready().has_value()) << "neither of the other two has compiled";
  EXPECT_EQ(queue.size(), 2u);
  slow.finish();
  EXPECT_EQ(value_of(queue.take_next()), 1) << "the slow one goes as soon as it is ready, before later ones";
  later.finish();
  EXPECT_EQ(value_of(queue.take_next()), 3);
}

TEST(CompileQueue, WaitsForWhicheverCompilationFinishesFirst) {
  CompileQueue queue;
  Compilation front, back;
  queue.push(front.queued(1));
  queue.push(back.queued(2));
  std::thread compiler([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    back.finish();  // the one behind the front finishes first
  });
  EXPECT_EQ(value_of(queue.take_next(std::chrono::milliseconds(1))), 2);
  compiler.join();
  front.finish();
  EXPECT_EQ(value_of(queue.take_next()), 1);
}

TEST(CompileQueue, AConfigurationWithNothingToCompileIsReadyAtOnce) {
  CompileQueue queue;
  Compilation compiling;
  queue.push(compiling.queued(1));
  queue.push(QueuedConfiguration{configuration(2), std::nullopt});
  EXPECT_EQ(value_of(queue.take_next()), 2);
  compiling.finish();
  EXPECT_EQ(value_of(queue.take_next()), 1);
}

TEST(CompileQueue, TakingFromAnEmptyQueueIsAProgrammingError) {
  CompileQueue queue;
  EXPECT_FALSE(queue.take_ready().has_value());
  EXPECT_THROW(queue.take_next(), std::logic_error);
}

}  // namespace
}  // namespace kernlathe
