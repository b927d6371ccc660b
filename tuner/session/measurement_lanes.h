#pragma once
// Measurements on several devices at once. A lane is one device's Measurer with a thread of its own: the run loop
// hands a configuration to an idle lane (submit) and takes results as lanes finish them (wait), in whatever order
// they come. With one lane this is the overlap the loop always had: the GPU measures the next configuration while
// the loop records the previous result and asks its strategy for more.
//
// A lane is lost when its Measurer throws (the worker of that GPU cannot be started again, a process of a run over
// several hosts stopped answering): the job comes back from wait() without an evaluation, so that the loop gives
// it to another lane, and the lost lane takes no more work. Nothing a lane was given is dropped: every submitted
// job comes back from wait() exactly once.
//
// Each Measurer is used only from its lane's thread while the lanes exist; the caller may use one directly (the
// final round) only when no job is running.
//
// The lanes keep a ledger of what they waited for (lane_idle.h): the loop says what it is doing (set_activity), and
// every lane without a job counts that time against it, until stop_counting().

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/record/evaluation.h"
#include "tuner/session/lane_idle.h"
#include "tuner/session/measurer.h"
#include "tuner/space/space.h"

namespace kernlathe {

struct LaneJob {
  std::uint64_t id = 0;
  Configuration configuration;
  std::optional<CompileResult> compiled;  // empty for a measurer that needs no compilation
  bool measure_energy = false;
  std::vector<std::size_t> lanes_tried;  // lanes that measured it before (lost, or whose worker died during it)
  std::string earlier_failure;            // what happened there, for the row's message
};

struct LaneOutcome {
  LaneJob job;
  std::size_t lane = 0;
  std::optional<Evaluation> evaluation;  // empty when the lane was lost during the job
  std::string lost_reason;               // why the lane was lost, when it was
};

class MeasurementLanes {
 public:
  // One lane per measurer, named by labels (Evaluation::device); the measurers must outlive the lanes and be
  // prepared. space must outlive them too.
  MeasurementLanes(std::vector<Measurer*> measurers, std::vector<std::string> labels, const SpaceEnumerator& space);
  ~MeasurementLanes();  // waits for running jobs, then ends the threads
  MeasurementLanes(const MeasurementLanes&) = delete;
  MeasurementLanes& operator=(const MeasurementLanes&) = delete;

  std::size_t size() const { return lanes_.size(); }
  std::size_t alive() const;  // lanes not lost
  std::size_t idle() const;   // alive lanes without a job
  std::size_t busy() const;   // jobs submitted and not yet returned by wait()
  const std::string& label(std::size_t lane) const { return lanes_[lane]->label; }
  bool lost(std::size_t lane) const;

  // Hands the job to an idle lane, one not in job.lanes_tried when there is such a lane, taking the lanes in turn
  // from the one after the lane of the previous job: a lane that finishes at once (a replay, a tiny kernel) does not
  // take every job while the others are idle. Returns false, keeping nothing, when no lane is idle.
  bool submit(LaneJob& job);
  // The next finished job, blocking until one finishes. TunerError when no job is running.
  LaneOutcome wait();
  // A finished job when one is ready, without blocking.
  std::optional<LaneOutcome> try_take();

  // What the run loop is doing from now on, for the idle lanes' ledger.
  void set_activity(LoopActivity activity);
  // The ledger stops counting (the search ended) and says what the lanes did.
  LaneTimes stop_counting();
  LaneTimes times() const;

 private:
  struct Lane {
    Measurer* measurer = nullptr;
    std::string label;
    std::thread thread;
    std::optional<LaneJob> job;  // set while it has work
    bool lost = false;
  };
  void run_lane(std::size_t index);
  std::size_t idle_locked() const;
  void lanes_changed_locked();  // the ledger learns the lanes' counts; the mutex is held

  const SpaceEnumerator& space_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  mutable std::mutex mutex_;
  std::condition_variable work_;      // a lane got a job, or the lanes end
  std::condition_variable finished_;  // an outcome is ready
  std::deque<LaneOutcome> outcomes_;
  std::size_t running_ = 0;           // submitted, not yet returned by wait()
  std::size_t next_lane_ = 0;         // where submit() starts looking
  bool ending_ = false;
  LaneIdleLedger ledger_;
};

}  // namespace kernlathe
