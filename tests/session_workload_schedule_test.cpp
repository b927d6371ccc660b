// Which problem of a sweep runs on which devices (tuner/session/workload_schedule.h), without threads or GPUs: whole
// problems to free devices while problems outnumber them, the free devices spread over the tail, one device in
// workload order; identical problems held apart; the compile pool shared by the devices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tuner/session/workload_schedule.h"

namespace kernlathe {
namespace {

std::vector<std::size_t> problems(std::size_t count, std::size_t first = 0) {
  std::vector<std::size_t> indices;
  for (std::size_t index = first; index < first + count; ++index) indices.push_back(index);
  return indices;
}

TEST(WorkloadSchedule, ProblemsOutnumberingTheDevicesStartOnePerDeviceInWorkloadOrder) {
  const std::vector<ProblemStart> starts = schedule_starts(problems(7), {2, 0, 5});
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[0].problem, 0u);
  EXPECT_EQ(starts[0].devices, std::vector<int>{2});
  EXPECT_EQ(starts[1].problem, 1u);
  EXPECT_EQ(starts[1].devices, std::vector<int>{0});
  EXPECT_EQ(starts[2].problem, 2u);
  EXPECT_EQ(starts[2].devices, std::vector<int>{5});
}

TEST(WorkloadSchedule, TheTailSpreadsTheFreeDevicesOverTheProblemsLeft) {
  // Two problems, five free devices: three and two, in --devices order.
  const std::vector<ProblemStart> starts = schedule_starts({4, 6}, {0, 1, 2, 3, 7});
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].problem, 4u);
  EXPECT_EQ(starts[0].devices, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(starts[1].problem, 6u);
  EXPECT_EQ(starts[1].devices, (std::vector<int>{3, 7}));
  // The last problem alone takes every free device.
  const std::vector<ProblemStart> last = schedule_starts({9}, {1, 3});
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].devices, (std::vector<int>{1, 3}));
}

TEST(WorkloadSchedule, NothingStartsWithoutAWaitingProblemOrAFreeDevice) {
  EXPECT_TRUE(schedule_starts({}, {0, 1}).empty());
  EXPECT_TRUE(schedule_starts({0, 1}, {}).empty());
}

// A whole sweep simulated: problem p takes work[p] / (the sum of its devices' speeds). Returns each problem's devices
// and the order they started in; fails the calling test when a device is idle while a problem waits.
struct Simulated {
  std::vector<std::vector<int>> devices_of;  // by problem
  std::vector<std::size_t> start_order;
};

Simulated simulate(const std::vector<double>& work, const std::map<int, double>& speed) {
  Simulated result;
  result.devices_of.resize(work.size());
  std::vector<std::size_t> waiting = problems(work.size());
  std::vector<int> free;
  for (const auto& [device, unused] : speed) free.push_back(device);
  std::multimap<double, std::size_t> running;  // finish time -> problem
  double now = 0;
  while (!waiting.empty() || !running.empty()) {
    for (const ProblemStart& start : schedule_starts(waiting, free)) {
      double rate = 0;
      for (int device : start.devices) {
        rate += speed.at(device);
        free.erase(std::find(free.begin(), free.end(), device));
      }
      result.devices_of[start.problem] = start.devices;
      result.start_order.push_back(start.problem);
      waiting.erase(std::find(waiting.begin(), waiting.end(), start.problem));
      running.emplace(now + work[start.problem] / rate, start.problem);
    }
    EXPECT_TRUE(waiting.empty() || free.empty()) << "a device idles at " << now << " while problems wait";
    if (running.empty()) break;
    const auto first = running.begin();
    now = first->first;
    for (int device : result.devices_of[first->second]) free.push_back(device);
    std::sort(free.begin(), free.end());
    running.erase(first);
  }
  return result;
}

TEST(WorkloadSchedule, EachDeviceTunesWholeProblemsAndNoneIdlesWhileProblemsWait) {
  // Ten equal problems on three devices, the last twice as fast as the others: each problem on one device, started
  // as a device frees up, so device 2 tunes four problems and the others three.
  const std::vector<double> work(10, 2.0);
  const Simulated sweep = simulate(work, {{0, 1.0}, {1, 1.0}, {2, 2.0}});
  ASSERT_EQ(sweep.start_order, problems(work.size()));
  std::map<int, int> problems_per_device;
  for (std::size_t problem = 0; problem < work.size(); ++problem) {
    ASSERT_FALSE(sweep.devices_of[problem].empty()) << "problem " << problem << " never ran";
    if (sweep.devices_of[problem].size() == 1) ++problems_per_device[sweep.devices_of[problem][0]];
  }
  EXPECT_EQ(problems_per_device[0], 3);
  EXPECT_EQ(problems_per_device[1], 3);
  EXPECT_EQ(problems_per_device[2], 4);
  // Uneven problems too: no device idles while one waits (checked inside simulate), and all start in order.
  const std::vector<double> uneven = {4, 1, 3, 2, 5, 1, 1, 2, 3, 1};
  EXPECT_EQ(simulate(uneven, {{0, 1.0}, {1, 1.0}, {2, 2.0}}).start_order, problems(uneven.size()));
}

TEST(WorkloadSchedule, ATailProblemStartingAloneOnIdleDevicesTakesThemAll) {
  // Two problems on four devices: two devices each, from the start.
  const Simulated sweep = simulate({2, 2}, {{0, 1.0}, {1, 1.0}, {2, 1.0}, {3, 1.0}});
  EXPECT_EQ(sweep.devices_of[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(sweep.devices_of[1], (std::vector<int>{2, 3}));
}

TEST(WorkloadSchedule, OneDeviceTunesTheProblemsOneAfterTheOtherInWorkloadOrder) {
  const Simulated sweep = simulate({3, 1, 2, 5}, {{4, 1.0}});
  EXPECT_EQ(sweep.start_order, problems(4));
  for (const std::vector<int>& devices : sweep.devices_of) EXPECT_EQ(devices, std::vector<int>{4});
  // And at each step exactly the next problem starts.
  const std::vector<ProblemStart> starts = schedule_starts({2, 3}, {4});
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].problem, 2u);
}

TEST(WorkloadSchedule, AProblemWaitsWhileAnIdenticalOneRunsOrIsTakenBeforeIt) {
  // Problems 0 and 2 are the same (spec, problem), as are 1 and 3.
  const std::vector<std::string> keys = {"gemm M=16", "gemm M=128", "gemm M=16", "gemm M=128", "norm"};
  EXPECT_EQ(startable_problems({0, 1, 2, 3, 4}, keys, {}), (std::vector<std::size_t>{0, 1, 4}));
  EXPECT_EQ(startable_problems({2, 3, 4}, keys, {"gemm M=16"}), (std::vector<std::size_t>{3, 4}));
  EXPECT_TRUE(startable_problems({2}, keys, {"gemm M=16", "norm"}).empty());
}

TEST(WorkloadSchedule, CompileJobsAreTheCoresSharedByDevices) {
  EXPECT_EQ(compile_jobs_for(64, 1, 4), 16);
  EXPECT_EQ(compile_jobs_for(64, 3, 4), 48);
  EXPECT_EQ(compile_jobs_for(2, 1, 8), 1);  // never none
  EXPECT_EQ(compile_jobs_for(16, 2, 2), 16);
}

}  // namespace
}  // namespace kernlathe
