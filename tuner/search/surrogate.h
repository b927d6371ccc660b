#pragma once
// Surrogate-guided search: a random forest (regression_forest.h) learns log time from the parameter values and a
// few derived features (power-of-two flags, products of two integer parameters, the space's numeric derived
// values); the next proposals are the unexplored configurations of highest expected improvement under it, the
// trees' spread standing in for uncertainty. A batch asked at once comes from one fit, so the compile pool gets
// a full queue. Failures are taught as slower than the slowest success, which steers the model away from them.
// Candidates: every unexplored configuration where the space is small enough to score whole, otherwise a random
// sample plus the unexplored neighbours of the fastest configurations.

#include <cstdint>
#include <vector>

#include "tuner/search/guided_strategy.h"
#include "tuner/search/regression_forest.h"

namespace tuner {

class SurrogateStrategy final : public GuidedStrategy {
 public:
  SurrogateStrategy(const SpaceEnumerator& space, std::uint64_t seed);
  std::string name() const override { return "surrogate"; }

  // What the model sees of a configuration; public for the tests.
  std::vector<double> features(const Configuration& configuration) const;

 private:
  std::optional<Configuration> propose() override;
  void observed(const Observation& observation) override;
  void fill_queue();
  const std::vector<double>& cached_features(std::uint64_t index);

  struct Product {
    std::size_t first = 0;
    std::size_t second = 0;
  };
  std::vector<std::size_t> varying_parameters_;     // parameters with more than one value
  std::vector<std::size_t> power_of_two_flagged_;   // integer parameters with powers of two and other values
  std::vector<Product> products_;                   // pairs of integer parameters
  bool derived_features_ = false;                   // numeric derived values join the features

  // Feature rows of configurations by valid index; filled lazily.
  std::vector<std::vector<double>> feature_cache_;
  bool score_whole_space_ = false;

  RegressionForest forest_;
  std::vector<std::uint64_t> queue_;  // valid indices, best last
  std::size_t proposals_ = 0;
  std::optional<Observation> walker_;
  double temperature_ = 0.2;
  bool stale_ = true;                 // a result arrived since the queue was filled
};

}  // namespace tuner
