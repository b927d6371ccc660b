#include "tuner/cli/replay_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tuner/record/csv_record.h"
#include "tuner/search/benchmark.h"
#include "tuner/search/prior_sources.h"
#include "tuner/search/replay.h"
#include "tuner/search/t4_dataset.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

using Json = nlohmann::ordered_json;

std::vector<std::uint64_t> parse_budgets(const std::string& text) {
  std::vector<std::uint64_t> budgets;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value <= 0)
      throw InputError(fmt::format("--budget: '{}' is not a positive evaluation count (expected e.g. 50,100,200)", item));
    budgets.push_back(static_cast<std::uint64_t>(value));
    start = end + 1;
  }
  return budgets;
}

Json number_or_null(std::optional<double> value) { return value ? Json(*value) : Json(nullptr); }
Json finite_or_null(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }
std::string cell(std::optional<double> value) { return value ? fmt::format("{:g}", *value) : "-"; }

}  // namespace

void ReplayCommand::add_to(CLI::App& command) {
  auto* t4_option = command.add_option("--t4", t4, "community T4 result file (.json or .json.gz)");
  command.add_option("--t1", t1,
                     "T1 space file (default: <name before '-'>.T1.json beside the T4 file, else the benchmark hub's "
                     "<folder>.T1.json or <folder>.json beside or above the T4 file's folder)")
      ->needs(t4_option);
  command
      .add_option("--t4-objective-source", objective_source,
                  "what a configuration scores: 'recorded' (default), the objective's value as the T4 file records it "
                  "(for Kernel Tuner's files the mean of the runtimes, so optima match the published ones), or "
                  "'median', the median of times.runtimes (time objectives only)")
      ->check(CLI::IsMember({"recorded", "median"}))
      ->needs(t4_option);
  command
      .add_option("--t4-direction", direction,
                  "minimize or maximize the objective (default: what the T4 file's metadata declares; 'time' is "
                  "minimized; another objective with no declared direction is an error)")
      ->check(CLI::IsMember({"minimize", "maximize"}))
      ->needs(t4_option);
  command
      .add_option("--t4-objective", objective,
                  "the measurement to use when the T4 file declares several objectives (default: the one declared)")
      ->needs(t4_option);
  auto* csv_option = command.add_option("--csv", csv, "an evaluations.csv recorded by `tune run`")->excludes(t4_option);
  auto* spec_option = command.add_option("--spec", spec, "the kernel spec the CSV was recorded with")->needs(csv_option);
  csv_option->needs(spec_option);
  command.add_option("--arch", arch, "device profile for the spec's constraints (with --csv; default sm_90)");
  command.add_option("--problem", problem, "problem symbols the CSV was recorded with, e.g. N=1048576");
  command.add_option("--strategy", strategy,
                     fmt::format("a strategy or 'all' ({}; the default of tune run: {}; "
                                 "portfolio:model_share=X,local_learns_from_model=0|1,model_first=N,"
                                 "refit_growth=X sets the portfolio's settings)",
                                 fmt::join(strategy_names(), ", "), default_strategy_name()));
  command.add_option("--seeds", seeds, "runs per strategy, seeds 1..N (default 25)")->check(CLI::PositiveNumber);
  command.add_option("--budget", budgets, "evaluation budgets, comma-separated (default 50,100,200)");
  command.add_option("--batch", batch, "configurations asked of the strategy at a time (default 1)")
      ->check(CLI::PositiveNumber);
  command.add_option("--prior", prior,
                     "records of the same kernel measured elsewhere (T4 files of other GPUs, or evaluations.csv files "
                     "with --csv): every strategy tries their best configurations first (docs/search.md)");
  command.add_flag("--json", json, "machine-readable output on stdout");
}

