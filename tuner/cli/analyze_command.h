#pragma once
// `tune analyze`: which parameters matter on which GPU (issue 15), from recorded data only. No GPU is used.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace kernlathe {

struct AnalyzeCommand {
  std::vector<std::string> results;
  bool json = false;
  std::uint64_t seed = 1;
  int bootstrap = 32;
  std::string kernels = "kernels";    // where specs are looked for (the roofline's flops and bytes)
  std::vector<std::string> ceilings;  // --ceilings files, for records whose run.json holds no ceilings

  void add_to(CLI::App& command);
  int run() const;
};

}  // namespace kernlathe
