#include "tuner/search/strategy_runner.h"

#include <chrono>

namespace kernlathe {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

StrategyRunner::StrategyRunner(Strategy& strategy, StrategyMode mode) : strategy_(strategy), mode_(mode) {
  if (mode_ == StrategyMode::background) thread_ = std::thread([this] { run_thread(); });
}

StrategyRunner::~StrategyRunner() { stop(); }

void StrategyRunner::stop() {
  {
    std::lock_guard lock(mutex_);
    ending_ = true;
  }
  commands_ready_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StrategyRunner::tell(const Evaluation& evaluation) {
  if (mode_ == StrategyMode::inline_calls) {
    run_tell(evaluation);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    commands_.push_back({evaluation, 0});
  }
  commands_ready_.notify_all();
}

void StrategyRunner::request(std::size_t count) {
  if (count == 0) return;
  {
    std::lock_guard lock(mutex_);
    if (exhausted_) return;
    outstanding_ += count;
    if (mode_ == StrategyMode::background) commands_.push_back({std::nullopt, count});
  }
  if (mode_ == StrategyMode::inline_calls) {
    run_ask(count);
    return;
  }
  commands_ready_.notify_all();
}

std::size_t StrategyRunner::outstanding() const {
  std::lock_guard lock(mutex_);
  return outstanding_;
}

bool StrategyRunner::exhausted() const {
  std::lock_guard lock(mutex_);
  return exhausted_;
}

std::vector<Configuration> StrategyRunner::take() {
  std::lock_guard lock(mutex_);
  std::vector<Configuration> taken = std::move(answers_);
  answers_.clear();
  return taken;
}

void StrategyRunner::wait_for_proposals() {
  std::unique_lock lock(mutex_);
  answered_.wait(lock, [&] { return !answers_.empty() || outstanding_ == 0; });
}

StrategyTimes StrategyRunner::times() const {
  std::lock_guard lock(mutex_);
  return times_;
}

void StrategyRunner::run_tell(const Evaluation& evaluation) {
  const auto start = Clock::now();
  strategy_.tell(evaluation);
  const double seconds = seconds_since(start);
  std::lock_guard lock(mutex_);
  times_.tell_seconds += seconds;
  times_.model_updates = strategy_.model_updates();
}

void StrategyRunner::run_ask(std::size_t count) {
  const auto start = Clock::now();
  std::vector<Configuration> proposals = strategy_.ask(count);
  const double seconds = seconds_since(start);
  {
    std::lock_guard lock(mutex_);
    times_.ask_seconds += seconds;
    ++times_.asks;
    times_.proposals += proposals.size();
    times_.model_updates = strategy_.model_updates();
    if (proposals.empty()) exhausted_ = true;
    for (Configuration& configuration : proposals) answers_.push_back(std::move(configuration));
    // The request is settled, answered in full or not: the loop asks again for what it still lacks.
    outstanding_ -= count <= outstanding_ ? count : outstanding_;
    if (exhausted_) outstanding_ = 0;
  }
  answered_.notify_all();
}

bool StrategyRunner::ending() const {
  std::lock_guard lock(mutex_);
  return ending_;
}

std::vector<StrategyRunner::Command> StrategyRunner::next_batch_locked() {
  std::vector<Command> batch;
  std::size_t asked = 0;
  while (!commands_.empty()) {
    Command command = std::move(commands_.front());
    commands_.pop_front();
    if (command.result) {
      batch.push_back(std::move(command));
    } else {
      asked += command.count;
    }
  }
  if (asked > 0) batch.push_back({std::nullopt, asked});
  return batch;
}

void StrategyRunner::run_thread() {
  while (true) {
    std::vector<Command> batch;
    {
      std::unique_lock lock(mutex_);
      commands_ready_.wait(lock, [&] { return ending_ || !commands_.empty(); });
      if (ending_) return;
      batch = next_batch_locked();
    }
    for (const Command& command : batch) {
      if (ending()) return;  // the run stopped: the rest of the batch is of no use to it
      if (command.result) {
        run_tell(*command.result);
      } else {
        run_ask(command.count);
      }
    }
  }
}

}  // namespace kernlathe
