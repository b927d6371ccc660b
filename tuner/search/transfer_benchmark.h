#pragma once
// The transfer benchmark of issue 32, on recorded landscapes and no GPU: for each recording of a kernel in turn
// (the target), the other recordings of the same kernel (other GPUs) are the prior; the default strategy runs on the
// target's landscape with and without that prior for each seed, and what it found is read at each budget as best
// over the target's optimum. Summaries are geometric means over seeds (per target) and over every target and seed.

#include <cstdint>
#include <string>
#include <vector>

#include "tuner/search/prior.h"
#include "tuner/search/replay.h"

namespace kernlathe {

// One recorded landscape of a kernel on one device.
struct TransferLandscape {
  std::string device;
  std::vector<Evaluation> evaluations;
};

// The best found after each evaluation (1-based: best_after[k - 1] after k evaluations), over the optimum of
// source; +infinity until a verified result came. Runs the strategy asking one configuration at a time, up to
// budget evaluations or until it is exhausted (the last figure then stands for the rest).
std::vector<double> best_over_optimum_curve(Strategy& strategy, const ReplaySource& source, std::uint64_t budget);

struct TransferCase {
  std::string target;
  std::size_t prior_sources = 0;
  // [budget index][seed index]: best over optimum.
  std::vector<std::vector<double>> with_prior;
  std::vector<std::vector<double>> without_prior;
  double top_transfer_over_optimum = 0;  // the prior's first configuration on the target (infinity: not ok there)
};

// Geometric mean of values (infinity when any is infinite or values is empty).
double geometric_mean(const std::vector<double>& values);

// Whether the prior made the case worse beyond the noise at a budget: the mean log ratio with the prior exceeds the
// one without by more than twice the standard error of their difference over seeds (the noise of the search) and by
// more than 1% (the noise of the recorded figures themselves: a configuration's median is measured until its spread
// is within 2%, tuner/measure/measurement.h, so two recorded figures 1% apart may swap on a second measurement).
bool worse_beyond_noise(const std::vector<double>& with_prior, const std::vector<double>& without_prior);

// Leave one out over landscapes (recordings of one kernel in space): each is the target once, the others its prior.
// Seeds first_seed..first_seed + seeds - 1; budgets positive.
std::vector<TransferCase> run_transfer_benchmark(const SpaceEnumerator& space,
                                                 const std::vector<TransferLandscape>& landscapes,
                                                 const std::string& strategy, int seeds,
                                                 const std::vector<std::uint64_t>& budgets,
                                                 const PriorSettings& settings = {}, int first_seed = 1);

}  // namespace kernlathe
