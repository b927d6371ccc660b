#pragma once
// `tune replay`: the strategy benchmark on recorded data (a community T4 file with its T1 space, or one of our
// evaluations.csv with its spec). No GPU is used.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace kernlathe {

struct ReplayCommand {
  std::string t4;
  std::string t1;
  std::string objective_source = "recorded";
  std::string direction;
  std::string objective;
  std::string csv;
  std::string spec;
  std::string arch = "sm_90";
  std::string problem;
  std::string strategy = "all";
  int seeds = 25;
  std::string budgets = "50,100,200";
  std::size_t batch = 1;
  bool json = false;
  std::vector<std::string> prior;  // --prior FILE...: records or T4 files of the same kernel measured elsewhere

  void add_to(CLI::App& command);
  int run() const;
};

}  // namespace kernlathe
