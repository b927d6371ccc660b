#include "tuner/search/guided_strategy.h"

#include <algorithm>

namespace kernlathe {

double uniform01(std::mt19937_64& random) { return static_cast<double>(random() >> 11) * 0x1.0p-53; }

std::size_t uniform_index(std::mt19937_64& random, std::size_t size) {
  return static_cast<std::size_t>(random() % size);
}

GuidedStrategy::GuidedStrategy(const SpaceEnumerator& space, std::uint64_t seed)
    : space_(space), random_(seed ^ 0x5eed5eed5eed5eedULL), valid_count_(space.valid_count()) {}

std::vector<Configuration> GuidedStrategy::ask(std::size_t count) {
  std::vector<Configuration> proposals;
  while (proposals.size() < count && proposed_.size() < valid_count_) {
    std::optional<Configuration> next = propose();
    if (!next) next = claim_random();
    if (!next) break;
    proposals.push_back(std::move(*next));
  }
  return proposals;
}

void GuidedStrategy::tell(const Evaluation& evaluation) {
  std::optional<std::uint64_t> index = space_.index_of(evaluation.configuration);
  if (!index) return;  // not ours: a strategy only learns about configurations of its space
  Observation observation{evaluation.configuration, *index, std::nullopt};
  // time_ms holds whatever the run minimises (tuner/record/evaluation.h search_value): the median time, or the
  // energy objective's figure; strategies only compare and take logarithms of it.
  if (evaluation.ok() && search_value(evaluation) > 0) observation.time_ms = search_value(evaluation);
  proposed_.insert(*index);  // a result for a configuration proposed elsewhere (a resumed run) is not asked again
  observations_.push_back(std::move(observation));
  observed(observations_.back());
}

void GuidedStrategy::exclude(const Configuration& configuration) {
  if (std::optional<std::uint64_t> index = space_.index_of(configuration)) proposed_.insert(*index);
}

bool GuidedStrategy::claim(const Configuration& configuration) {
  std::optional<std::uint64_t> index = space_.index_of(configuration);
  if (!index) return false;
  return proposed_.insert(*index).second;
}

bool GuidedStrategy::proposed(const Configuration& configuration) const {
  std::optional<std::uint64_t> index = space_.index_of(configuration);
  return !index || proposed_.contains(*index);
}

std::optional<Configuration> GuidedStrategy::claim_random() {
  if (proposed_.size() >= valid_count_) return std::nullopt;
  std::uint64_t index = random_() % valid_count_;
  // Rejection works while most of the space is unproposed; a scan finishes the job when it is nearly spent.
  for (int attempt = 0; attempt < 32 && proposed_.contains(index); ++attempt) index = random_() % valid_count_;
  while (proposed_.contains(index)) index = (index + 1) % valid_count_;
  proposed_.insert(index);
  return space_.at(index);
}

std::vector<Configuration> GuidedStrategy::unproposed_neighbours(const Configuration& configuration,
                                                                 bool adjacent_only) const {
  std::vector<Configuration> neighbours = space_.neighbours(configuration, adjacent_only);
  std::erase_if(neighbours, [&](const Configuration& neighbour) { return proposed(neighbour); });
  return neighbours;
}

std::vector<int> GuidedStrategy::positions(const Configuration& configuration) const {
  const std::vector<Parameter>& parameters = space_.space().parameters;
  std::vector<int> result(parameters.size(), 0);
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    const std::vector<Value>& values = parameters[p].values;
    for (std::size_t v = 0; v < values.size(); ++v)
      if (expr::operator_equal(values[v], configuration[p])) {
        result[p] = static_cast<int>(v);
        break;
      }
  }
  return result;
}

std::vector<double> GuidedStrategy::encode(const Configuration& configuration) const {
  const std::vector<Parameter>& parameters = space_.space().parameters;
  std::vector<int> position = positions(configuration);
  std::vector<double> encoded(parameters.size(), 0.0);
  for (std::size_t p = 0; p < parameters.size(); ++p)
    if (parameters[p].values.size() > 1)
      encoded[p] = static_cast<double>(position[p]) / static_cast<double>(parameters[p].values.size() - 1);
  return encoded;
}

Configuration GuidedStrategy::from_positions(const std::vector<int>& position) const {
  const std::vector<Parameter>& parameters = space_.space().parameters;
  Configuration configuration;
  configuration.reserve(parameters.size());
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    int last = static_cast<int>(parameters[p].values.size()) - 1;
    configuration.push_back(parameters[p].values[static_cast<std::size_t>(std::clamp(position[p], 0, last))]);
  }
  // A vector method moves irrelevant parameters too; what it proposes is the configuration they stand for.
  return space_.canonical(std::move(configuration));
}

std::vector<const Observation*> GuidedStrategy::ranked() const {
  std::vector<const Observation*> successes;
  for (const Observation& observation : observations_)
    if (observation.time_ms) successes.push_back(&observation);
  // Ties broken by index so the order, and with it the search, depends on nothing but the seed.
  std::sort(successes.begin(), successes.end(), [](const Observation* a, const Observation* b) {
    return *a->time_ms != *b->time_ms ? *a->time_ms < *b->time_ms : a->index < b->index;
  });
  return successes;
}

}  // namespace kernlathe
