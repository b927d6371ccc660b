#pragma once
// `tune report`: one self-contained HTML page of charts per kernel (issue 15), drawn from what `tune analyze` and
// `tune replay` compute. The figures are computed in-process by tuner/report/ (chart_data.h, roofline.h) and written
// as JSON to a folder inside the output directory; scripts/report/plots.py (matplotlib, run with an explicit
// interpreter, no shell) draws them.
// No GPU is used, nothing is written outside the output directory, and no command a spec names is run.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace kernlathe {

struct ReportCommand {
  std::vector<std::string> results;
  std::string out;
  std::string python;          // interpreter; default $KERNLATHE_PYTHON, else found (report_command.cpp)
  std::string kernels = "kernels";  // where specs are looked for, by the recorded kernel name
  std::vector<std::string> ceilings;  // ceiling files (one GPU each) for records whose run.json holds none
  std::uint64_t seed = 1;
  int bootstrap = 32;
  int replay_seeds = 10;
  bool no_replay = false;
  bool keep_data = false;

  void add_to(CLI::App& command);
  int run() const;
};

}  // namespace kernlathe
