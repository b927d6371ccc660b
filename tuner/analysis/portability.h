#pragma once
// How well one GPU's tuned configuration does on another, from recorded data only (issue 15). Recordings of the
// same kernel on different GPUs form a group: project records of the same kernel name, problem and parameters whose
// run.json names different GPUs, or T4 files of the same T1 space (convolution-A4000, convolution-A6000).
//
// For each GPU's best configuration, the portability matrix says what it measured on every GPU of the group: its
// time there as a fraction of that GPU's optimum (optimum / time: 1 is the best there is, 0.5 takes twice as long)
// and its rank among that GPU's valid configurations; "failed" where that GPU recorded it with a failure and "not
// measured" where that GPU did not record it. Nothing is predicted. The portable default is the configuration,
// among those recorded valid on every GPU of the group, whose worst fraction of optimum over the GPUs is largest.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tuner/analysis/recording.h"

namespace kernlathe {

struct PortabilityCell {
  enum class State { measured, failed, not_measured };
  State state = State::not_measured;
  Status status = Status::ok;       // failed: the status recorded
  double time_ms = 0;               // measured: the recorded time
  double fraction_of_optimum = 0;   // measured: the GPU's optimum / time
  std::size_t rank = 0;             // measured: 1 + the number of valid configurations faster there
};

struct PortableDefault {
  Configuration configuration;
  std::vector<PortabilityCell> on;  // per GPU of the group, in the group's order
  double worst_fraction = 0;
};

struct PortabilityGroup {
  std::string kernel;
  std::string problem;
  std::vector<std::string> parameter_names;
  std::vector<std::size_t> recordings;  // indices into the analysed recordings, one per GPU
  std::vector<std::string> devices;
  std::vector<Configuration> best;      // per GPU: its fastest valid configuration
  std::vector<double> optimum_ms;       // per GPU
  std::vector<std::size_t> valid;       // per GPU: valid configurations recorded
  std::vector<std::vector<PortabilityCell>> matrix;  // [row: whose best][column: the GPU it was measured on]
  std::size_t valid_everywhere = 0;     // configurations recorded valid on every GPU of the group
  std::optional<PortableDefault> portable_default;  // none when no configuration is valid everywhere
  std::vector<std::string> notes;       // recordings left out of the group, and why
};

// One group per family with recordings of at least two different GPUs, in the order their first recording
// appears. Where one GPU has several recordings of a family, the first is taken and the others are noted.
std::vector<PortabilityGroup> analyse_portability(const std::vector<Recording>& recordings);

}  // namespace kernlathe
