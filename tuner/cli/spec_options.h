#pragma once
// The options every spec-reading subcommand shares: the spec, a device profile, problem overrides, the GPU index
// and --json.

#include <CLI/CLI.hpp>
#include <string>

#include "tuner/spec/model.h"

namespace kernlathe {

struct CommonSpecOptions {
  std::string spec;
  std::string arch;
  std::string problem;
  int device = 0;
  bool json = false;

  // Adds the options to command; returns the --device option (null without with_device).
  CLI::Option* add_to(CLI::App& command, bool with_device);
  // The spec with the problem overrides. InputError when it cannot be found or read.
  KernelSpec load() const;
};

// Checks of numeric options with a readable message ("--timeout: -1 is not above 0"); CLI11's own number checks
// print their range up to the largest double. above_zero: counts and durations that must be positive;
// zero_or_more: counts where 0 means "choose for me" (--jobs 0: one compile process per core).
CLI::Validator above_zero();
CLI::Validator zero_or_more();

}  // namespace kernlathe
