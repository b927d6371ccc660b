#pragma once
// `tune validate SPEC`: checks a spec, its space and its template without a GPU (enumerated with a device profile,
// the default configuration's expressions evaluated, its template arguments instantiated).

#include <CLI/CLI.hpp>
#include <string>

namespace kernlathe {

struct ValidateCommand {
  std::string spec_name;
  std::string arch = "sm_90";
  bool json = false;

  void add_to(CLI::App& command);
  int run() const;
};

}  // namespace kernlathe
