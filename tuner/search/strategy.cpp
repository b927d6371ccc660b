#include "tuner/search/strategy.h"

#include <algorithm>

#include <fmt/format.h>

#include "tuner/search/annealing.h"
#include "tuner/search/bayesian.h"
#include "tuner/search/differential_evolution.h"
#include "tuner/search/genetic.h"
#include "tuner/search/local_search.h"
#include "tuner/search/permutation.h"
#include "tuner/search/surrogate.h"

namespace kernlathe {

Strategy::~Strategy() = default;

namespace {

// Walks positions 0, 1, ... of an order over the valid indices; the strategies differ only in the order.
class IndexOrderStrategy : public Strategy {
 public:
  explicit IndexOrderStrategy(const SpaceEnumerator& space) : space_(space), valid_count_(space.valid_count()) {}

  std::vector<Configuration> ask(std::size_t count) override {
    std::uint64_t available = valid_count_ - next_position_;
    std::uint64_t taken = std::min<std::uint64_t>(count, available);
    std::vector<Configuration> proposals;
    proposals.reserve(static_cast<std::size_t>(taken));
    for (std::uint64_t step = 0; step < taken; ++step) {
      proposals.push_back(space_.at(index_at(next_position_)));
      ++next_position_;
    }
    return proposals;
  }

  // Neither order depends on results.
  void tell(const Evaluation&) override {}

 protected:
  virtual std::uint64_t index_at(std::uint64_t position) const = 0;

  const SpaceEnumerator& space_;
  std::uint64_t valid_count_ = 0;
  std::uint64_t next_position_ = 0;
};

class ExhaustiveStrategy final : public IndexOrderStrategy {
 public:
  using IndexOrderStrategy::IndexOrderStrategy;
  std::string name() const override { return "exhaustive"; }

 private:
  std::uint64_t index_at(std::uint64_t position) const override { return position; }
};

class RandomStrategy final : public IndexOrderStrategy {
 public:
  RandomStrategy(const SpaceEnumerator& space, std::uint64_t seed)
      : IndexOrderStrategy(space), permutation_(space.valid_count(), seed) {}
  std::string name() const override { return "random"; }

 private:
  std::uint64_t index_at(std::uint64_t position) const override { return permutation_(position); }

  IndexPermutation permutation_;
};

}  // namespace

std::vector<std::string> strategy_names() {
  return {"exhaustive", "random", "local", "annealing", "genetic", "differential-evolution", "bayesian", "surrogate"};
}

std::unique_ptr<Strategy> make_strategy(std::string_view name, const SpaceEnumerator& space, std::uint64_t seed) {
  if (name == "exhaustive") return std::make_unique<ExhaustiveStrategy>(space);
  if (name == "random") return std::make_unique<RandomStrategy>(space, seed);
  if (name == "local") return std::make_unique<LocalSearchStrategy>(space, seed);
  if (name == "annealing") return std::make_unique<AnnealingStrategy>(space, seed);
  if (name == "genetic") return std::make_unique<GeneticStrategy>(space, seed);
  if (name == "differential-evolution") return std::make_unique<DifferentialEvolutionStrategy>(space, seed);
  if (name == "bayesian") return std::make_unique<BayesianStrategy>(space, seed);
  if (name == "surrogate") return std::make_unique<SurrogateStrategy>(space, seed);
  std::vector<std::string> names = strategy_names();
  std::string suggestion = expr::closest_match(name, names);
  throw InputError(fmt::format("unknown search strategy '{}'{}; known strategies: {}", name,
                               suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                               fmt::format("{}", fmt::join(names, ", "))));
}

}  // namespace kernlathe
