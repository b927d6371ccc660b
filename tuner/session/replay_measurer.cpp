// Measurements taken from a recorded CSV: the whole run loop, strategies included, runs without a GPU.
#include <chrono>
#include <optional>
#include <thread>

#include "tuner/record/run_metadata.h"
#include "tuner/search/replay.h"
#include "tuner/session/measurer.h"

namespace kernlathe {
namespace {

class ReplayMeasurer final : public Measurer {
 public:
  ReplayMeasurer(const std::filesystem::path& csv, DeviceProperties device, double pace_ms)
      : device_(std::move(device)), csv_(csv), pace_ms_(pace_ms) {
    // The copy ceiling the recorded run measured, so replayed results show the same fractions.
    for (const RunMetadata& run : read_run_metadata(csv)) {
      if (std::optional<double> copy = extra_number(run, "copy_bandwidth_gbps", csv)) copy_bandwidth_gbps_ = *copy;
      if (std::optional<double> baseline = extra_number(run, "baseline_ms", csv)) {
        baseline_ms_ = *baseline;
        if (auto library = run.extra.find("baseline_library"); library != run.extra.end()) baseline_library_ = library->second;
      }
    }
  }

  double copy_bandwidth_gbps() const override { return copy_bandwidth_gbps_; }
  double baseline_ms() const override { return baseline_ms_; }
  std::string baseline_library() const override { return baseline_library_; }

  const DeviceProperties& device() const override { return device_; }
  bool needs_compilation() const override { return false; }
  // The rows are read here, where the enumerator that maps them onto canonical configurations is known.
  void prepare(const SpaceEnumerator& space) override { source_.emplace(csv_, space, ""); }

  Evaluation measure(const Configuration& configuration, const CompileResult*, const SpaceEnumerator&, bool) override {
    if (pace_ms_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pace_ms_));
    return source_->evaluate(configuration);
  }

 private:
  DeviceProperties device_;
  std::filesystem::path csv_;
  double pace_ms_ = 0;
  std::optional<ReplaySource> source_;
  double copy_bandwidth_gbps_ = 0;
  double baseline_ms_ = 0;
  std::string baseline_library_;
};

}  // namespace

std::unique_ptr<Measurer> make_replay_measurer(const KernelSpec&, const std::filesystem::path& csv,
                                               const DeviceProperties& device, double pace_ms) {
  DeviceProperties replayed = device;
  replayed.name = "replay of " + csv.string();
  return std::make_unique<ReplayMeasurer>(csv, replayed, pace_ms);
}

}  // namespace kernlathe
