#pragma once
// Simulated annealing over one-parameter moves: a random unexplored neighbour of the current configuration is
// proposed; a slower one replaces the current with probability exp(-(relative slowdown) / temperature), and the
// temperature falls with every result. Failed configurations are never accepted. When the current configuration
// has no unexplored neighbour left, the walk jumps to the fastest configuration seen or a random one.

#include "tuner/search/guided_strategy.h"

namespace kernlathe {

class AnnealingStrategy final : public GuidedStrategy {
 public:
  AnnealingStrategy(const SpaceEnumerator& space, std::uint64_t seed);
  std::string name() const override { return "annealing"; }

 private:
  std::optional<Configuration> propose() override;
  void observed(const Observation& observation) override;

  std::optional<Observation> current_;
  double temperature_ = 0.2;  // accepts a 20% slowdown with probability 1/e at first
};

}  // namespace kernlathe
