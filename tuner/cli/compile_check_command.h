#pragma once
// `tune compile-check SPEC`: compiles a sample of a spec's valid configurations (or all of them) with NVRTC for a
// device profile, in a pool of compile processes; no GPU is needed. Exit 1 when any configuration fails to compile.

#include <CLI/CLI.hpp>
#include <cstdint>

#include "tuner/cli/spec_options.h"

namespace kernlathe {

struct CompileCheckCommand {
  CommonSpecOptions common;
  bool all = false;
  std::uint64_t sample = 16;
  std::uint64_t seed = 1;
  int jobs = 0;

  void add_to(CLI::App& command);
  int run() const;
};

}  // namespace kernlathe
