#include "tuner/cli/compile_check_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <nlohmann/json.hpp>
#include <vector>

#include "tuner/common/current_executable.h"
#include "tuner/common/error.h"
#include "tuner/compile/compile_pool.h"
#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/session/tuning_session.h"
#include "tuner/space/configuration_checks.h"

namespace kernlathe {
namespace {

using Json = nlohmann::ordered_json;
using SteadyClock = std::chrono::steady_clock;

}  // namespace

void CompileCheckCommand::add_to(CLI::App& command) {
  common.add_to(command, false);
  auto* all_option = command.add_flag("--all", all, "every valid configuration");
  command.add_option("--sample", sample, "N random valid configurations (default 16)")
      ->check(CLI::PositiveNumber)
      ->excludes(all_option);
  command.add_option("--seed", seed, "seed for --sample");
  command.add_option("--jobs", jobs, "compile processes (default 0: one per core)")->check(zero_or_more());
}

int CompileCheckCommand::run() const {
  KernelSpec spec = common.load();
  const std::string arch = common.arch.empty() ? "sm_90" : common.arch;
  DeviceProperties device = device_profile(arch);
  SpaceEnumerator space(spec.space, run_constants(spec, device));
  std::vector<Configuration> configurations;
  if (all) {
    for (std::uint64_t i = 0; i < space.valid_count(); ++i) configurations.push_back(space.at(i));
  } else {
    configurations = space.sample(sample, seed);
    const Configuration fallback = run_default_configuration(spec, space).values;
    if (space.is_valid(fallback) &&
        std::find(configurations.begin(), configurations.end(), fallback) == configurations.end())
      configurations.insert(configurations.begin(), fallback);
  }
  CompilePoolOptions pool_options;
  pool_options.jobs = jobs;
  pool_options.cache_dir = default_cubin_cache_dir();
  pool_options.worker_executable = current_executable();
  CompilePool pool(pool_options);
  const auto started = SteadyClock::now();
  std::vector<std::future<CompileResult>> futures;
  for (const Configuration& configuration : configurations)
    futures.push_back(pool.submit(instantiate(spec, space, configuration, arch_for(device, spec.needs_arch_specific))));
  int failures = 0, cached = 0;
  Json failed = Json::array();
  Json slow = Json::array();  // compiled, with ptxas's "Potential Performance Loss" lines
  double compile_ms = 0;
  for (std::size_t i = 0; i < futures.size(); ++i) {
    CompileResult result = futures[i].get();
    compile_ms += result.compile_ms;
    cached += result.cached ? 1 : 0;
    if (result.ok) {
      std::vector<std::string> warnings = performance_warnings(result.log);
      if (warnings.empty()) continue;
      const std::string configuration = to_string(spec.space, configurations[i]);
      slow.push_back({{"configuration", configuration}, {"warnings", warnings}});
      if (!common.json)
        for (const std::string& warning : warnings)
          fmt::print(stderr, "performance warning: {} {}: {}\n", spec.name, configuration, warning);
      continue;
    }
    ++failures;
    const std::string configuration = to_string(spec.space, configurations[i]);
    if (common.json) {
      failed.push_back({{"configuration", configuration}, {"error", result.error}, {"log", result.log}});
    } else {
      fmt::print(stderr, "compile error: {} {}\n{}\n", spec.name, configuration, result.log);
    }
  }
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();
  if (common.json) {
    Json output{{"kernel", spec.name}, {"arch", arch},          {"compiled", configurations.size()},
                {"failed", failures},   {"seconds", seconds},    {"failures", failed},
                {"cached", cached},     {"performance_warnings", slow}};
    fmt::print("{}\n", output.dump(2));
  } else {
    fmt::print("{}: {} of {} configurations compiled for {} in {:.2f} s ({} compile processes)\n", spec.name,
               configurations.size() - failures, configurations.size(), arch, seconds, pool.jobs());
    // Cubins from the cache come without their compile log, so their warnings cannot be shown here.
    if (!slow.empty() || cached > 0)
      fmt::print("{}: {} with ptxas performance warnings (not failures); {} from the cubin cache, whose logs are "
                 "not kept\n", spec.name, slow.size(), cached);
  }
  return failures == 0 ? exit_ok : exit_failure;
}

}  // namespace kernlathe
