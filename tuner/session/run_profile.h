#pragma once
// Where a `tune run` spent its wall time. Start-up is every step before the first configuration is measured, in
// order; the run loop splits into waiting for compilation and for results, records and the strategy (which overlap
// the GPU's work), beside the evaluation worker's own stages summed over configurations. `tune run` prints the profile on stderr
// at the end and puts it in its --json output, so a slow run shows which step to look at.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/record/evaluation.h"
#include "tuner/search/strategy_runner.h"
#include "tuner/session/lane_idle.h"

namespace kernlathe {

struct ProfilePhase {
  std::string name;
  double seconds = 0;
  // It ran at the same time as the phases around it (on another thread or process: the reference compile while
  // the worker fills buffers, the worker's context while its kernels compile), so start-up does not add it.
  bool alongside = false;
};

struct RunProfile {
  // From the process's start to the run's start; -1 when unknown, or when the run is not the process's first (a
  // sweep's later problems: the time before them went to other runs, not to this one's start-up).
  double process_start_seconds = -1;
  std::vector<ProfilePhase> startup;  // in order, from the run's start to the first measurement request
  double first_request_seconds = 0;   // from the run's start until the first configuration went to a GPU
  double first_result_seconds = 0;    // from the run's start until the first evaluation came back
  // The run loop, summed over evaluations.
  int evaluations = 0;
  double compile_wait_seconds = 0;  // the loop waited for the compile pool
  double evaluate_seconds = 0;      // waiting for measurement results (the GPU works while the loop does the rest)
  WorkerStageTimes worker;          // the worker's own stages (milliseconds)
  double record_seconds = 0;        // appending rows
  double strategy_seconds = 0;      // the loop's time on the strategy: ask and tell, or waiting for its proposals
  // What the lanes (one per device) did over the loop, and what those without a job waited for (lane_idle.h).
  LaneTimes lanes;
  // The strategy's own time, on the loop's thread or (several lanes) its own, with its model updates.
  StrategyTimes strategy;
  bool strategy_in_background = false;
  double final_round_seconds = 0;
  double total_seconds = 0;         // the run's start to its end (the final round included)

  void add_startup(std::string name, double seconds, bool alongside = false) {
    startup.push_back({std::move(name), seconds, alongside});
  }
  double startup_seconds() const;  // the phases not marked alongside
};

// Several lines of text, each starting with "profile", for stderr.
std::string format_profile(const RunProfile& profile);
nlohmann::json profile_to_json(const RunProfile& profile);
// The search loop's lines: what the lanes waited for, and the strategy's own time.
std::string format_lanes_and_strategy(const RunProfile& profile);
nlohmann::json lane_times_to_json(const LaneTimes& lanes);
nlohmann::json strategy_times_to_json(const StrategyTimes& strategy, bool in_background);
// The same figures as run.json's extra fields of the run (rounded text: run_metadata.h keeps strings).
std::map<std::string, std::string> profile_metadata(const RunProfile& profile);

// Seconds since this process started (Linux: /proc/self/stat against the boot-time clock, 10 ms resolution);
// -1 where that cannot be read.
double seconds_since_process_start();
// seconds_since_process_start() for the first run of this process to ask, -1 for every later one (thread-safe).
double process_start_for_a_run();

// Wall time in laps: lap() returns the seconds since construction or the previous lap.
class LapClock {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace kernlathe
