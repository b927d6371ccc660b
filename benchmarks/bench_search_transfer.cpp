// Transfer benchmark (issue 32): replays recorded landscapes on the CPU. For each kernel with recordings of several
// GPUs (community T4 files in one folder, grouped by the T1 file each names: "convolution-A4000.T4.json.gz" ->
// convolution.T1.json), each GPU in turn is the target and the other GPUs' recordings the prior; the default
// strategy runs on the target's landscape with and without the prior for each seed, and the geometric mean of
// best/optimum is printed at each budget.
//
// Then the same over the project's own records (--runs DIR, default results/runs): for each kernel and problem
// recorded on several GPU models (by run.json's gpu_name, e.g. the H100 and the H200), each model in turn is the
// target and the others the prior; the space is the kernel spec's under kernels/ at that problem (sm_90 profile).
// A record whose columns are not the spec's current ones is left out with a note.
//
// With --single-sources, a third section: for each kernel of the T4 folder, every GPU as the target with each other
// GPU alone as the prior (one source, as the project's records have; another vendor's GPU alone among them). It
// checks the prior's handling on more pairings than leave-one-out gives; its floors are judged like the others'.
//
// Floors (issue 32): with the prior, <= 1.03 at 20 evaluations and <= 1.01 at 50 over every target and seed of each
// section, and no target worse with the prior than without beyond the noise (transfer_benchmark.h
// worse_beyond_noise). Exit 1 when a floor is missed, 2 on bad usage.
//
// Usage: bench_search_transfer [--t4-dir DIR] [--runs DIR] [--no-records] [--single-sources] [--seeds N]
//                              [--first-seed N] [--strategy S] [--transfers N] [--lead N] [--judge-after N]
//                              [--model-share X] [--json]
// (--transfers, --lead, --judge-after and --model-share replace the PriorSettings defaults, to compare settings;
// --first-seed N runs seeds N..N+seeds-1, default 1, to check a comparison on other seeds.)

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"
#include "tuner/search/strategy.h"
#include "tuner/search/t4_dataset.h"
#include "tuner/search/replay.h"
#include "tuner/search/transfer_benchmark.h"
#include "tuner/spec/spec_loader.h"
#include "tuner/spec/t1_reader.h"

namespace {

namespace fs = std::filesystem;
using kernlathe::geometric_mean;

// "convolution-A4000.T4.json.gz" -> "A4000".
std::string device_of(const fs::path& t4_file) {
  const std::string name = t4_file.filename().string();
  const std::size_t dash = name.find('-');
  const std::size_t suffix = name.find(".T4.");
  if (dash == std::string::npos || suffix == std::string::npos || suffix <= dash) return name;
  return name.substr(dash + 1, suffix - dash - 1);
}

// One kernel at one problem, recorded on several GPU models.
struct RecordGroup {
  std::string kernel;
  std::string problem;
  std::map<std::string, fs::path> record_by_gpu;  // the largest record of each model
};

std::vector<RecordGroup> record_groups(const fs::path& runs) {
  std::map<std::pair<std::string, std::string>, RecordGroup> groups;
  std::vector<fs::path> files;
  std::error_code error;
  for (auto entry = fs::recursive_directory_iterator(runs, error); !error && entry != fs::recursive_directory_iterator();
       entry.increment(error))
    if (entry->path().filename() == "evaluations.csv") files.push_back(entry->path());
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const std::vector<kernlathe::RunMetadata> metadata = kernlathe::read_run_metadata(file);
    if (metadata.empty() || metadata.back().kernel.empty() || metadata.back().gpu_name.empty()) continue;
    const kernlathe::RunMetadata& run = metadata.back();
    RecordGroup& group = groups[{run.kernel, run.problem}];
    group.kernel = run.kernel;
    group.problem = run.problem;
    // Of several records of one GPU (a full search, a re-measurement of the stored configuration), the largest file:
    // the landscape with the most configurations.
    auto [slot, added] = group.record_by_gpu.try_emplace(run.gpu_name, file);
    if (!added && fs::file_size(file, error) > fs::file_size(slot->second, error)) slot->second = file;
  }
  std::vector<RecordGroup> several;
  for (auto& [key, group] : groups)
    if (group.record_by_gpu.size() >= 2) several.push_back(std::move(group));
  return several;
}

