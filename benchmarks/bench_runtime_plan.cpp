// What the runtime's first use of a kernel spends planning (Kernel::first_use().plan_ms), on the CPU alone: the
// sources read as Runtime::kernel reads them (RuntimeOptions::sources, the bundle of an export) and plan_kernel for
// an NVIDIA H200 (the board profile `tune best --select --device "NVIDIA H200"` uses: sm_90, 132 SMs). The issue's
// floor is a first call from stored cubins within 5 ms, and on an H200 host planning alone took 4.98 ms of gemm_bf16's
// 5.70 (benchmarks/llama_layer_bench.py), so planning is what this measures. No GPU, no CUDA header.
//
// Each repetition plans from a fresh copy of the parsed database, as a new Runtime does. Printed per case, in ms:
// the median and the fastest of the repetitions and the first one of the process (cold caches and lazy
// initialisation), for the whole plan and for its parts: reading the sources, select() alone, and plan_kernel with
// sources read before (as a Runtime plans embedded sources, or a kernel it read the files of already).
//
// Usage: bench_runtime_plan [--export DIR | --databases DIR --sources DIR] [--repetitions N] [KERNEL:PROBLEM ...]
//   default: the repository's results/best databases and templates/, 200 repetitions, the layer's cases
//   (gemm_bf16 at the 4096-token QKV projection and the 16384-token gate/up projection, the down projection with
//   its residual, the RMSNorm).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernlathe/database.h"
#include "kernlathe/runtime.h"
#include "tuner/runtime/kernel_plan.h"
#include "tuner/runtime/source_bundle.h"
#include "tuner/spec/model.h"

using namespace kernlathe;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

struct Case {
  std::string kernel;
  std::string problem;  // problem_text form
};

struct Samples {
  std::vector<double> ms;
  double median() const {
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    return sorted[sorted.size() / 2];
  }
  double fastest() const { return *std::min_element(ms.begin(), ms.end()); }
};

struct Options {
  std::filesystem::path databases = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "results" / "best";
  std::filesystem::path sources = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "templates";
  int repetitions = 200;
  std::vector<Case> cases;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int index = 1; index < argc; ++index) {
    const std::string argument = argv[index];
    const bool has_value = index + 1 < argc;
    if (argument == "--export" && has_value) {
      const std::filesystem::path directory = argv[++index];
      options.databases = directory / "database";
      options.sources = directory / "sources";
    } else if (argument == "--databases" && has_value) {
      options.databases = argv[++index];
    } else if (argument == "--sources" && has_value) {
      options.sources = argv[++index];
    } else if (argument == "--repetitions" && has_value) {
      options.repetitions = std::max(1, std::stoi(argv[++index]));
    } else if (std::size_t colon = argument.find(':'); colon != std::string::npos && argument[0] != '-') {
      options.cases.push_back({argument.substr(0, colon), argument.substr(colon + 1)});
    } else {
      throw std::invalid_argument("unknown argument '" + argument + "'");
    }
  }
  if (options.cases.empty()) {
    // benchmarks/llama_layer_bench.py's first-call section, and gemm_bf16 at the gate/up projection of 16384 tokens.
    options.cases = {{"gemm_bf16", "M=4096,N=6144,K=4096,B_LAYOUT=1"},
                     {"gemm_bf16", "M=16384,N=28672,K=4096,B_LAYOUT=1"},
                     {"gemm_bf16_bias_residual", "M=4096,N=4096,K=14336,B_LAYOUT=1"},
                     {"rmsnorm_bf16", "ROWS=4096,COLS=4096"}};
  }
  return options;
}

// The plan of one case, repeated; the first repetition of the process is kept apart from the rest.
void measure(const Options& options, const Case& measured, const DeviceIdentity& device) {
  const KernelDatabase parsed = read_database(options.databases / (measured.kernel + ".json"));
  const Problem problem = parse_problem_text(measured.problem);
  const std::string& template_name = parsed.description.template_name;
  Samples whole, sources, selection, plan;
  KernelPlan first_plan;
  for (int repetition = 0; repetition < options.repetitions; ++repetition) {
    const KernelDatabase database = parsed;  // what a new Runtime holds: nothing planned from it yet
    auto start = Clock::now();
    KernelPlan planned = plan_kernel(database, read_kernel_sources(options.sources, measured.kernel, template_name),
                                     device, problem);
    whole.ms.push_back(ms_since(start));

    const KernelDatabase again = parsed;
    start = Clock::now();
    const KernelSources read = read_kernel_sources(options.sources, measured.kernel, template_name);
    sources.ms.push_back(ms_since(start));
    start = Clock::now();
    const Selection selected = select(again, device, problem);
    selection.ms.push_back(ms_since(start));
    const KernelDatabase third = parsed;
    start = Clock::now();
    planned = plan_kernel(third, read, device, problem);
    plan.ms.push_back(ms_since(start));
    if (repetition == 0) first_plan = planned;
    if (planned.embedded_key != first_plan.embedded_key || planned.grid != first_plan.grid ||
        selected.configuration != first_plan.selection.configuration)
      throw std::runtime_error(measured.kernel + " at " + measured.problem + ": plans differ between repetitions");
  }
  auto row = [&](const char* part, const Samples& samples) {
    std::printf("  %-44s %9.3f %9.3f %9.3f\n", part, samples.median(), samples.fastest(), samples.ms.front());
  };
  std::printf("%s at %s: %s, grid %lldx%lldx%lld, cubin %s\n", measured.kernel.c_str(), measured.problem.c_str(),
              rung_name(first_plan.selection.rung), static_cast<long long>(first_plan.grid[0]),
              static_cast<long long>(first_plan.grid[1]), static_cast<long long>(first_plan.grid[2]),
              first_plan.embedded_key.c_str());
  std::printf("  %-44s %9s %9s %9s\n", "ms", "median", "fastest", "first");
  row("plan as Runtime::kernel times it", whole);
  row("  reading the sources", sources);
  row("  select()", selection);
  row("  plan_kernel, sources read before", plan);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse_options(argc, argv);
    const DeviceIdentity device = runtime_identity(named_device_profile("NVIDIA H200"));
    std::printf("plan time on the CPU for %s (%s, %lld SMs), databases %s, sources %s, %d repetitions\n\n",
                device.name.c_str(), device.arch().c_str(), static_cast<long long>(named_device_profile(device.name).sm_count),
                options.databases.string().c_str(), options.sources.string().c_str(), options.repetitions);
    for (const Case& measured : options.cases) measure(options, measured, device);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_runtime_plan: %s\n", error.what());
    return 2;
  }
  return 0;
}
