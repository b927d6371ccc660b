#pragma once
// `tune best`: what the best-configuration database holds for a kernel (entries, stale ones marked and why), and
// with --select what the runtime would launch for a problem on an arch or a named board, without a GPU: the rung of
// the ladder, the configuration and the reason, or the runtime's own error when no configuration is usable there
// (issue 30). --select calls the runtime's select (tuner/runtime/kernel_plan.h select_usable) with the device
// properties of a built-in profile (tuner/spec/model.h), so its answer is the runtime's on a device with those
// properties.
//
// With --refresh-description it rewrites the stored description from the kernel's spec as it is now and keeps every
// entry (BestCache::refresh_description): how a change that alters no configuration and no measurement, such as a
// space's problem defaults, reaches the database the runtime reads, without tuning again.
//
// Exit codes: 0 ok; 1 nothing stored, or --select finds no usable configuration; 2 bad options (unknown arch or
// device, a device of another arch, a malformed problem or one naming a symbol the kernel does not have), or a
// refresh that would make current entries stale.

#include <CLI/CLI.hpp>
#include <string>

namespace kernlathe {

struct BestCommand {
  std::string kernel;
  std::string arch;
  std::string problem;
  std::string device;  // --select: a board by the name the driver reports ("NVIDIA H100 PCIe")
  std::string directory = "results/best";
  std::string specs = "kernels";
  bool select = false;
  bool refresh = false;
  bool json = false;

  void add_to(CLI::App& command);
  int run() const;

 private:
  int list_entries() const;
  int show_selection() const;
  int refresh_description() const;
};

}  // namespace kernlathe