int ReplayCommand::run() const {
  if (t4.empty() && csv.empty()) throw InputError("tune replay needs --t4 FILE or --csv FILE --spec SPEC");
  const std::vector<std::uint64_t> budget_list = parse_budgets(budgets);
  std::vector<std::string> strategies;
  if (strategy == "all") {
    for (const std::string& name : strategy_names())
      if (name != "exhaustive") strategies.push_back(name);  // its order is fixed: one seed says all
  } else {
    strategies.push_back(strategy);
  }

  std::optional<SpaceEnumerator> space;
  std::optional<ReplaySource> source;
  std::string data_name;
  KernelSpec kernel;
  std::optional<T4Objective> objective_read;
  if (!t4.empty()) {
    const std::filesystem::path space_file = t1.empty() ? find_t1_for(t4) : std::filesystem::path(t1);
    kernel.space = read_t1_space(space_file);
    space.emplace(kernel.space, Constants{});
    T4ReadOptions options;
    options.source = *parse_objective_source(objective_source);
    if (!direction.empty()) options.direction = parse_objective_direction(direction);
    options.objective = objective;
    T4Results results = read_t4(t4, kernel.space, options);
    objective_read = results.objective;
    source.emplace(std::move(results.evaluations));
    data_name = std::filesystem::path(t4).filename().string();
  } else {
    kernel = load_kernel_spec(find_spec(spec), parse_problem_overrides(problem));
    // A record written before parameters were added to the space measured their defaults only: the replay holds
    // them there.
    const std::vector<std::string> held = parameters_missing_from(csv, kernel.space);
    if (!held.empty())
      fmt::print(stderr, "{}: written before {} joined the space; the replay holds {} at the default\n", csv,
                 fmt::join(held, ", "), held.size() > 1 ? "them" : "it");
    space.emplace(replay_space(kernel.space, held), run_constants(kernel, device_profile(arch)));
    source.emplace(csv, *space, "");
    data_name = std::filesystem::path(csv).string();
  }
  for (const std::string& name : strategies) make_strategy(name, *space, 1);  // unknown names fail before any run
  std::vector<PriorSource> prior_sources;
  for (const std::string& file : prior) prior_sources.push_back(read_prior_source(file, kernel.space));
  std::vector<Configuration> transfers;
  for (RankedTransfer& transfer : rank_transfers(prior_sources, *space)) transfers.push_back(std::move(transfer.configuration));
  if (!prior.empty())
    fmt::print(stderr, "prior: {} configurations valid here from {} file{}\n", transfers.size(), prior.size(),
               prior.size() == 1 ? "" : "s");

  if (objective_read) {
    // A maximised objective is replayed as its reciprocal (t4_dataset.h): the optimum is stated in its own terms.
    fmt::print(stderr,
               "replaying {} ({} recorded configurations, {} valid in the space): objective '{}', {}, {}d ({}); "
               "optimum {:.6g}{}\n",
               data_name, source->size(), space->valid_count(), objective_read->name,
               objective_read->source == ObjectiveSource::recorded ? "the recorded value" : "the median of the runtimes",
               objective_direction_name(objective_read->direction),
               direction.empty() ? objective_read->direction_from : std::string("--t4-direction"),
               objective_read->best_value.value_or(std::nan("")), objective_read->is_time ? " ms" : "");
  } else {
    fmt::print(stderr, "replaying {} ({} recorded configurations, {} valid in the space, optimum {:.6g} ms)\n",
               data_name, source->size(), space->valid_count(), source->optimum_ms());
  }
  const std::vector<BenchmarkRow> rows =
      run_benchmark(*space, *source, strategies, seeds, budget_list, batch, transfers);

  if (json) {
    Json output = Json::array();
    for (const BenchmarkRow& row : rows) {
      Json entry{{"data", data_name}};
      if (objective_read) {
        entry["objective"] = objective_read->name;
        entry["direction"] = objective_direction_name(objective_read->direction);
        entry["objective_source"] = objective_read->source == ObjectiveSource::recorded ? "recorded" : "median";
        entry["optimum_value"] = number_or_null(objective_read->best_value);
      }
      entry.update(Json{{"strategy", row.strategy},
                        {"budget", row.budget},
                        {"seeds", row.seeds},
                        {"optimum_ms", objective_read && !objective_read->is_time ? Json(nullptr) : Json(source->optimum_ms())},
                        {"median_best_over_optimum", finite_or_null(row.median_best_over_optimum)},
                        {"lower_quartile_best_over_optimum", finite_or_null(row.lower_quartile_best_over_optimum)},
                        {"upper_quartile_best_over_optimum", finite_or_null(row.upper_quartile_best_over_optimum)},
                        {"median_evals_to_within_5pct", number_or_null(row.median_evaluations_to_within_5_percent)},
                        {"median_evals_to_within_10pct", number_or_null(row.median_evaluations_to_within_10_percent)},
                        {"median_failures", row.median_failures},
                        {"median_simulated_seconds", row.median_simulated_seconds}});
      output.push_back(std::move(entry));
    }
    fmt::print("{}\n", output.dump(2));
    return exit_ok;
  }
  fmt::print("{:<24} {:>6} {:>5}  {:>24}  {:>9} {:>9} {:>8} {:>10}\n", "strategy", "budget", "seeds",
             "best/optimum q1 med q3", "to 5%", "to 10%", "failed", "sim. s");
  for (const BenchmarkRow& row : rows) {
    fmt::print("{:<24} {:>6} {:>5}  {:>7.4f} {:>7.4f} {:>7.4f}  {:>9} {:>9} {:>8g} {:>10.1f}\n", row.strategy,
               row.budget, row.seeds, row.lower_quartile_best_over_optimum, row.median_best_over_optimum,
               row.upper_quartile_best_over_optimum, cell(row.median_evaluations_to_within_5_percent),
               cell(row.median_evaluations_to_within_10_percent), row.median_failures, row.median_simulated_seconds);
  }
  return exit_ok;
}

}  // namespace kernlathe
