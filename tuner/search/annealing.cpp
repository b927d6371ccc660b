#include "tuner/search/annealing.h"

#include <cmath>

namespace kernlathe {
namespace {

constexpr std::size_t initial_samples = 4;
constexpr double cooling = 0.97;
constexpr double minimum_temperature = 0.002;

}  // namespace

AnnealingStrategy::AnnealingStrategy(const SpaceEnumerator& space, std::uint64_t seed) : GuidedStrategy(space, seed) {}

std::optional<Configuration> AnnealingStrategy::propose() {
  if (!current_ || proposed_count() < initial_samples) return std::nullopt;
  // Mostly small steps; sometimes any value of one parameter, to cross a valley in a single move.
  bool adjacent = uniform01(random_) < 0.7;
  std::vector<Configuration> moves = unproposed_neighbours(current_->configuration, adjacent);
  if (moves.empty()) moves = unproposed_neighbours(current_->configuration, !adjacent);
  if (moves.empty()) {
    // Spent neighbourhood: continue from the fastest configuration that still has unexplored neighbours.
    for (const Observation* candidate : ranked()) {
      moves = unproposed_neighbours(candidate->configuration, false);
      if (!moves.empty()) {
        current_ = *candidate;
        break;
      }
    }
  }
  if (moves.empty()) return std::nullopt;
  Configuration move = moves[uniform_index(random_, moves.size())];
  claim(move);
  return move;
}

void AnnealingStrategy::observed(const Observation& observation) {
  temperature_ = std::max(minimum_temperature, temperature_ * cooling);
  if (!observation.time_ms) return;
  if (!current_ || !current_->time_ms) {
    current_ = observation;
    return;
  }
  double slowdown = *observation.time_ms / *current_->time_ms - 1.0;
  if (slowdown <= 0 || uniform01(random_) < std::exp(-slowdown / temperature_)) current_ = observation;
}

}  // namespace kernlathe
