#include "tuner/search/portfolio.h"

#include <random>

namespace kernlathe {

PortfolioStrategy::PortfolioStrategy(const SpaceEnumerator& space, std::uint64_t seed, PortfolioSettings settings)
    : space_(space),
      settings_(settings),
      model_(space, seed, SurrogateSettings{settings.refit_growth}),
      // Another stream for the local part, so its random starts are not the model's design draws.
      local_(space, seed * 0x9e3779b97f4a7c15ULL + 1),
      random_(seed * 0xbf58476d1ce4e5b9ULL + 2) {}

std::vector<Configuration> PortfolioStrategy::ask(std::size_t count) {
  std::vector<Configuration> proposals;
  while (proposals.size() < count && proposed_.size() < space_.valid_count()) {
    bool model_first = proposed_.size() < settings_.model_first;
    if (!model_first) {
      model_credit_ += settings_.model_share;
      model_first = model_credit_ >= 1.0;
      if (model_first) model_credit_ -= 1.0;
    }
    // A proposal one part makes may already have come from the other within this batch (neither was told of it
    // yet): ask again, from the other part when the first has nothing new.
    bool found = false;
    for (int attempt = 0; attempt < 8 && !found; ++attempt) {
      Strategy& part = (model_first == (attempt % 2 == 0)) ? static_cast<Strategy&>(model_) : local_;
      std::vector<Configuration> next = part.ask(1);
      if (next.empty()) continue;
      std::optional<std::uint64_t> index = space_.index_of(next.front());
      if (!index || !proposed_.insert(*index).second) continue;
      if (&part == &local_) proposed_by_local_.insert(*index);
      proposals.push_back(std::move(next.front()));
      found = true;
    }
    if (!found) {
      // Neither part had anything new: each proposed what the other, or an earlier batch still being measured,
      // already holds (with several lanes many proposals are out at once, and the parts learn of them only from
      // their results). An empty answer would end the run with configurations left, so one at random instead.
      std::optional<Configuration> unproposed = unproposed_at_random();
      if (!unproposed) break;
      proposals.push_back(std::move(*unproposed));
    }
  }
  return proposals;
}

std::optional<Configuration> PortfolioStrategy::unproposed_at_random() {
  const std::uint64_t count = space_.valid_count();
  if (count == 0) return std::nullopt;
  std::uniform_int_distribution<std::uint64_t> pick(0, count - 1);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::uint64_t index = pick(random_);
    if (proposed_.insert(index).second) return space_.at(index);
  }
  // A space nearly all proposed: the first unproposed one after a random start.
  const std::uint64_t start = pick(random_);
  for (std::uint64_t offset = 0; offset < count; ++offset) {
    const std::uint64_t index = (start + offset) % count;
    if (proposed_.insert(index).second) return space_.at(index);
  }
  return std::nullopt;
}

void PortfolioStrategy::tell(const Evaluation& evaluation) {
  std::optional<std::uint64_t> index = space_.index_of(evaluation.configuration);
  if (index) proposed_.insert(*index);
  model_.tell(evaluation);
  if (settings_.local_learns_from_model || (index && proposed_by_local_.contains(*index))) {
    local_.tell(evaluation);
  } else {
    local_.exclude(evaluation.configuration);
  }
}

}  // namespace kernlathe
