#pragma once
// `tune sweep WORKLOAD`: tunes every problem of a workload file (tuner/spec/workload.h) with the options of
// `tune run`. Each problem is an ordinary run: its records, its best-cache entry and, with the results database's
// other problems of the kernel as its default prior, what the finished problems learned. With one GPU the problems
// are tuned one after the other; with `--devices` naming several, as many problems as there are GPUs run at once,
// one GPU each, and the last problems share the GPUs left free (tuner/session/workload_schedule.h).
// Resumable: the sweep keeps its state in STATE_DIR/state.json (results/workloads/<name>/ by default, or --out);
// started again, it skips the problems that finished and resumes those that were interrupted. Each problem's
// ranking (the JSON of `tune run --json`) is kept beside the state; stdout gets a summary table (or JSON).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "tuner/cli/run_command.h"

namespace kernlathe {

struct SweepCommand {
  RunCommand run;  // its spec positional is the workload file
  bool restart = false;

  void add_to(CLI::App& command);
  int run_sweep() const { return run_sweep(stdout); }
  // The summary goes to results; progress to stderr.
  int run_sweep(std::FILE* results) const;
};

}  // namespace kernlathe
