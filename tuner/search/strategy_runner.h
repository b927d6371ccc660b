#pragma once
// A strategy driven by a run loop that must not wait for it. The loop tells results and requests proposals; the
// runner answers requests into a queue the loop takes from.
//
// In the background (several lanes measure at once, tuner/session/measurement_lanes.h) the strategy runs on a thread
// of its own: tell() and request() return at once, and the loop hands the queued configurations to the lanes while
// the strategy learns. Before, the loop told and asked the strategy itself, and every lane that finished meanwhile
// waited: on four H200s the default strategy's model took 2.2-2.8 s of a 6-10 s GEMM loop (issue 35). When several
// requests are waiting (the strategy is behind), the thread tells every waiting result first and answers the
// requests with one ask: a model fitted once serves the whole batch, so a slower strategy answers in larger batches
// rather than later, whatever the number of lanes.
//
// Inline (one lane) each call runs at once in the caller's thread, in the caller's order: the strategy sees the same
// sequence of results and questions as ever, so a seed still gives one run.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tuner/search/strategy.h"

namespace kernlathe {

enum class StrategyMode { inline_calls, background };

// The strategy's own time, whichever thread it ran on.
struct StrategyTimes {
  double tell_seconds = 0;
  double ask_seconds = 0;
  std::uint64_t asks = 0;       // calls of ask (a batch each)
  std::uint64_t proposals = 0;  // configurations they returned
  ModelUpdates model_updates;   // part of tell_seconds and ask_seconds

  double seconds() const { return tell_seconds + ask_seconds; }
};

class StrategyRunner {
 public:
  // strategy must outlive the runner and is used by no one else until the runner is gone.
  StrategyRunner(Strategy& strategy, StrategyMode mode);
  ~StrategyRunner();  // stop()
  StrategyRunner(const StrategyRunner&) = delete;
  StrategyRunner& operator=(const StrategyRunner&) = delete;

  bool in_background() const { return mode_ == StrategyMode::background; }
  void tell(const Evaluation& evaluation);
  // Asks for count more configurations; they arrive in take() (inline: before this returns).
  void request(std::size_t count);
  // Requested and not yet answered: an answer short of its request (a strategy nearly spent) settles it too.
  std::size_t outstanding() const;
  // True once an ask answered with nothing: the strategy has nothing left to propose.
  bool exhausted() const;
  // Every configuration answered so far and not yet taken, in the order they were proposed.
  std::vector<Configuration> take();
  // Blocks until a configuration is there to take or nothing is outstanding.
  void wait_for_proposals();
  StrategyTimes times() const;
  // Waits for the call in progress; what was queued and not yet run is dropped, and nothing runs after.
  void stop();

 private:
  struct Command {
    std::optional<Evaluation> result;  // a tell, or else an ask of `count`
    std::size_t count = 0;
  };
  void run_thread();
  bool ending() const;
  void run_tell(const Evaluation& evaluation);
  void run_ask(std::size_t count);
  // The commands to run next: one, or (background) every waiting tell and one ask for all waiting requests.
  std::vector<Command> next_batch_locked();

  Strategy& strategy_;
  const StrategyMode mode_;
  mutable std::mutex mutex_;
  std::condition_variable commands_ready_;  // a command came, or the runner ends
  std::condition_variable answered_;        // an ask was answered
  std::deque<Command> commands_;
  std::vector<Configuration> answers_;
  std::size_t outstanding_ = 0;
  bool exhausted_ = false;
  bool ending_ = false;
  StrategyTimes times_;
  std::thread thread_;
};

}  // namespace kernlathe
