#include "tuner/search/genetic.h"

#include <algorithm>

namespace kernlathe {
namespace {

constexpr std::size_t population_size = 16;
constexpr std::size_t tournament_size = 3;
constexpr int attempts = 40;

}  // namespace

GeneticStrategy::GeneticStrategy(const SpaceEnumerator& space, std::uint64_t seed) : GuidedStrategy(space, seed) {}

const Observation& GeneticStrategy::tournament(const std::vector<const Observation*>& population) {
  // population is fastest first, so the smallest drawn position wins.
  std::size_t winner = population.size();
  for (std::size_t round = 0; round < tournament_size; ++round)
    winner = std::min(winner, uniform_index(random_, population.size()));
  return *population[winner];
}

std::optional<Configuration> GeneticStrategy::propose() {
  std::vector<const Observation*> population = ranked();
  if (population.size() < 4 || proposed_count() < population_size) return std::nullopt;
  if (population.size() > population_size) population.resize(population_size);
  const std::vector<Parameter>& parameters = space_.space().parameters;
  const double mutation_rate = 1.0 / static_cast<double>(parameters.size());
  for (int attempt = 0; attempt < attempts; ++attempt) {
    std::vector<int> mother = positions(tournament(population).configuration);
    std::vector<int> father = positions(tournament(population).configuration);
    std::vector<int> child(parameters.size());
    for (std::size_t p = 0; p < parameters.size(); ++p) {
      child[p] = uniform01(random_) < 0.5 ? mother[p] : father[p];
      if (uniform01(random_) < mutation_rate) {
        int size = static_cast<int>(parameters[p].values.size());
        if (uniform01(random_) < 0.5)
          child[p] += uniform01(random_) < 0.5 ? -1 : 1;
        else
          child[p] = static_cast<int>(uniform_index(random_, static_cast<std::size_t>(size)));
      }
    }
    Configuration configuration = from_positions(child);
    if (claim(configuration)) return configuration;
  }
  return std::nullopt;
}

}  // namespace kernlathe
