// The lanes of the run loop with fake devices: every job comes back exactly once, lanes measure at the same time,
// and a lost lane's job comes back without an evaluation and is never given to that lane again.
#include "tuner/session/measurement_lanes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "tuner/common/error.h"

namespace kernlathe {
namespace {

Space one_parameter_space(int values) {
  Space space;
  space.name = "lanes";
  Parameter parameter;
  parameter.name = "X";
  parameter.type = ParameterType::integer;
  for (std::int64_t value = 0; value < values; ++value) parameter.values.emplace_back(value);
  parameter.default_value = parameter.values.front();
  space.parameters.push_back(parameter);
  return space;
}

// Measures in a millisecond; counts what it measured; throws (a lost device) on its `fail_at`-th measurement.
class FakeMeasurer final : public Measurer {
 public:
  explicit FakeMeasurer(int fail_at = -1) : fail_at_(fail_at) { device_.name = "fake"; }
  const DeviceProperties& device() const override { return device_; }
  bool needs_compilation() const override { return false; }
  void prepare(const SpaceEnumerator&) override {}
  Evaluation measure(const Configuration& configuration, const CompileResult*, const SpaceEnumerator&, bool) override {
    if (++calls_ == fail_at_) throw TunerError("the worker cannot be started again");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Evaluation evaluation;
    evaluation.configuration = configuration;
    evaluation.time.median_ms = 1;
    return evaluation;
  }
  int calls() const { return calls_; }

