#include "tuner/session/workload_schedule.h"

#include <algorithm>

namespace kernlathe {

std::vector<ProblemStart> schedule_starts(const std::vector<std::size_t>& waiting, const std::vector<int>& free_devices) {
  std::vector<ProblemStart> starts;
  if (waiting.empty() || free_devices.empty()) return starts;
  const std::size_t starting = std::min(waiting.size(), free_devices.size());
  // Each starting problem gets free / starting devices, the first (free % starting) one more: with problems to
  // spare that is one each; in the tail, the devices spread over what is left.
  const std::size_t each = free_devices.size() / starting;
  const std::size_t with_one_more = free_devices.size() % starting;
  std::size_t next_device = 0;
  for (std::size_t index = 0; index < starting; ++index) {
    const std::size_t count = each + (index < with_one_more ? 1 : 0);
    ProblemStart start;
    start.problem = waiting[index];
    start.devices.assign(free_devices.begin() + static_cast<std::ptrdiff_t>(next_device),
                         free_devices.begin() + static_cast<std::ptrdiff_t>(next_device + count));
    next_device += count;
    starts.push_back(std::move(start));
  }
  return starts;
}

std::vector<std::size_t> startable_problems(const std::vector<std::size_t>& waiting,
                                            const std::vector<std::string>& record_keys,
                                            const std::set<std::string>& running_keys) {
  std::vector<std::size_t> startable;
  std::set<std::string> taken = running_keys;
  for (std::size_t problem : waiting)
    if (taken.insert(record_keys.at(problem)).second) startable.push_back(problem);
  return startable;
}

int compile_jobs_for(int host_cores, std::size_t run_devices, std::size_t all_devices) {
  if (all_devices == 0 || host_cores <= 0) return 1;
  const std::size_t share = static_cast<std::size_t>(host_cores) * run_devices / all_devices;
  return static_cast<int>(std::max<std::size_t>(share, 1));
}

}  // namespace kernlathe
