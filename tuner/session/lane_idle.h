#pragma once
// What the lanes of a run (measurement_lanes.h) waited for. A lane without a job waits for whatever keeps the run
// loop from handing it one: the loop waiting for the strategy's proposals (or running the strategy itself), waiting
// for a compilation, writing records, doing its other bookkeeping, or having nothing left to hand out (the budget
// reached, the space or the strategy spent: the last results are coming in). The ledger integrates, over the
// run's wall time, the number of idle lanes times the time the loop spent on each of those, so the sum of what the
// lanes waited for plus what they measured is the lanes' whole time: nothing is counted twice or left out.
//
// It keeps no clock and no lock: MeasurementLanes calls it under its mutex with steady_clock times, and the tests
// with made-up ones.

#include <array>
#include <chrono>
#include <cstddef>
#include <string_view>

namespace kernlathe {

// What the run loop is doing; set by the loop, read when a lane is idle.
enum class LoopActivity {
  loop,         // its own bookkeeping (the progress line, queue handling)
  strategy,     // telling or asking the strategy, or waiting for its proposals
  compilation,  // waiting for the compile pool
  records,      // appending rows
  results,      // waiting for results with nothing to hand out
};
inline constexpr std::size_t loop_activity_count = 5;
std::string_view loop_activity_name(LoopActivity activity);

// Lane-seconds over the loop: every lane alive counts the wall time, measuring or idle; a lost lane stops counting.
struct LaneTimes {
  std::size_t lanes = 0;
  double lane_seconds = 0;       // measuring + every idle figure
  double measuring_seconds = 0;  // a lane had a job
  std::array<double, loop_activity_count> idle_seconds{};  // by what the loop did meanwhile (LoopActivity order)

  double idle(LoopActivity activity) const { return idle_seconds[static_cast<std::size_t>(activity)]; }
  double idle_total() const;
};

class LaneIdleLedger {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Counting starts: lanes alive, all idle, the loop at its own bookkeeping.
  void start(std::size_t lanes, TimePoint now);
  // The loop turns to another activity.
  void set_activity(LoopActivity activity, TimePoint now);
  // The lanes' state changed: how many are alive (not lost) and how many of those are idle.
  void set_lanes(std::size_t alive, std::size_t idle, TimePoint now);
  // Counting ends (the search stopped); later calls change nothing.
  void stop(TimePoint now);
  LaneTimes times() const { return times_; }

 private:
  void advance(TimePoint now);

  bool counting_ = false;
  TimePoint last_{};
  LoopActivity activity_ = LoopActivity::loop;
  std::size_t alive_ = 0;
  std::size_t idle_ = 0;
  LaneTimes times_;
};

}  // namespace kernlathe
