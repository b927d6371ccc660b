#pragma once
// Where a prior comes from (tuner/search/prior.h): records of the same kernel measured elsewhere, read into the
// target's space. Two kinds of file:
//   - the project's own records: an evaluations.csv written by `tune run` (header: the space's record columns),
//     with its run.json beside it naming the GPU and the problem;
//   - community T4 files (.json or .json.gz, tuner/search/t4_dataset.h), whose parameter names are the space's.
// And the results database: the records under <runs>/<kernel>/ (results/runs by default) of this kernel's other
// problem sizes and other GPUs, which `tune run` uses as a prior unless --no-prior.

#include <filesystem>
#include <string>
#include <vector>

#include "tuner/search/prior.h"

namespace kernlathe {

// Whether file is read as a T4 file (a name containing ".json"), else as a record CSV.
bool is_t4_file(const std::filesystem::path& file);

// One file as a prior source, named "<file> (<gpu>, <problem>)" when its run.json says. InputError naming the file
// when it is missing, unreadable, or its columns or parameters are not those of space.
PriorSource read_prior_source(const std::filesystem::path& file, const Space& space);

// The record files (evaluations.csv) under runs_dir/kernel at any depth, but exclude (the run's own record, which
// --resume reads instead), sorted by path: the kernel's other problem sizes and GPUs, and earlier runs of this
// problem kept elsewhere (a benchmark's folders). Empty when the folder does not exist.
std::vector<std::filesystem::path> database_prior_files(const std::filesystem::path& runs_dir, const std::string& kernel,
                                                        const std::filesystem::path& exclude = {});

}  // namespace kernlathe