 private:
  DeviceProperties device_;
  int fail_at_;
  std::atomic<int> calls_{0};
};

LaneJob job_for(std::uint64_t id) {
  LaneJob job;
  job.id = id;
  job.configuration = {Value{static_cast<std::int64_t>(id)}};
  return job;
}

TEST(MeasurementLanes, EveryJobComesBackOnceWithItsLanesLabel) {
  const Space space = one_parameter_space(64);
  const SpaceEnumerator enumerator(space, {});
  FakeMeasurer first, second, third;
  MeasurementLanes lanes({&first, &second, &third}, {"0", "1", "2"}, enumerator);
  std::uint64_t next = 0;
  std::set<std::uint64_t> returned;
  std::map<std::string, int> by_label;
  while (returned.size() < 64) {
    while (next < 64 && lanes.idle() > 0) {
      LaneJob job = job_for(next);
      ASSERT_TRUE(lanes.submit(job));
      ++next;
    }
    LaneOutcome outcome = lanes.wait();
    ASSERT_TRUE(outcome.evaluation.has_value());
    EXPECT_TRUE(returned.insert(outcome.job.id).second) << "job " << outcome.job.id << " came back twice";
    EXPECT_EQ(outcome.evaluation->configuration, outcome.job.configuration);
    EXPECT_EQ(outcome.evaluation->device, lanes.label(outcome.lane));
    ++by_label[outcome.evaluation->device];
  }
  EXPECT_EQ(lanes.busy(), 0u);
  EXPECT_EQ(first.calls() + second.calls() + third.calls(), 64);
  EXPECT_EQ(by_label.size(), 3u);  // all three lanes took work
  EXPECT_THROW(lanes.wait(), TunerError);
}

TEST(MeasurementLanes, LanesTakeJobsInTurnSoAnInstantLaneDoesNotTakeThemAll) {
  // Lane 0 has finished its job (its outcome is waiting) when the second job comes: the second goes to lane 1, the
  // third to lane 2, and only the fourth back to lane 0. Before, the first idle lane by index took it, and a lane
  // that finishes at once (a replay) could take every job while the others had none.
  const Space space = one_parameter_space(8);
  const SpaceEnumerator enumerator(space, {});
  FakeMeasurer first, second, third;
  MeasurementLanes lanes({&first, &second, &third}, {"0", "1", "2"}, enumerator);
  std::vector<std::size_t> lanes_used;
  for (std::uint64_t id = 0; id < 4; ++id) {
    LaneJob job = job_for(id);
    ASSERT_TRUE(lanes.submit(job));
    const LaneOutcome outcome = lanes.wait();  // every lane is idle again before the next job
    lanes_used.push_back(outcome.lane);
  }
  EXPECT_EQ(lanes_used, (std::vector<std::size_t>{0, 1, 2, 0}));
}

TEST(MeasurementLanes, SubmitRefusesWhenEveryLaneIsBusy) {
  const Space space = one_parameter_space(4);
  const SpaceEnumerator enumerator(space, {});
  FakeMeasurer only;
  MeasurementLanes lanes({&only}, {"0"}, enumerator);
  LaneJob first = job_for(0);
  ASSERT_TRUE(lanes.submit(first));
  LaneJob second = job_for(1);
  EXPECT_FALSE(lanes.submit(second));
  EXPECT_EQ(second.id, 1u);  // kept by the caller
  EXPECT_EQ(lanes.wait().job.id, 0u);
}

// Two lanes must measure at once: each fake waits until the other has started, and gives up after 10 s.
TEST(MeasurementLanes, LanesMeasureAtTheSameTime) {
  const Space space = one_parameter_space(4);
  const SpaceEnumerator enumerator(space, {});
  struct Rendezvous final : Measurer {
    std::mutex* mutex;
    std::condition_variable* condition;
    int* started;
    DeviceProperties properties;
    const DeviceProperties& device() const override { return properties; }
    bool needs_compilation() const override { return false; }
    void prepare(const SpaceEnumerator&) override {}
    Evaluation measure(const Configuration& configuration, const CompileResult*, const SpaceEnumerator&, bool) override {
      std::unique_lock lock(*mutex);
      ++*started;
      condition->notify_all();
      Evaluation evaluation;
      evaluation.configuration = configuration;
      if (!condition->wait_for(lock, std::chrono::seconds(10), [&] { return *started >= 2; }))
        evaluation.status = Status::timeout;  // the other lane never started: they ran one after the other
      return evaluation;
    }
  };
  std::mutex mutex;
  std::condition_variable condition;
  int started = 0;
  Rendezvous a, b;
  for (Rendezvous* fake : {&a, &b}) {
    fake->mutex = &mutex;
    fake->condition = &condition;
    fake->started = &started;
  }
  MeasurementLanes lanes({&a, &b}, {"0", "1"}, enumerator);
  LaneJob first = job_for(0), second = job_for(1);
  ASSERT_TRUE(lanes.submit(first));
  ASSERT_TRUE(lanes.submit(second));
  EXPECT_EQ(lanes.wait().evaluation->status, Status::ok);
  EXPECT_EQ(lanes.wait().evaluation->status, Status::ok);
}

TEST(MeasurementLanes, ALostLanesJobComesBackWithoutAnEvaluationAndGoesToAnotherLane) {
  const Space space = one_parameter_space(16);
  const SpaceEnumerator enumerator(space, {});
  FakeMeasurer healthy;
  FakeMeasurer failing(/*fail_at=*/3);
  MeasurementLanes lanes({&failing, &healthy}, {"0", "1"}, enumerator);
  std::uint64_t next = 0;
  std::set<std::uint64_t> measured;
  int lost_outcomes = 0;
  std::deque<LaneJob> again;
  while (measured.size() < 16) {
    while (lanes.idle() > 0 && (!again.empty() || next < 16)) {
      if (!again.empty()) {
        ASSERT_TRUE(lanes.submit(again.front()));
        again.pop_front();
      } else {
        LaneJob job = job_for(next++);
        ASSERT_TRUE(lanes.submit(job));
      }
    }
    LaneOutcome outcome = lanes.wait();
    if (!outcome.evaluation) {
      ++lost_outcomes;
      EXPECT_EQ(outcome.lane, 0u);
      EXPECT_EQ(outcome.lost_reason, "the worker cannot be started again");
      EXPECT_TRUE(lanes.lost(0));
      outcome.job.lanes_tried.push_back(outcome.lane);
      again.push_back(std::move(outcome.job));
      continue;
    }
    EXPECT_TRUE(measured.insert(outcome.job.id).second);
  }
  EXPECT_EQ(lost_outcomes, 1);
  EXPECT_EQ(lanes.alive(), 1u);
  EXPECT_EQ(failing.calls(), 3);  // two measured, the third lost the lane; nothing after
  EXPECT_EQ(healthy.calls(), 14);
}

TEST(MeasurementLanes, AJobGoesToALaneThatHasNotTriedItWhenOneIsIdle) {
  const Space space = one_parameter_space(4);
  const SpaceEnumerator enumerator(space, {});
  FakeMeasurer a, b;
  MeasurementLanes lanes({&a, &b}, {"0", "1"}, enumerator);
  LaneJob job = job_for(0);
  job.lanes_tried = {0};
  ASSERT_TRUE(lanes.submit(job));
  EXPECT_EQ(lanes.wait().lane, 1u);
  LaneJob again = job_for(1);
  again.lanes_tried = {0, 1};  // both tried it: one of them measures it again rather than nobody
  ASSERT_TRUE(lanes.submit(again));
  EXPECT_TRUE(lanes.wait().evaluation.has_value());
}

}  // namespace
}  // namespace kernlathe
