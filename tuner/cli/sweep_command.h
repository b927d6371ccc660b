#pragma once
// `tune sweep WORKLOAD`: tunes every problem of a workload file (tuner/spec/workload.h) with the options of
// `tune run`. Each problem is an ordinary run: its records, its best-cache entry and, with the results database's
// other problems of the kernel as its default prior, what the finished problems learned. With one GPU the problems
// are tuned one after the other; with `--devices` naming several, as many problems as there are GPUs run at once,
// one GPU each, and the last problems share the GPUs left free (tuner/session/workload_schedule.h).
// Resumable: the sweep keeps its state in STATE_DIR/state.json (results/workloads/<name>/ by default, or --out);
// started again, it skips the problems that finished and resumes those that were interrupted. Each problem's
// ranking (the JSON of `tune run --json`) is kept beside the state; stdout gets a summary table (or JSON).
//
// Under mpirun (`mpirun -n R tune sweep WORKLOAD`, each rank with its own --devices or the GPU of its local rank)
// rank 0 deals the problems to the ranks as their devices come free, in workload order (tuner/cluster/sweep_deal.h):
// each problem is tuned once, by one rank, over that rank's devices as above, and identical problems never at once.
// Every rank writes its problems' records and reports into the one --out folder (shared by the hosts); rank 0 alone
// writes state.json and prints the summary of every problem; every rank exits with rank 0's exit code.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "tuner/cli/run_command.h"

namespace kernlathe {

class Communicator;

struct SweepCommand {
  RunCommand run;  // its spec positional is the workload file
  bool restart = false;
  // Not an option: the ranks to deal the problems over, in place of mpirun's, so that tests run a sweep's ranks as
  // threads of one process (tests/cli_sweep_command_test.cpp). Null: MPI's ranks when started by mpirun, else none.
  Communicator* ranks = nullptr;

  void add_to(CLI::App& command);
  int run_sweep() const { return run_sweep(stdout); }
  // The summary goes to results; progress to stderr.
  int run_sweep(std::FILE* results) const;
};

}  // namespace kernlathe
