#pragma once
// Where a session's measurements come from: the GPU (through an evaluation worker process) or a recorded CSV.
// The run loop in tuning_session.cpp does not know which.

#include <memory>
#include <string>

#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/record/evaluation.h"
#include "tuner/measure/ceilings.h"
#include "tuner/measure/measurement.h"
#include "tuner/session/run_profile.h"
#include "tuner/space/space.h"
#include "tuner/spec/model.h"

namespace kernlathe {

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual const DeviceProperties& device() const = 0;
  virtual std::string driver_version() const { return ""; }
  virtual bool needs_compilation() const = 0;
  // Device-to-device copy bandwidth (bytes read + written per second / 1e9) measured on this device, 0 if unknown.
  virtual double copy_bandwidth_gbps() const { return 0; }
  // Streamed specs: host-to-device bandwidth of one large pinned copy (GB/s), measured now on this device after
  // prepare(); 0 when it cannot be measured (a replay). The session asks only when the ceilings lack it.
  virtual double measure_pinned_copy_in_gbps() { return 0; }
  // The spec's baseline (cuBLAS for GEMM) timed on this device in prepare(); 0 when the spec has none.
  virtual double baseline_ms() const { return 0; }
  virtual std::string baseline_library() const { return ""; }
  // Called once the space exists: allocate buffers, compute the reference outputs.
  virtual void prepare(const SpaceEnumerator& space) = 0;
  // What prepare() spent its time on, in order (the start-up profile); empty when it did nothing worth naming.
  virtual std::vector<ProfilePhase> preparation_phases() const { return {}; }
  // compiled is null when needs_compilation() is false. measure_energy: energy per launch too (a GPU measurer
  // with an energy counter; a replay takes what the record holds). The run loop calls it from a lane's thread
  // (measurement_lanes.h), one measurement at a time per measurer. Throws only when the device is lost (its
  // worker cannot be started again): a configuration's failure is a status.
  virtual Evaluation measure(const Configuration& configuration, const CompileResult* compiled,
                             const SpaceEnumerator& space, bool measure_energy) = 0;
  // Leaves the device idle for burst_rest_ms (tuner/measure/measurement.h) and times the next measurement (a
  // configuration or the baseline) as a burst: a figure that does not depend on what ran before it. The final round
  // calls it before each of its measurements. Nothing to do where no GPU measures (a replay).
  virtual void rest() {}
  // The sustained figure (tuner/measure/measurement.h) of a configuration, or of the baseline where configuration
  // is null: milliseconds per launch with the kernel back to back for sustained_seconds. Nothing where no GPU
  // measures (a replay), or where the measurement failed.
  virtual std::optional<double> sustained_ms(const Configuration* configuration, const CompileResult* compiled,
                                             const SpaceEnumerator& space) {
    (void)configuration, (void)compiled, (void)space;
    return std::nullopt;
  }
  // The ceilings of tuner/measure/ceilings.h on this device; all zero when unknown (a replay).
  virtual Ceilings ceilings() { return {}; }
  // What the last ceilings() spent its time on, in order (the start-up profile); empty when unknown.
  virtual std::vector<ProfilePhase> ceiling_phases() const { return {}; }
  // The baseline measured again, for the final round; status invalid where there is none (no baseline, replay).
  virtual Evaluation measure_baseline(bool measure_energy) {
    (void)measure_energy;
    Evaluation none;
    none.status = Status::invalid;
    none.message = "no baseline to measure";
    return none;
  }
};

struct GpuMeasurerOptions {
  std::filesystem::path worker_executable;
  std::filesystem::path cubin_cache_dir;
  int device = 0;
  double timeout_seconds = 10;
  MeasurementSettings measurement;
};

// Starts an evaluation worker on the device. Throws NoGpuError when there is no driver or device.
std::unique_ptr<Measurer> make_gpu_measurer(const KernelSpec& spec, const GpuMeasurerOptions& options);

// Measurements from a recorded CSV; configurations missing from it come back with status `invalid`. pace_ms > 0:
// each measurement takes that long (a sleep), as a GPU's would.
std::unique_ptr<Measurer> make_replay_measurer(const KernelSpec& spec, const std::filesystem::path& csv,
                                               const DeviceProperties& device, double pace_ms = 0);

}  // namespace kernlathe
