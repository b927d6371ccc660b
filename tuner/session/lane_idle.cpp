#include "tuner/session/lane_idle.h"

#include <numeric>

namespace kernlathe {

std::string_view loop_activity_name(LoopActivity activity) {
  switch (activity) {
    case LoopActivity::loop: return "loop";
    case LoopActivity::strategy: return "strategy";
    case LoopActivity::compilation: return "compilation";
    case LoopActivity::records: return "records";
    case LoopActivity::results: return "results";
  }
  return "loop";
}

double LaneTimes::idle_total() const { return std::accumulate(idle_seconds.begin(), idle_seconds.end(), 0.0); }

void LaneIdleLedger::start(std::size_t lanes, TimePoint now) {
  counting_ = true;
  last_ = now;
  activity_ = LoopActivity::loop;
  alive_ = idle_ = lanes;
  times_ = LaneTimes{};
  times_.lanes = lanes;
}

void LaneIdleLedger::advance(TimePoint now) {
  if (!counting_ || now <= last_) return;
  const double seconds = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  times_.lane_seconds += seconds * static_cast<double>(alive_);
  times_.measuring_seconds += seconds * static_cast<double>(alive_ - idle_);
  times_.idle_seconds[static_cast<std::size_t>(activity_)] += seconds * static_cast<double>(idle_);
}

void LaneIdleLedger::set_activity(LoopActivity activity, TimePoint now) {
  advance(now);
  activity_ = activity;
}

void LaneIdleLedger::set_lanes(std::size_t alive, std::size_t idle, TimePoint now) {
  advance(now);
  alive_ = alive;
  idle_ = idle <= alive ? idle : alive;
}

void LaneIdleLedger::stop(TimePoint now) {
  advance(now);
  counting_ = false;
}

}  // namespace kernlathe
