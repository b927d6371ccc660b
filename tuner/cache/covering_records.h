#pragma once
// The covering matrix of a kernel on one GPU model from its records: every `evaluations.csv` under
// RECORDS/<kernel>/<arch>/ whose run.json names that GPU, one row per problem, one column per configuration
// verified on at least one problem; a cell is the fastest verified median of that configuration on that problem.
// Records written by another version of the space (their header does not match) are left out with a note.

#include <filesystem>
#include <string>
#include <vector>

#include "kernlathe/database.h"
#include "tuner/cache/covering_set.h"

namespace kernlathe {

struct CoveringRecords {
  CoveringMatrix matrix;
  std::vector<ConfigurationValues> configurations;  // per column, the values to store in a database entry
  std::vector<Problem> problems;                    // per row, the problem's symbols
  std::vector<std::string> notes;                   // record files left out, and why
};

// spec: the kernel's spec file; records: the records root (results/runs); gpu: the GPU model's name as run.json
// gives it ("NVIDIA H200"; empty: every GPU of the arch, which mixes models only if asked).
CoveringRecords covering_records(const std::filesystem::path& spec, const std::filesystem::path& records,
                                 const std::string& arch, const std::string& gpu);

}  // namespace kernlathe
