#pragma once
// Surrogate-guided search: a random forest (regression_forest.h) learns log time from the parameter values and a
// few derived features (power-of-two flags, products of two integer parameters, the space's numeric derived
// values). Each proposal is the unexplored configuration predicted fastest by one tree of the forest drawn at
// random (Thompson sampling), so a batch asked at once spreads over what the trees disagree on and keeps the
// compile pool busy without waiting for results. Failures are taught as slower than the slowest success, which
// steers the model away from them. Candidates: every unexplored configuration where the space is small enough
// to score whole, otherwise a random sample plus the unexplored neighbours of the fastest configurations.
//
// A parameter that does not matter to a configuration (its `when:` condition is false) is shown to the model as a
// value below all others, as are the products and derived values built only from such parameters, so the forest
// does not learn from the default an irrelevant parameter is held at.
//
// The first proposals form a space-filling design (each the farthest, in scaled value positions, from those
// before it among a few random draws), so the first fit sees every corner of the space rather than a random
// clump. Leaves hold a single sample: with a few dozen observations a leaf of two averages the fastest
// configuration with a slower one and hides exactly the region the search should refine.
//
// Why Thompson sampling and not expected improvement over the forest's mean and spread: on the convolution
// landscapes (tune replay, 25 seeds) expected improvement settled on the broad shared-memory plateau of the
// A4000 (best 1.19x the optimum after 200 evaluations), while single-tree draws reached within 5% in 61, 87 and
// 86 evaluations on A4000, A6000 and MI250X (median of 25 seeds; with the design and leaves of one, 32, 60, 57).

#include <cstdint>
#include <vector>

#include "tuner/search/guided_strategy.h"
#include "tuner/search/regression_forest.h"

namespace kernlathe {

struct SurrogateSettings {
  // The forest is fitted again when the results grew by this fraction since its last fit (0: whenever a result came).
  // A fit costs time in proportion to the results it learns from (at most model_limit), so refitting at every model
  // proposal made each result cost more the longer a run went: the bf16 GEMM's strategy took 16.7 s of a run in which
  // the GPU worker took 12.9 s. With 1/64 the portfolio, whose model proposes one configuration in four, refits at each
  // of its proposals for its first 256 results, so every budget benchmarks/strategy_cv.py judges the default on
  // (50-200) sees the same search; after that a result costs at most what it cost at 256, and less past model_limit
  // (benchmarks/bench_search.cpp, 2,000 results of a GEMM record: 1.3 against 4.9 ms per result). Larger fractions
  // lost at 50 evaluations in the cross-validation (100 seeds: 1.0352 with 0.25, 1.0372 with 0.5, against 1.0268).
  double refit_growth = 1.0 / 64;
};

class SurrogateStrategy final : public GuidedStrategy {
 public:
  SurrogateStrategy(const SpaceEnumerator& space, std::uint64_t seed, SurrogateSettings settings = {});
  std::string name() const override { return "surrogate"; }
  ModelUpdates model_updates() const override { return updates_; }

  // What the model sees of a configuration; public for the tests.
  std::vector<double> features(const Configuration& configuration) const;

 private:
  std::optional<Configuration> propose() override;
  bool needs_fit() const;
  void fit();
  std::vector<std::uint64_t> candidates();
  std::optional<Configuration> space_filling_proposal();
  const std::vector<double>& cached_features(std::uint64_t index);

  struct Product {
    std::size_t first = 0;
    std::size_t second = 0;
  };
  std::vector<std::size_t> varying_parameters_;    // parameters with more than one value
  std::vector<std::size_t> power_of_two_flagged_;  // integer parameters with powers of two and other values
  std::vector<Product> products_;                  // pairs of integer parameters
  bool derived_features_ = false;                  // numeric derived values join the features
  std::vector<std::vector<std::size_t>> derived_conditional_reads_;  // per derived value: conditional parameters it reads

  // Feature rows by valid index, filled lazily, when the space is scored whole.
  bool score_whole_space_ = false;
  std::vector<std::vector<double>> feature_cache_;

  std::vector<Configuration> design_;  // the space-filling proposals so far, results or not
  SurrogateSettings settings_;
  RegressionForest forest_;
  std::size_t fitted_observations_ = 0;  // results the forest was last fitted on; 0 before the first fit
  ModelUpdates updates_;
};

}  // namespace kernlathe
