#pragma once
// Multi-start local search: a few random starts, then the unexplored neighbours (adjacent values first, then
// any other value of one parameter) of the fastest configuration whose neighbourhood is not yet spent. When a
// stretch of evaluations brings no improvement, fresh random starts are mixed in, so a local optimum does not
// hold the search. Failed configurations are never expanded.

#include "tuner/search/guided_strategy.h"

namespace kernlathe {

class LocalSearchStrategy final : public GuidedStrategy {
 public:
  LocalSearchStrategy(const SpaceEnumerator& space, std::uint64_t seed);
  std::string name() const override { return "local"; }

 private:
  std::optional<Configuration> propose() override;
  void observed(const Observation& observation) override;

  // Unproposed neighbours of a centre, computed once, in the order they will be proposed.
  std::vector<Configuration>& pending_neighbours(const Observation& centre);

  std::unordered_map<std::uint64_t, std::vector<Configuration>> neighbourhoods_;
  std::optional<double> best_time_ms_;
  std::size_t since_improvement_ = 0;
  std::size_t restarts_owed_ = 0;
};

}  // namespace kernlathe
