#include "tuner/cli/export_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tuner/common/error.h"
#include "tuner/common/output_folder.h"
#include "tuner/nvrtc/cubin_cache.h"

namespace kernlathe {
namespace {

using Json = nlohmann::ordered_json;

}  // namespace

void ExportCommand::add_to(CLI::App& command) {
  command.add_option("kernels", options.kernels, "kernel names (results/best/<name>.json)")->required();
  command.add_option("--arch", archs, "archs to build cubins for, comma-separated (default sm_90)");
  command.add_option("-o,--out", options.out, "output directory")->required();
  command.add_option("--dir", options.best_directory, "best-configuration directory (default results/best)");
  command.add_option("--specs", options.specs, "folder of the kernels' specs, <kernel>.yaml (default kernels)");
  command.add_flag("--embed", options.embed, "also write kernlathe_embedded.cpp to compile into the application");
  command.add_flag("--include-stale", options.include_stale, "export stale entries too");
  command.add_flag("--json", json, "machine-readable output");
}

int ExportCommand::run() {
  options.archs.clear();
  std::stringstream list(archs);
  for (std::string arch; std::getline(list, arch, ',');) {
    if (!arch.empty()) options.archs.push_back(arch);
  }
  if (options.cubin_cache.empty()) options.cubin_cache = default_cubin_cache_dir();
  check_output_folder("-o", options.out, "the export");
  std::vector<ExportedKernel> exported = export_kernels(options);
  Json output = Json::array();
  for (const ExportedKernel& kernel : exported) {
    for (const std::string& note : kernel.notes) fmt::print(stderr, "tune export: {}: {}\n", kernel.kernel, note);
    if (json) {
      output.push_back({{"kernel", kernel.kernel}, {"entries", kernel.entries}, {"stale_dropped", kernel.stale_dropped},
                        {"cubins", kernel.cubins}, {"notes", kernel.notes}});
    } else {
      fmt::print("{}: {} entries, {} cubins{}\n", kernel.kernel, kernel.entries, kernel.cubins,
                 kernel.stale_dropped ? fmt::format(", {} stale entries left out", kernel.stale_dropped) : "");
    }
  }
  if (json) fmt::print("{}\n", output.dump(2));
  else fmt::print("exported to {}{}\n", options.out.string(), options.embed ? " (with kernlathe_embedded.cpp)" : "");
  return exit_ok;
}

}  // namespace kernlathe
