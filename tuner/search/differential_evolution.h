#pragma once
// Differential evolution on value positions: a mutant a + F (b - c) of three of the fastest configurations seen,
// crossed with a target from the same set, rounded to the nearest positions. Invalid or already proposed trials
// are drawn again; then an unexplored neighbour of the target; then a random configuration. Failed
// configurations never join the population.

#include "tuner/search/guided_strategy.h"

namespace kernlathe {

class DifferentialEvolutionStrategy final : public GuidedStrategy {
 public:
  DifferentialEvolutionStrategy(const SpaceEnumerator& space, std::uint64_t seed);
  std::string name() const override { return "differential-evolution"; }

 private:
  std::optional<Configuration> propose() override;
};

}  // namespace kernlathe
