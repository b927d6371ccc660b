#pragma once
// A workload: the problems an application runs, kernel by kernel, tuned in one command (`tune sweep`). A file:
//
//   workload: llama3-8b-gemm
//   tasks:
//     - spec: ../kernels/gemm_bf16.yaml   # relative to this file, or a name under kernels/
//       problem: {B_LAYOUT: 1}            # symbols every problem of the task sets
//       sweep:                            # the product of these axes, the first varying slowest;
//         M: [16, 128, 1000, 4096, 16384] # a key "N,K" takes tuples
//         N,K: [[6144, 4096], [4096, 4096], [28672, 4096], [4096, 14336]]
//     - spec: rmsnorm_bf16
//       problems:                         # or a list of problems
//         - {ROWS: 1000, COLS: 4096}
//
// Every error is an InputError naming file:line and what is wrong.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kernlathe {

struct WorkloadProblem {
  std::filesystem::path spec;                                   // resolved: a path that exists, or a name under kernels/
  std::vector<std::pair<std::string, std::int64_t>> symbols;    // in the order the file gives them

  // "M=16,N=6144,K=4096,B_LAYOUT=1": the --problem text of `tune run`.
  std::string problem_text() const;
};

struct Workload {
  std::string name;
  std::vector<WorkloadProblem> problems;  // in tuning order: tasks in file order, each task's problems in order
};

Workload read_workload(const std::filesystem::path& file);
// Whether a YAML file is a workload (a top-level `workload:` key) rather than a kernel spec; false when unreadable.
bool is_workload_file(const std::filesystem::path& file);

}  // namespace kernlathe
