#include "tuner/search/prior_sources.h"

#include <algorithm>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"
#include "tuner/search/t4_dataset.h"

namespace kernlathe {

bool is_t4_file(const std::filesystem::path& file) {
  return file.filename().string().find(".json") != std::string::npos;
}

PriorSource read_prior_source(const std::filesystem::path& file, const Space& space) {
  if (!std::filesystem::exists(file)) throw InputError(SourceLocation{file.string()}, "no such prior file");
  PriorSource source;
  source.name = file.string();
  if (is_t4_file(file)) {
    source.evaluations = read_t4_results(file, space);
    return source;
  }
  for (RecordedEvaluation& row : read_records(file, space)) source.evaluations.push_back(std::move(row.evaluation));
  const std::vector<RunMetadata> runs = read_run_metadata(file);
  if (!runs.empty()) source.name += fmt::format(" ({}, {})", runs.back().gpu_name, runs.back().problem);
  return source;
}

std::vector<std::filesystem::path> database_prior_files(const std::filesystem::path& runs_dir, const std::string& kernel,
                                                        const std::filesystem::path& exclude) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path root = runs_dir / kernel;
  std::error_code error;
  if (!std::filesystem::is_directory(root, error)) return files;
  for (auto entry = std::filesystem::recursive_directory_iterator(root, error);
       !error && entry != std::filesystem::recursive_directory_iterator(); entry.increment(error)) {
    if (!entry->is_regular_file() || entry->path().filename() != "evaluations.csv") continue;
    if (!exclude.empty() && std::filesystem::weakly_canonical(entry->path()) == std::filesystem::weakly_canonical(exclude))
      continue;
    files.push_back(entry->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace kernlathe
