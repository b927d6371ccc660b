#pragma once
// `tune export`: what an application ships to launch tuned kernels through the runtime library.
//
//   <out>/database/<kernel>.json        the kernel's database: its description and current entries (stale ones left out)
//   <out>/sources/<kernel>.source.json  the template and every file it includes, for NVRTC on archs not exported
//   <out>/cubins/<key>.cubin, .name     cubins for the exported archs, named by embedded_key() of their request
//   <out>/kernlathe_embedded.cpp        with embed: all of the above as data, registered at start-up
//                                       (kernlathe/embedded.h); compile it into the executable
//
// Cubins are built for what the runtime will ask on each exported arch: every current entry of that arch (as its
// own device would select it), and the configuration the ladder gives each board of that arch (the arch's profile
// and the known boards of tuner/spec/model.h) at each stored problem and at the default problem. Derived values
// that depend on the SM count and only shape the launch are not part of a cubin's key (KernelPlan::unkeyed_values),
// so one cubin serves every board; one the template compiles in (gemm's WG_SPLITS) gets a cubin per value the
// known boards give it. A board outside that list whose SM count changes such a value compiles at first use.

#include <filesystem>
#include <string>
#include <vector>

namespace kernlathe {

struct ExportOptions {
  std::vector<std::string> kernels;          // names (results/best/<name>.json) with their specs under kernels/
  std::vector<std::string> archs{"sm_90"};   // real archs to build cubins for
  std::filesystem::path best_directory = "results/best";
  std::filesystem::path specs = "kernels";   // where <kernel>.yaml lives
  std::filesystem::path out;
  std::filesystem::path cubin_cache;         // NVRTC's disk cache while exporting; empty: none
  bool embed = false;
  bool include_stale = false;
};

struct ExportedKernel {
  std::string kernel;
  int entries = 0;        // current entries exported
  int stale_dropped = 0;  // stale entries left out
  int cubins = 0;
  std::vector<std::string> notes;  // one line each: what was dropped or could not be built, and why
};

// Every kernel is read and checked before the first file is written, and files are written only after every cubin
// compiled, so an error leaves no partial export. Throws InputError for an unknown kernel or arch, a kernel without
// stored entries, a database without a description, a changed template, or a kernel whose default configuration
// breaks a constraint at its default problem on an exported arch (the message names the kernel, the arch and the
// constraint); TunerError when an exported configuration does not compile. Where the ladder finds no usable
// configuration for a stored problem on an arch, no cubin is built and a note says so.
std::vector<ExportedKernel> export_kernels(const ExportOptions& options);

}  // namespace kernlathe
