// Search-strategy cost benchmark: replays a recorded run through strategies the way `tune run` drives them (a
// lookahead of proposals asked at the start, then after each result: tell it, ask for one more) and prints the
// seconds the strategy spent per result, told and asked separately, with the slowest single step. The first
// strategy is the reference the others are compared to (the ratio of its seconds per result to theirs).
//
// Default: the bf16 GEMM record at 2048^3 (2,100 rows, 14,838 valid configurations) for 2,000 results, the
// default strategy with the surrogate refitted at every result (the schedule before issue 18) against the default.
// A configuration the record lacks is told as a failure, as `tune replay` does; that changes what is learnt, not the
// cost of learning it.
//
// Usage: bench_search [--csv FILE --spec SPEC --problem M=..,N=.. --arch sm_90] [--results N] [--lookahead L]
//                     [--json] [STRATEGY...]

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/search/replay.h"
#include "tuner/search/strategy.h"
#include "tuner/spec/spec_loader.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

struct Cost {
  std::string strategy;
  std::uint64_t results = 0;
  double tell_seconds = 0;
  double ask_seconds = 0;
  double slowest_step_seconds = 0;  // one tell and the ask after it
  double best_over_optimum = 0;     // what the search found, so a cheaper strategy is seen to search as well

  double per_result() const { return results ? (tell_seconds + ask_seconds) / static_cast<double>(results) : 0; }
};

Cost measure(const std::string& name, const kernlathe::SpaceEnumerator& space, const kernlathe::ReplaySource& source,
             std::uint64_t wanted, std::size_t lookahead) {
  Cost cost{name};
  std::unique_ptr<kernlathe::Strategy> strategy = kernlathe::make_strategy(name, space, 1);
  std::deque<kernlathe::Configuration> pending;
  auto start = Clock::now();
  for (kernlathe::Configuration& configuration : strategy->ask(lookahead)) pending.push_back(std::move(configuration));
  cost.ask_seconds += seconds_between(start, Clock::now());
  double best_ms = 0;
  while (!pending.empty() && cost.results < wanted) {
    const kernlathe::Evaluation evaluation = source.evaluate(pending.front());
    pending.pop_front();
    if (evaluation.ok() && evaluation.time.median_ms > 0 && (best_ms == 0 || evaluation.time.median_ms < best_ms))
      best_ms = evaluation.time.median_ms;
    const auto before_tell = Clock::now();
    strategy->tell(evaluation);
    const auto before_ask = Clock::now();
    for (kernlathe::Configuration& configuration : strategy->ask(lookahead - pending.size()))
      pending.push_back(std::move(configuration));
    const auto after = Clock::now();
    cost.tell_seconds += seconds_between(before_tell, before_ask);
    cost.ask_seconds += seconds_between(before_ask, after);
    cost.slowest_step_seconds = std::max(cost.slowest_step_seconds, seconds_between(before_tell, after));
    ++cost.results;
  }
  cost.best_over_optimum = best_ms > 0 ? best_ms / source.optimum_ms() : 0;
  return cost;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = KERNLATHE_SOURCE_DIR;
  std::string csv =
      root + "/results/runs/gemm_bf16/sm_90/M=2048_N=2048_K=2048_INPUT_KIND=3_ELEMENT_BYTES=2/evaluations.csv";
  std::string spec_file = root + "/kernels/gemm_bf16.yaml";
  std::string problem = "M=2048,N=2048,K=2048";
  std::string arch = "sm_90";
  std::uint64_t results = 2000;
  std::size_t lookahead = 33;  // `tune run` with 16 compile jobs: 2 * jobs + 1
  bool json = false;
  std::vector<std::string> strategies;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const bool has_value = i + 1 < argc;
    if (argument == "--json") {
      json = true;
    } else if (argument == "--csv" && has_value) {
      csv = argv[++i];
    } else if (argument == "--spec" && has_value) {
      spec_file = argv[++i];
    } else if (argument == "--problem" && has_value) {
      problem = argv[++i];
    } else if (argument == "--arch" && has_value) {
      arch = argv[++i];
    } else if (argument == "--results" && has_value) {
      results = std::stoull(argv[++i]);
    } else if (argument == "--lookahead" && has_value) {
      lookahead = std::max<std::size_t>(1, std::stoull(argv[++i]));
    } else if (!argument.starts_with("--")) {
      strategies.push_back(argument);
    } else {
      std::cerr << "usage: bench_search [--csv FILE --spec SPEC --problem P --arch A] [--results N] "
                   "[--lookahead L] [--json] [STRATEGY...]\n";
      return 2;
    }
  }
  if (strategies.empty()) strategies = {"portfolio:refit_growth=0", kernlathe::default_strategy_name()};

  try {
    const kernlathe::KernelSpec spec =
        kernlathe::load_kernel_spec(spec_file, kernlathe::parse_problem_overrides(problem));
    kernlathe::Constants constants = kernlathe::device_property_values(kernlathe::device_profile(arch));
    for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, kernlathe::Value{value});
    const kernlathe::SpaceEnumerator space(spec.space, constants);
    const kernlathe::ReplaySource source(csv, space, "");

    std::vector<Cost> costs;
    for (const std::string& name : strategies) costs.push_back(measure(name, space, source, results, lookahead));

    const auto ratio_to_first = [&](const Cost& cost) {
      return cost.per_result() > 0 ? costs.front().per_result() / cost.per_result() : 0.0;
    };
    if (json) {
      nlohmann::json report = nlohmann::json::array();
      for (const Cost& cost : costs)
        report.push_back({{"strategy", cost.strategy},
                          {"results", cost.results},
                          {"tell_seconds", cost.tell_seconds},
                          {"ask_seconds", cost.ask_seconds},
                          {"milliseconds_per_result", cost.per_result() * 1e3},
                          {"slowest_step_milliseconds", cost.slowest_step_seconds * 1e3},
                          {"best_over_optimum", cost.best_over_optimum},
                          {"ratio_to_first", ratio_to_first(cost)}});
      std::cout << report.dump(2) << "\n";
      return 0;
    }
    fmt::print("{}: {} recorded configurations, {} valid; {} results per strategy, lookahead {}\n", spec.name,
               source.size(), space.valid_count(), results, lookahead);
    fmt::print("{:<40} {:>8} {:>9} {:>9} {:>12} {:>12} {:>10} {:>8}\n", "strategy", "results", "tell s", "ask s",
               "ms/result", "slowest ms", "best/opt", "ratio");
    for (const Cost& cost : costs)
      fmt::print("{:<40} {:>8} {:>9.3f} {:>9.3f} {:>12.3f} {:>12.1f} {:>10.4f} {:>7.1f}x\n", cost.strategy,
                 cost.results, cost.tell_seconds, cost.ask_seconds, cost.per_result() * 1e3,
                 cost.slowest_step_seconds * 1e3, cost.best_over_optimum, ratio_to_first(cost));
  } catch (const std::exception& error) {
    std::cerr << "bench_search: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
