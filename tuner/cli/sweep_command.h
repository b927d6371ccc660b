#pragma once
// `tune sweep WORKLOAD`: tunes every problem of a workload file (tuner/spec/workload.h), one after the other, with
// the options of `tune run`. Each problem is an ordinary run: its records, its best-cache entry and, with the
// results database's other problems of the kernel as its default prior, what the finished problems learned.
// Resumable: the sweep keeps its state in STATE_DIR/state.json (results/workloads/<name>/ by default, or --out);
// started again, it skips the problems that finished and resumes the one that was interrupted. Each problem's
// ranking (the JSON of `tune run --json`) is kept beside the state; stdout gets a summary table (or JSON).

#include <CLI/CLI.hpp>
#include <string>

#include "tuner/cli/run_command.h"

namespace kernlathe {

struct SweepCommand {
  RunCommand run;  // its spec positional is the workload file
  bool restart = false;

  void add_to(CLI::App& command);
  int run_sweep() const;
};

}  // namespace kernlathe
