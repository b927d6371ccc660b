#pragma once
// Bayesian optimisation: a Gaussian process (squared-exponential kernel on value positions scaled to
// [0, 1]) models log time; the next proposals are the candidates of highest expected improvement. Candidates: random unexplored configurations plus the unexplored neighbours of the fastest
// ones, so the search can both explore and polish. A failed configuration is modelled as slower than anything
// seen, which steers the search away from its region. Eigen does the linear algebra.

#include "tuner/search/guided_strategy.h"

namespace kernlathe {

class BayesianStrategy final : public GuidedStrategy {
 public:
  BayesianStrategy(const SpaceEnumerator& space, std::uint64_t seed);
  std::string name() const override { return "bayesian"; }

 private:
  std::optional<Configuration> propose() override;
  void observed(const Observation&) override;
  void fill_queue();

  // Proposals ranked by expected improvement for the current model; cleared whenever a result arrives.
  std::vector<Configuration> queue_;
  std::size_t results_since_fit_ = 0;
};

}  // namespace kernlathe
