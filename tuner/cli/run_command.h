#pragma once
// `tune run`: tunes a kernel spec on the GPU, on several GPUs of this host (--devices), or over several processes
// started by mpirun; or replays a recorded run. Prints the ranking (a table, or JSON with --json) on stdout and
// progress and the time profile on stderr.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tuner/cli/spec_options.h"
#include "tuner/measure/measurement.h"
#include "tuner/search/strategy.h"

namespace kernlathe {

class Measurer;
struct KernelSpec;

// Where a run writes what `tune run` prints: stdout and stderr, or what its caller gives. `tune sweep` tunes several
// problems at once, each run writing its report to a file of its own and its stderr lines under a prefix.
struct RunOutput {
  std::FILE* results = stdout;  // the ranking, or the --json report
  std::string stderr_prefix;    // put before each line the run prints on stderr (the profile, the session's notes)
  bool progress = true;         // the session's progress line and its progress messages on stderr
};

struct RunCommand {
  CommonSpecOptions common;
  std::string strategy = default_strategy_name();  // chosen by cross-validation (README "Search strategies")
  std::uint64_t budget = 0;
  std::string time_budget;
  std::string out;
  bool resume = false;
  bool cold = false;
  bool warm = false;
  MeasurementOverrides measurement;  // --min-samples and the rest; unset: the defaults of the spec's kind
  std::string energy;
  std::string objective = "time";
  std::uint64_t seed = 1;
  int jobs = 0;
  std::string replay;
  std::string strategy_thread = "auto";  // --strategy-thread: auto, on or off
  double replay_pace_ms = 0;  // --replay-pace: milliseconds each replayed measurement takes
  bool no_cubin_cache = false;
  bool fresh_ceilings = false;
  std::string ceiling_cache;
  double timeout = 10;
  std::string best_dir = "results/best";
  int final_candidates = 5;
  int final_rounds = 3;
  int final_max_rounds = 15;
  std::string devices;  // --devices: all, or indices 0,1,...
  double rank_timeout = 10;  // under mpirun: seconds of silence after which a rank is lost
  std::vector<std::string> configurations;  // --config K=V,...: measure these alone
  CLI::Option* device_option = nullptr;  // --device, to tell whether it was given
  std::vector<std::string> prior;  // --prior FILE...: records or T4 files of this kernel measured elsewhere
  bool no_prior = false;           // --no-prior: not even the results database's other records of the kernel
  // Not an option: opens device `index` in place of a GPU's evaluation worker (TuneOptions::open_device), so that
  // tests run whole sweeps over stand-in GPUs (tests/cli_sweep_command_test.cpp). Unset from the command line.
  std::function<std::unique_ptr<Measurer>(const KernelSpec& spec, int index)> open_device;
  // Not an option: tune on this process's GPUs even when started by mpirun. A sweep under mpirun deals its problems
  // over the ranks itself (sweep_command.h), and each rank tunes its problems alone.
  bool alone_under_mpirun = false;

  void add_to(CLI::App& command);
  int run() const { return run(RunOutput{}); }
  int run(const RunOutput& output) const;
};

// --devices: "all" (every GPU the driver reports; NoGpuError without one, InputError with replay) or a
// comma-separated list of indices (InputError naming the bad one).
std::vector<int> parse_device_list(const std::string& text, bool replay);

}  // namespace kernlathe
