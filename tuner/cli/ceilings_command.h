#pragma once
// `tune ceilings`: the ceilings results are divided by (tuner/measure/ceilings.h), measured on a GPU now.

#include <CLI/CLI.hpp>

namespace kernlathe {

struct CeilingsCommand {
  int device = 0;
  bool json = false;

  void add_to(CLI::App& command);
  int run() const;  // exit 3 without a GPU (NoGpuError reaches main)
};

}  // namespace kernlathe
