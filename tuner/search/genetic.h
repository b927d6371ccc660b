#pragma once
// A steady-state genetic algorithm: parents are drawn by tournament from the fastest configurations seen,
// children take each parameter from either parent and mutate with probability 1/parameters (an adjacent value
// or any value). Failed configurations never become parents. Children that are invalid or already proposed are
// drawn again; after a few misses a random configuration is proposed instead.

#include "tuner/search/guided_strategy.h"

namespace kernlathe {

class GeneticStrategy final : public GuidedStrategy {
 public:
  GeneticStrategy(const SpaceEnumerator& space, std::uint64_t seed);
  std::string name() const override { return "genetic"; }

 private:
  std::optional<Configuration> propose() override;
  const Observation& tournament(const std::vector<const Observation*>& population);
};

}  // namespace kernlathe
