#pragma once
// `tune t4`: the project's records written as community T4 result files with their T1 spaces (issue 15, interop).
// No GPU is used.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace kernlathe {

struct T4Command {
  std::vector<std::string> results;
  std::string out;
  bool json = false;

  void add_to(CLI::App& command);
  int run() const;
};

}  // namespace kernlathe
