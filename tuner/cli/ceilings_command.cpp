#include "tuner/cli/ceilings_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tuner/common/error.h"
#include "tuner/session/device_query.h"

namespace kernlathe {

void CeilingsCommand::add_to(CLI::App& command) {
  command.add_option("--device", device, "GPU index (default 0)");
  command.add_flag("--json", json, "machine-readable output");
}

int CeilingsCommand::run() const {
  fmt::print(stderr, "measuring the ceilings of GPU {} (a few seconds)\n", device);
  const Ceilings ceilings = query_gpu_ceilings(device);
  if (json) {
    nlohmann::json output = {{"device", device},
                             {"copy_gbps", ceilings.copy_gbps},
                             {"pinned_h2d_gbps", ceilings.pinned_h2d_gbps},
                             {"pinned_duplex_gbps", ceilings.pinned_duplex_gbps},
                             {"fma_gflops", ceilings.fma_gflops},
                             {"tensor_gflops", ceilings.tensor_gflops},
                             {"tensor_source", ceilings.tensor_source},
                             {"failures", ceilings.failures}};
    fmt::print("{}\n", output.dump(2));
  } else {
    auto shown = [](double value, const char* unit) { return value > 0 ? fmt::format("{:.1f} {}", value, unit) : "not measured"; };
    fmt::print("device copy (read + write)        {}\n", shown(ceilings.copy_gbps, "GB/s"));
    fmt::print("pinned host to device             {}\n", shown(ceilings.pinned_h2d_gbps, "GB/s"));
    fmt::print("pinned both directions at once    {}\n", shown(ceilings.pinned_duplex_gbps, "GB/s"));
    fmt::print("fp32 FMA                          {}\n", shown(ceilings.fma_gflops / 1e3, "TFLOP/s"));
    fmt::print("tensor cores ({})  {}\n", ceilings.tensor_source.empty() ? "cuBLAS bf16" : ceilings.tensor_source,
               shown(ceilings.tensor_gflops / 1e3, "TFLOP/s"));
    if (!ceilings.failures.empty()) fmt::print("not measured: {}\n", ceilings.failures);
  }
  return ceilings.failures.empty() ? exit_ok : exit_failure;
}

}  // namespace kernlathe
