// Enumeration benchmark: loads GEMM-like benchmark spaces, counts their valid configurations against the sm_90
// profile and checks the floors the space module promises (one core, Release):
//   bench_medium: ~2e7 combinations, ~3.5e5 valid, counted in under 1 s
//   bench_large:  ~1.2e8 combinations, ~1.7e7 valid, counted in under 10 s
// and that memory follows the valid count, not the combination count (peak RSS via getrusage).
//
// Usage: bench_space [--json] [space.yaml seconds_floor]...
// Exit status 1 when a floor is missed.

#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace {

double peak_rss_mebibytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Case {
  std::string file;
  double floor_seconds = 0;
};

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::vector<Case> cases;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (i + 1 < argc) {
      cases.push_back({argv[i], std::stod(argv[i + 1])});
      ++i;
    } else {
      std::cerr << "usage: bench_space [--json] [space.yaml seconds_floor]...\n";
      return 2;
    }
  }
  if (cases.empty()) {
    cases = {{std::string(KERNLATHE_SOURCE_DIR) + "/spaces/bench_medium.yaml", 1.0},
             {std::string(KERNLATHE_SOURCE_DIR) + "/spaces/bench_large.yaml", 10.0}};
  }

  kernlathe::Constants constants = kernlathe::device_property_values(kernlathe::device_profile("sm_90"));
  // Problem symbols the benchmark spaces read: a square GEMM.
  for (const char* symbol : {"M", "N", "K"}) constants.emplace_back(symbol, kernlathe::Value{std::int64_t{4096}});

  bool all_pass = true;
  nlohmann::json report = nlohmann::json::array();
  for (const Case& benchmark : cases) {
    try {
      kernlathe::Space space = kernlathe::load_space(benchmark.file);
      double rss_before = peak_rss_mebibytes();
      auto start = std::chrono::steady_clock::now();
      kernlathe::SpaceEnumerator enumerator(space, constants);
      double seconds = seconds_since(start);
      double rss_after = peak_rss_mebibytes();

      // Index <-> configuration round trips at random positions: the cost a search strategy pays per proposal.
      std::mt19937_64 generator(1);
      const int lookups = 200000;
      auto lookup_start = std::chrono::steady_clock::now();
      std::uint64_t mismatches = 0;
      for (int i = 0; i < lookups; ++i) {
        std::uint64_t index = generator() % enumerator.valid_count();
        if (enumerator.index_of(enumerator.at(index)) != index) ++mismatches;
      }
      double lookup_microseconds = seconds_since(lookup_start) / lookups * 1e6;

      bool pass = seconds < benchmark.floor_seconds && mismatches == 0;
      all_pass = all_pass && pass;
      double valid = static_cast<double>(enumerator.valid_count());
      if (json) {
        report.push_back({{"space", space.name},
                          {"file", benchmark.file},
                          {"parameters", space.parameters.size()},
                          {"constraints", space.constraints.size()},
                          {"combinations", enumerator.total_combinations()},
                          {"valid", enumerator.valid_count()},
                          {"seconds", seconds},
                          {"floor_seconds", benchmark.floor_seconds},
                          {"peak_rss_mib", rss_after},
                          {"peak_rss_growth_mib", rss_after - rss_before},
                          {"round_trip_microseconds", lookup_microseconds},
                          {"round_trip_mismatches", mismatches},
                          {"pass", pass}});
      } else {
        fmt::print("{}: {} parameters, {} constraints\n", space.name, space.parameters.size(),
                   space.constraints.size());
        fmt::print("  combinations   {:.4g}\n", enumerator.total_combinations());
        fmt::print("  valid          {} ({:.3g} of combinations)\n", enumerator.valid_count(),
                   valid / enumerator.total_combinations());
        fmt::print("  counted in     {:.3f} s (floor {:.1f} s)\n", seconds, benchmark.floor_seconds);
        fmt::print("  peak RSS       {:.1f} MiB (+{:.1f} MiB while counting, {:.2f} bytes per valid configuration)\n",
                   rss_after, rss_after - rss_before, (rss_after - rss_before) * 1048576.0 / valid);
        fmt::print("  at+index_of    {:.2f} us per round trip, {} mismatches\n", lookup_microseconds, mismatches);
        fmt::print("  floor          {}\n", pass ? "PASS" : "FAIL");
      }
    } catch (const std::exception& error) {
      std::cerr << benchmark.file << ": " << error.what() << "\n";
      all_pass = false;
    }
  }
  if (json) std::cout << report.dump(2) << "\n";
  return all_pass ? 0 : 1;
}
