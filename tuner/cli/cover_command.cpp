#include "tuner/cli/cover_command.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/cache/best_cache.h"
#include "tuner/cache/covering_records.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/common/error.h"
#include "tuner/common/output_folder.h"
#include "tuner/record/run_metadata.h"
#include "tuner/session/tuning_session.h"  // run_constants
#include "tuner/spec/spec_hash.h"
#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {

namespace {

using Json = nlohmann::json;

Json set_json(const CoveringRecords& records, const CoveringSet& set) {
  Json problems = Json::array();
  for (std::size_t p = 0; p < records.matrix.problems.size(); ++p) {
    Json row = {{"problem", records.matrix.problems[p]}, {"fraction_of_best", set.fraction[p]}};
    if (set.serves[p]) row["configuration"] = records.matrix.configurations[*set.serves[p]];
    problems.push_back(row);
  }
  return {{"geometric_mean", set.geometric_mean}, {"worst", set.worst}, {"uncovered", set.uncovered}, {"problems", problems}};
}

void print_set(const std::string& title, const CoveringRecords& records, const CoveringSet& set) {
  fmt::print("{}: geometric mean {:.3f} of each problem's best, worst {:.3f}{}\n", title, set.geometric_mean, set.worst,
             set.uncovered ? fmt::format(", {} uncovered", set.uncovered) : "");
  for (std::size_t p = 0; p < records.matrix.problems.size(); ++p)
    fmt::print("  {:<56} {:>6} {}\n", records.matrix.problems[p],
               set.serves[p] ? fmt::format("{:.3f}", set.fraction[p]) : "-",
               set.serves[p] ? fmt::format("config {}", *set.serves[p] + 1) : "no chosen configuration measured here");
}

}  // namespace

void CoverCommand::add_to(CLI::App& command) {
  command.add_option("kernel", kernel, "kernel name (its spec under kernels/)")->required();
  command.add_option("--arch", arch, "the arch whose records to read (default sm_90)");
  command.add_option("--gpu", gpu, "the GPU model, as records name it (\"NVIDIA H200\"); default: every GPU of the arch");
  command.add_option("--records", records_root, "records root (default results/runs)");
  command.add_option("--max-configs", max_configs, "configurations at most (default 6)")->check(CLI::Range(1, 1000));
  command.add_option("--best-dir", best_dir, "write the covering database here (one entry per tuned problem)");
  command.add_flag("--json", json, "machine-readable output on stdout");
}

int CoverCommand::run() const {
  const std::filesystem::path spec_file = find_spec(kernel);
  check_output_folder("--best-dir", best_dir, "the covering database");
  const CoveringRecords records = covering_records(spec_file, records_root, arch, gpu);
  for (const std::string& note : records.notes) fmt::print(stderr, "tune cover: {}\n", note);
  const CoveringSet set = choose_covering_set(records.matrix, max_configs);
  const CoveringSet held = held_out_covering(records.matrix, max_configs);
  if (!best_dir.empty()) {
    const KernelSpec spec = load_kernel_spec(spec_file);
    const SpaceEnumerator space(spec.space, run_constants(spec, device_profile(arch)));
    BestCache cache{std::filesystem::path(best_dir)};
    for (std::size_t p = 0; p < records.problems.size(); ++p) {
      if (!set.serves[p]) continue;
      DatabaseEntry entry;
      entry.device_name = gpu;
      entry.arch = arch;
      entry.problem = records.problems[p];
      entry.configuration = records.configurations[*set.serves[p]];
      const double ms = *records.matrix.time_ms[p][*set.serves[p]];
      entry.time = {ms, 0, 1};
      entry.date = iso8601_now();
      entry.spec_hash = spec_hash(spec);
      entry.tool_version = KERNLATHE_VERSION;
      cache.update(describe_kernel(spec, space), entry, BestCache::Replace::always);
    }
  }
  if (json) {
    Json configurations = Json::array();
    for (std::size_t c : set.chosen) configurations.push_back(records.matrix.configurations[c]);
    fmt::print("{}\n", Json{{"kernel", kernel}, {"arch", arch}, {"gpu", gpu}, {"max_configs", max_configs},
                            {"configurations", configurations}, {"chosen_on_all", set_json(records, set)},
                            {"held_out", set_json(records, held)}}.dump(2));
    return exit_ok;
  }
  fmt::print("{} on {}{}: {} problems, {} configurations measured; {} chosen (at most {})\n", kernel, arch,
             gpu.empty() ? "" : " (" + gpu + ")", records.matrix.problems.size(), records.matrix.configurations.size(),
             set.chosen.size(), max_configs);
  for (std::size_t index = 0; index < set.chosen.size(); ++index)
    fmt::print("  config {}: {}\n", set.chosen[index] + 1, records.matrix.configurations[set.chosen[index]]);
  print_set("chosen on every problem", records, set);
  print_set("each problem held out of the choice", records, held);
  return exit_ok;
}

}  // namespace kernlathe
