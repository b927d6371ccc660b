#include "tuner/cache/covering_records.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "tuner/cache/kernel_description.h"
#include "tuner/common/error.h"
#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {

namespace fs = std::filesystem;

CoveringRecords covering_records(const fs::path& spec_file, const fs::path& records, const std::string& arch,
                                 const std::string& gpu) {
  CoveringRecords result;
  const KernelSpec plain = load_kernel_spec(spec_file);
  const fs::path root = records / plain.name / arch;
  if (!fs::is_directory(root)) throw InputError(fmt::format("{}: no records of {} on {}", root.string(), plain.name, arch));
  std::map<std::string, std::size_t> column_of;  // configuration text -> column
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().filename() == "evaluations.csv") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& csv : files) {
    std::vector<RunMetadata> runs;
    try {
      runs = read_run_metadata(csv);
    } catch (const std::exception& error) {
      result.notes.push_back(fmt::format("{}: left out, its run.json cannot be read ({})", csv.string(), error.what()));
      continue;
    }
    if (runs.empty()) {
      result.notes.push_back(fmt::format("{}: left out, no run.json beside it", csv.string()));
      continue;
    }
    const RunMetadata& run = runs.back();
    if (!gpu.empty() && run.gpu_name != gpu) continue;
    std::vector<RecordedEvaluation> rows;
    KernelSpec spec;
    try {
      spec = load_kernel_spec(spec_file, parse_problem_overrides(run.problem));
      rows = read_records(csv, spec.space);
    } catch (const std::exception& error) {
      result.notes.push_back(fmt::format("{}: left out ({})", csv.string(), error.what()));
      continue;
    }
    std::map<std::size_t, double> fastest;  // column -> fastest verified median on this problem
    for (const RecordedEvaluation& row : rows) {
      if (!row.evaluation.ok() || !(row.evaluation.time.median_ms > 0)) continue;
      const std::string text = to_string(spec.space, row.evaluation.configuration);
      auto [found, added] = column_of.emplace(text, result.matrix.configurations.size());
      if (added) {
        result.matrix.configurations.push_back(text);
        result.configurations.push_back(configuration_values(spec.space, row.evaluation.configuration));
      }
      auto [cell, first] = fastest.emplace(found->second, row.evaluation.time.median_ms);
      if (!first) cell->second = std::min(cell->second, row.evaluation.time.median_ms);
    }
    if (fastest.empty()) {
      result.notes.push_back(fmt::format("{}: left out, no verified row", csv.string()));
      continue;
    }
    // Record files of the same problem (runs kept apart, a resumed run elsewhere) share its row.
    Problem problem;
    for (const auto& [symbol, value] : spec.problem) problem[symbol] = value;
    auto existing = std::find(result.problems.begin(), result.problems.end(), problem);
    const std::size_t row_index = static_cast<std::size_t>(existing - result.problems.begin());
    if (existing == result.problems.end()) {
      result.matrix.problems.push_back(run.problem);
      result.problems.push_back(std::move(problem));
      result.matrix.time_ms.emplace_back();
    }
    std::vector<std::optional<double>>& row = result.matrix.time_ms[row_index];
    row.resize(column_of.size());
    for (const auto& [column, time] : fastest)
      row[column] = row[column] ? std::min(*row[column], time) : time;
  }
  for (auto& row : result.matrix.time_ms) row.resize(result.matrix.configurations.size());
  if (result.matrix.problems.empty())
    throw InputError(fmt::format("{}: no usable records of {} on {}{}{}", root.string(), plain.name, arch,
                                 gpu.empty() ? "" : " (" + gpu + ")",
                                 result.notes.empty() ? "" : fmt::format("; {} record files left out, the first: {}",
                                                                         result.notes.size(), result.notes.front())));
  return result;
}

}  // namespace kernlathe
