#include "tuner/session/measurement_lanes.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include <fmt/format.h>

#include "tuner/common/error.h"

namespace kernlathe {

MeasurementLanes::MeasurementLanes(std::vector<Measurer*> measurers, std::vector<std::string> labels,
                                   const SpaceEnumerator& space)
    : space_(space) {
  if (measurers.empty()) throw TunerError("measurement lanes need at least one measurer");
  if (labels.size() != measurers.size()) throw TunerError("measurement lanes need one label per measurer");
  for (std::size_t index = 0; index < measurers.size(); ++index) {
    auto lane = std::make_unique<Lane>();
    lane->measurer = measurers[index];
    lane->label = std::move(labels[index]);
    lanes_.push_back(std::move(lane));
  }
  ledger_.start(lanes_.size(), std::chrono::steady_clock::now());
  for (std::size_t index = 0; index < lanes_.size(); ++index)
    lanes_[index]->thread = std::thread([this, index] { run_lane(index); });
}

MeasurementLanes::~MeasurementLanes() {
  {
    std::lock_guard lock(mutex_);
    ending_ = true;
  }
  work_.notify_all();
  for (auto& lane : lanes_)
    if (lane->thread.joinable()) lane->thread.join();
}

std::size_t MeasurementLanes::alive() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(lanes_.begin(), lanes_.end(), [](const auto& lane) { return !lane->lost; }));
}

std::size_t MeasurementLanes::idle() const {
  std::lock_guard lock(mutex_);
  return idle_locked();
}

std::size_t MeasurementLanes::idle_locked() const {
  return static_cast<std::size_t>(
      std::count_if(lanes_.begin(), lanes_.end(), [](const auto& lane) { return !lane->lost && !lane->job; }));
}

void MeasurementLanes::lanes_changed_locked() {
  const auto alive = static_cast<std::size_t>(
      std::count_if(lanes_.begin(), lanes_.end(), [](const auto& lane) { return !lane->lost; }));
  ledger_.set_lanes(alive, idle_locked(), std::chrono::steady_clock::now());
}

void MeasurementLanes::set_activity(LoopActivity activity) {
  std::lock_guard lock(mutex_);
  ledger_.set_activity(activity, std::chrono::steady_clock::now());
}

LaneTimes MeasurementLanes::stop_counting() {
  std::lock_guard lock(mutex_);
  ledger_.stop(std::chrono::steady_clock::now());
  return ledger_.times();
}

LaneTimes MeasurementLanes::times() const {
  std::lock_guard lock(mutex_);
  return ledger_.times();
}

std::size_t MeasurementLanes::busy() const {
  std::lock_guard lock(mutex_);
  return running_;
}

bool MeasurementLanes::lost(std::size_t lane) const {
  std::lock_guard lock(mutex_);
  return lanes_.at(lane)->lost;
}

bool MeasurementLanes::submit(LaneJob& job) {
  std::lock_guard lock(mutex_);
  std::optional<std::size_t> chosen;
  for (std::size_t offset = 0; offset < lanes_.size(); ++offset) {
    const std::size_t index = (next_lane_ + offset) % lanes_.size();
    const Lane& lane = *lanes_[index];
    if (lane.lost || lane.job) continue;
    const bool tried = std::find(job.lanes_tried.begin(), job.lanes_tried.end(), index) != job.lanes_tried.end();
    if (!tried) {
      chosen = index;
      break;
    }
    if (!chosen) chosen = index;  // only lanes that tried it are idle: one of them measures it again
  }
  if (!chosen) return false;
  next_lane_ = *chosen + 1;
  lanes_[*chosen]->job = std::move(job);
  ++running_;
  lanes_changed_locked();
  work_.notify_all();
  return true;
}

LaneOutcome MeasurementLanes::wait() {
  std::unique_lock lock(mutex_);
  if (running_ == 0) throw TunerError("no measurement is running");
  finished_.wait(lock, [&] { return !outcomes_.empty(); });
  LaneOutcome outcome = std::move(outcomes_.front());
  outcomes_.pop_front();
  --running_;
  return outcome;
}

std::optional<LaneOutcome> MeasurementLanes::try_take() {
  std::lock_guard lock(mutex_);
  if (outcomes_.empty()) return std::nullopt;
  LaneOutcome outcome = std::move(outcomes_.front());
  outcomes_.pop_front();
  --running_;
  return outcome;
}

void MeasurementLanes::run_lane(std::size_t index) {
  Lane& lane = *lanes_[index];
  while (true) {
    LaneJob job;
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [&] { return ending_ || lane.job.has_value(); });
      if (!lane.job) return;  // ending, nothing to do
      job = std::move(*lane.job);
    }
    LaneOutcome outcome;
    outcome.lane = index;
    try {
      Evaluation evaluation = lane.measurer->measure(job.configuration, job.compiled ? &*job.compiled : nullptr,
                                                     space_, job.measure_energy);
      evaluation.configuration = job.configuration;
      evaluation.device = lane.label;
      outcome.evaluation = std::move(evaluation);
    } catch (const std::exception& error) {
      outcome.lost_reason = error.what();
    }
    outcome.job = std::move(job);
    {
      std::lock_guard lock(mutex_);
      lane.job.reset();
      if (!outcome.evaluation) lane.lost = true;
      outcomes_.push_back(std::move(outcome));
      lanes_changed_locked();
    }
    finished_.notify_all();
  }
}

}  // namespace kernlathe
