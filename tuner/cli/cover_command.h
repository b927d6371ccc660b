#pragma once
// `tune cover KERNEL --max-configs K`: the covering set of a kernel on one GPU model (tuner/cache/covering_set.h)
// from its records: at most K configurations that serve every tuned problem, each problem's fraction of its own
// best, and the same for problems held out of the choice. With --best-dir DIR it writes a database of one entry
// per tuned problem, each holding the chosen configuration that serves it, for `tune export --dir DIR` to ship:
// the runtime then dispatches a problem nobody tuned to its nearest tuned problem's configuration.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace kernlathe {

struct CoverCommand {
  std::string kernel;
  std::string arch = "sm_90";
  std::string gpu;                     // the GPU model's name as records give it; empty: every GPU of the arch
  std::string records_root = "results/runs";
  std::size_t max_configs = 6;
  std::string best_dir;                // where to write the covering database; empty: nothing written
  bool json = false;

  void add_to(CLI::App& command);
  int run() const;
};

}  // namespace kernlathe
