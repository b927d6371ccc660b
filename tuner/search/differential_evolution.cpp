#include "tuner/search/differential_evolution.h"

#include <cmath>

namespace kernlathe {
namespace {

constexpr std::size_t population_size = 16;
constexpr double differential_weight = 0.8;
constexpr double crossover_rate = 0.7;
constexpr int attempts = 40;

}  // namespace

DifferentialEvolutionStrategy::DifferentialEvolutionStrategy(const SpaceEnumerator& space, std::uint64_t seed)
    : GuidedStrategy(space, seed) {}

std::optional<Configuration> DifferentialEvolutionStrategy::propose() {
  std::vector<const Observation*> population = ranked();
  if (population.size() < 4 || proposed_count() < population_size) return std::nullopt;
  if (population.size() > population_size) population.resize(population_size);
  const std::size_t dimensions = space_.space().parameters.size();
  const Observation* target = population[uniform_index(random_, population.size())];
  std::vector<int> target_positions = positions(target->configuration);
  for (int attempt = 0; attempt < attempts; ++attempt) {
    std::vector<int> a = positions(population[uniform_index(random_, population.size())]->configuration);
    std::vector<int> b = positions(population[uniform_index(random_, population.size())]->configuration);
    std::vector<int> c = positions(population[uniform_index(random_, population.size())]->configuration);
    std::size_t forced = uniform_index(random_, dimensions);
    std::vector<int> trial = target_positions;
    for (std::size_t p = 0; p < dimensions; ++p) {
      if (p != forced && uniform01(random_) >= crossover_rate) continue;
      // A tiny jitter breaks rounding ties at random instead of always towards the same side.
      double mutant = a[p] + differential_weight * (b[p] - c[p]) + (uniform01(random_) - 0.5) * 0.5;
      trial[p] = static_cast<int>(std::lround(mutant));
    }
    Configuration configuration = from_positions(trial);
    if (claim(configuration)) return configuration;
  }
  std::vector<Configuration> neighbours = unproposed_neighbours(target->configuration, false);
  if (neighbours.empty()) return std::nullopt;
  Configuration neighbour = neighbours[uniform_index(random_, neighbours.size())];
  claim(neighbour);
  return neighbour;
}

}  // namespace kernlathe