struct Options {
  fs::path t4_dir = fs::path(KERNLATHE_SOURCE_DIR) / ".." / "shared" / "datasets" / "t4";
  fs::path runs = fs::path(KERNLATHE_SOURCE_DIR) / "results" / "runs";
  int seeds = 10;
  int first_seed = 1;
  std::string strategy = kernlathe::default_strategy_name();
  bool json = false;
  bool records = true;
  bool single_sources = false;
  kernlathe::PriorSettings settings;
};

// Nothing on bad usage (the usage line is printed).
std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const bool has_value = i + 1 < argc;
    if (argument == "--t4-dir" && has_value) {
      options.t4_dir = argv[++i];
    } else if (argument == "--runs" && has_value) {
      options.runs = argv[++i];
    } else if (argument == "--no-records") {
      options.records = false;
    } else if (argument == "--single-sources") {
      options.single_sources = true;
    } else if (argument == "--seeds" && has_value) {
      options.seeds = std::max(1, std::stoi(argv[++i]));
    } else if (argument == "--first-seed" && has_value) {
      options.first_seed = std::max(1, std::stoi(argv[++i]));
    } else if (argument == "--strategy" && has_value) {
      options.strategy = argv[++i];
    } else if (argument == "--transfers" && has_value) {
      options.settings.transfers = std::stoul(argv[++i]);
    } else if (argument == "--lead" && has_value) {
      options.settings.lead = std::stoul(argv[++i]);
    } else if (argument == "--judge-after" && has_value) {
      options.settings.judge_after = std::max<std::size_t>(1, std::stoul(argv[++i]));
    } else if (argument == "--model-share" && has_value) {
      options.settings.model_share = std::clamp(std::stod(argv[++i]), 0.0, 1.0);
    } else if (argument == "--json") {
      options.json = true;
    } else {
      std::cerr << "usage: bench_search_transfer [--t4-dir DIR] [--runs DIR] [--no-records] [--single-sources] "
                   "[--seeds N] [--first-seed N] [--strategy S] [--transfers N] [--lead N] [--judge-after N] "
                   "[--model-share X] [--json]\n";
      return std::nullopt;
    }
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = parse_options(argc, argv);
  if (!options) return 2;
  const auto& [t4_dir, runs, seeds, first_seed, strategy, json, records, single_sources, settings] = *options;
  const std::vector<std::uint64_t> budgets = {20, 50};
  const std::vector<double> floors = {1.03, 1.01};
  try {
    nlohmann::ordered_json output = nlohmann::ordered_json::array();
    // By section (community T4 files, the project's records): [budget index] -> every target's seeds.
    std::map<std::string, std::vector<std::vector<double>>> all_with, all_without;
    bool missed = false;
    if (!json)
      fmt::print("{:<14} {:<36} {:<24} {:>9}  {:>9} {:>9}  {:>9} {:>9}  {}\n", "kernel", "data", "target",
                 "top1/opt", "@20 prior", "@20 none", "@50 prior", "@50 none", "worse?");
    // One line (or JSON row) per target; every seed's figures join the summary.
    const auto report = [&](const std::string& section, const std::string& kernel, const std::string& data,
                            const std::vector<kernlathe::TransferCase>& cases) {
      all_with[section].resize(budgets.size());
      all_without[section].resize(budgets.size());
      for (const kernlathe::TransferCase& result : cases) {
        std::vector<std::string> worse;
        nlohmann::ordered_json row{{"kernel", kernel}, {"data", data}, {"target", result.target},
                                   {"prior_sources", result.prior_sources},
                                   {"top_transfer_over_optimum", result.top_transfer_over_optimum}};
        std::vector<double> with_means, without_means;
        for (std::size_t index = 0; index < budgets.size(); ++index) {
          with_means.push_back(geometric_mean(result.with_prior[index]));
          without_means.push_back(geometric_mean(result.without_prior[index]));
          std::vector<double>& with = all_with[section][index];
          std::vector<double>& without = all_without[section][index];
          with.insert(with.end(), result.with_prior[index].begin(), result.with_prior[index].end());
          without.insert(without.end(), result.without_prior[index].begin(), result.without_prior[index].end());
          if (kernlathe::worse_beyond_noise(result.with_prior[index], result.without_prior[index])) {
            worse.push_back(fmt::format("@{}", budgets[index]));
            missed = true;
          }
          row[fmt::format("with_prior_at_{}", budgets[index])] = with_means.back();
          row[fmt::format("without_prior_at_{}", budgets[index])] = without_means.back();
          row[fmt::format("with_prior_seeds_at_{}", budgets[index])] = result.with_prior[index];
          row[fmt::format("without_prior_seeds_at_{}", budgets[index])] = result.without_prior[index];
        }
        row["worse_beyond_noise"] = worse;
        output.push_back(row);
        if (!json)
          fmt::print("{:<14} {:<36} {:<24} {:>9.4f}  {:>9.4f} {:>9.4f}  {:>9.4f} {:>9.4f}  {}\n", kernel,
                     data.substr(0, 36), result.target.substr(0, 24), result.top_transfer_over_optimum,
                     with_means[0], without_means[0], with_means[1], without_means[1],
                     worse.empty() ? "no" : fmt::format("{}", fmt::join(worse, ",")));
        std::fflush(stdout);
      }
    };

    std::map<fs::path, std::vector<fs::path>> files_by_t1;
    for (const fs::directory_entry& entry : fs::directory_iterator(t4_dir)) {
      const std::string name = entry.path().filename().string();
      if (name.find(".T4.json") != std::string::npos) files_by_t1[kernlathe::default_t1_for(entry.path())].push_back(entry.path());
    }
    for (auto& [t1_file, t4_files] : files_by_t1) {
      if (t4_files.size() < 2) continue;
      std::sort(t4_files.begin(), t4_files.end());
      const kernlathe::Space space = kernlathe::read_t1_space(t1_file);
      const kernlathe::SpaceEnumerator enumerator(space, kernlathe::Constants{});
      std::vector<kernlathe::TransferLandscape> landscapes;
      for (const fs::path& file : t4_files)
        landscapes.push_back({device_of(file), kernlathe::read_t4_results(file, space)});
      const std::string kernel = t1_file.stem().stem().string();
      report("community T4 files", kernel, "T4, leave one GPU out",
             kernlathe::run_transfer_benchmark(enumerator, landscapes, strategy, seeds, budgets, settings, first_seed));
      // Each GPU as the only prior of each other: one source, as the project's records and a user with one other
      // GPU's record have, and the prior of another vendor alone (the MI250X's for an NVIDIA GPU and back).
      for (std::size_t first = 0; single_sources && first < landscapes.size(); ++first)
        for (std::size_t second = first + 1; second < landscapes.size(); ++second) {
          const std::vector<kernlathe::TransferCase> both = kernlathe::run_transfer_benchmark(
              enumerator, {landscapes[first], landscapes[second]}, strategy, seeds, budgets, settings, first_seed);
          report("community T4 files, one GPU as prior", kernel, "T4, prior " + landscapes[second].device, {both[0]});
          report("community T4 files, one GPU as prior", kernel, "T4, prior " + landscapes[first].device, {both[1]});
        }
    }

    for (const RecordGroup& group : records ? record_groups(runs) : std::vector<RecordGroup>{}) {
      const fs::path spec_file = fs::path(KERNLATHE_SOURCE_DIR) / "kernels" / (group.kernel + ".yaml");
      if (!fs::exists(spec_file)) continue;
      const kernlathe::KernelSpec spec =
          kernlathe::load_kernel_spec(spec_file, kernlathe::parse_problem_overrides(group.problem));
      kernlathe::Constants constants = kernlathe::device_property_values(kernlathe::device_profile("sm_90"));
      for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, kernlathe::Value{value});
      // Parameters added to the space after any of the records was written are held at their default: the records
      // measured nothing else (a replay over the grown space would spend its budget off the landscapes).
      std::vector<std::string> held;
      for (const auto& [gpu, file] : group.record_by_gpu) {
        try {
          for (std::string& name : kernlathe::parameters_missing_from(file, spec.space))
            if (std::find(held.begin(), held.end(), name) == held.end()) held.push_back(std::move(name));
        } catch (const kernlathe::InputError&) {
          // reported below, where the file is left out
        }
      }
      const kernlathe::SpaceEnumerator enumerator(kernlathe::replay_space(spec.space, held), constants);
      std::vector<kernlathe::TransferLandscape> landscapes;
      for (const auto& [gpu, file] : group.record_by_gpu) {
        try {
          kernlathe::TransferLandscape landscape{gpu, {}};
          for (kernlathe::RecordedEvaluation& row : kernlathe::read_records(file, spec.space))
            landscape.evaluations.push_back(std::move(row.evaluation));
          landscapes.push_back(std::move(landscape));
        } catch (const kernlathe::InputError& error) {
          std::cerr << "bench_search_transfer: " << file.string() << " left out: " << error.what() << "\n";
        }
      }
      if (landscapes.size() < 2) continue;
      report("project records", group.kernel, group.problem,
             kernlathe::run_transfer_benchmark(enumerator, landscapes, strategy, seeds, budgets, settings, first_seed));
    }
    if (all_with.empty()) {
      std::cerr << "bench_search_transfer: no kernel in " << t4_dir.string() << " or " << runs.string()
                << " has recordings of two GPUs or more\n";
      return 2;
    }
    nlohmann::ordered_json summary{{"strategy", strategy},
                                   {"seeds", seeds},
                                   {"first_seed", first_seed},
                                   {"transfers", settings.transfers},
                                   {"lead", settings.lead},
                                   {"judge_after", settings.judge_after},
                                   {"model_share", settings.model_share}};
    std::string summary_text;
    for (const auto& [section, with_by_budget] : all_with) {
      summary_text += fmt::format("{} ({} runs per budget):\n", section, with_by_budget.front().size());
      for (std::size_t index = 0; index < budgets.size(); ++index) {
        const double with_mean = geometric_mean(with_by_budget[index]);
        const double without_mean = geometric_mean(all_without[section][index]);
        const bool floor_met = with_mean <= floors[index];
        if (!floor_met) missed = true;
        summary[section][fmt::format("with_prior_at_{}", budgets[index])] = with_mean;
        summary[section][fmt::format("without_prior_at_{}", budgets[index])] = without_mean;
        summary[section][fmt::format("floor_at_{}", budgets[index])] = floors[index];
        summary_text += fmt::format("  at {} evaluations: {:.4f} with the prior (floor {}: {}), {:.4f} without\n",
                                    budgets[index], with_mean, floors[index], floor_met ? "met" : "MISSED", without_mean);
      }
    }
    summary["floors_met"] = !missed;
    if (json) {
      std::cout << nlohmann::ordered_json{{"cases", output}, {"summary", summary}}.dump(2) << "\n";
    } else {
      fmt::print("\ngeometric mean of best/optimum over every target and {} seeds from seed {} ({}; prior: at most {} "
                 "transfers, lead {}, judged after {}, model share {}):\n{}",
                 seeds, first_seed, strategy, settings.transfers, settings.lead, settings.judge_after,
                 settings.model_share, summary_text);
      fmt::print("floors {}\n", missed ? "MISSED" : "met");
    }
    return missed ? 1 : 0;
  } catch (const std::exception& error) {
    std::cerr << "bench_search_transfer: " << error.what() << "\n";
    return 2;
  }
}
