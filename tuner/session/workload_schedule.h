#pragma once
// Which problems of a workload run where (`tune sweep` over several GPUs): pure decisions, no threads, no GPU, so
// that the rules are tested on any machine. The sweep asks them each time a problem finishes and devices are free.
//
//   - Problems outnumber the free devices: the next problems in workload order start, one device each, so every
//     device tunes whole problems and none idles while a problem waits.
//   - Fewer problems wait than devices are free (the tail of the workload): every waiting problem starts, and the
//     free devices are spread over them, as evenly as they divide, in --devices order; a problem's devices then
//     measure its configurations side by side (`tune run --devices`).
//   - One device: one problem at a time, in workload order, as a sweep always ran.
//
// A problem, once started, keeps its devices until it finishes: a run's devices are fixed when it opens them.

#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace kernlathe {

struct ProblemStart {
  std::size_t problem = 0;   // its index in the workload
  std::vector<int> devices;  // the GPUs it runs on, in --devices order
};

// The problems that start now, and their devices. waiting: the problems that may start, in workload order;
// free_devices: the devices no running problem holds, in --devices order. Empty when either is.
std::vector<ProblemStart> schedule_starts(const std::vector<std::size_t>& waiting, const std::vector<int>& free_devices);

// The waiting problems that may start now, in workload order. Problems with the same record key (the same spec and
// problem, which write one record folder and one best-cache entry) never run at once: a problem is held while
// another of its key runs, or while an earlier waiting one of its key is taken. record_keys[i]: problem i's key.
std::vector<std::size_t> startable_problems(const std::vector<std::size_t>& waiting,
                                            const std::vector<std::string>& record_keys,
                                            const std::set<std::string>& running_keys);

// Compile processes for a problem run on run_devices of all_devices when `--jobs` is left at 0 (one per core):
// the host's cores shared in proportion to the devices, at least one, so that problems tuned at once do not each
// start a process per core.
int compile_jobs_for(int host_cores, std::size_t run_devices, std::size_t all_devices);

}  // namespace kernlathe
