#pragma once
// `tune space SPEC`: counts and lists a spec's valid configurations (or a space file's, with --problem), without a
// GPU when --arch names a built-in profile.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tuner/cli/spec_options.h"
#include "tuner/spec/model.h"

namespace kernlathe {

struct SpaceCommand {
  CommonSpecOptions common;
  std::string list_text;  // N or "all"
  std::uint64_t sample = 0;
  std::uint64_t seed = 1;

  void add_to(CLI::App& command);
  int run() const;

 private:
  KernelSpec load() const;
  std::uint64_t list_count() const;
};

}  // namespace kernlathe
