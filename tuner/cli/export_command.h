#pragma once
// `tune export KERNEL... -o DIR`: what an application ships to launch tuned kernels through the runtime library
// (tuner/cache/export.h): databases, sources, cubins and, with --embed, a C++ file that embeds them.

#include <CLI/CLI.hpp>
#include <string>

#include "tuner/cache/export.h"

namespace kernlathe {

struct ExportCommand {
  ExportOptions options;
  std::string archs = "sm_90";
  bool json = false;

  void add_to(CLI::App& command);
  int run();
};

}  // namespace kernlathe
