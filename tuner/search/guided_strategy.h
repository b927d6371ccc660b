#pragma once
// Bookkeeping shared by the strategies that learn from results: which valid configurations were proposed
// (never propose one twice), what came back (failures included), a seeded generator, and a numeric encoding of
// configurations (each parameter's value position scaled to [0, 1]) for the model-based and vector methods.

#include <cstdint>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tuner/search/strategy.h"

namespace kernlathe {

struct Observation {
  Configuration configuration;
  std::uint64_t index = 0;    // position in the space's valid order
  std::optional<double> time_ms;  // nullopt when the configuration failed
};

class GuidedStrategy : public Strategy {
 public:
  GuidedStrategy(const SpaceEnumerator& space, std::uint64_t seed);

  std::vector<Configuration> ask(std::size_t count) override;
  void tell(const Evaluation& evaluation) override;
  // Never propose configuration, without learning from its result (another search of a portfolio measured it).
  void exclude(const Configuration& configuration);

 protected:
  // One new proposal, already claimed with claim(); nullopt to fall back to a uniformly random one.
  virtual std::optional<Configuration> propose() = 0;
  // Called after each result has been added to observations().
  virtual void observed(const Observation&) {}

  // Marks configuration proposed when it is valid and new; false otherwise (nothing changes).
  bool claim(const Configuration& configuration);
  bool proposed(const Configuration& configuration) const;
  bool proposed_index(std::uint64_t index) const { return proposed_.contains(index); }
  // A uniformly drawn valid configuration never proposed before, claimed; nullopt when none is left.
  std::optional<Configuration> claim_random();
  // Valid neighbours of configuration (adjacent values first, then any other value) not yet proposed.
  std::vector<Configuration> unproposed_neighbours(const Configuration& configuration, bool adjacent_only) const;

  // Value position of each parameter; scaled: position / (values - 1), 0 for single-valued parameters.
  std::vector<int> positions(const Configuration& configuration) const;
  std::vector<double> encode(const Configuration& configuration) const;
  Configuration from_positions(const std::vector<int>& positions) const;

  const std::vector<Observation>& observations() const { return observations_; }
  // Successful observations, fastest first.
  std::vector<const Observation*> ranked() const;
  std::size_t proposed_count() const { return proposed_.size(); }
  std::uint64_t valid_count() const { return valid_count_; }

  const SpaceEnumerator& space_;
  std::mt19937_64 random_;

 private:
  std::uint64_t valid_count_;
  std::unordered_set<std::uint64_t> proposed_;
  std::vector<Observation> observations_;
};

double uniform01(std::mt19937_64& random);
std::size_t uniform_index(std::mt19937_64& random, std::size_t size);  // size > 0

}  // namespace kernlathe
