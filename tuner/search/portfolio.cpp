#include "tuner/search/portfolio.h"

namespace kernlathe {

PortfolioStrategy::PortfolioStrategy(const SpaceEnumerator& space, std::uint64_t seed, PortfolioSettings settings)
    : space_(space),
      settings_(settings),
      model_(space, seed, SurrogateSettings{settings.refit_growth}),
      // Another stream for the local part, so its random starts are not the model's design draws.
      local_(space, seed * 0x9e3779b97f4a7c15ULL + 1) {}

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
    if (!found) break;
  }
  return proposals;
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
