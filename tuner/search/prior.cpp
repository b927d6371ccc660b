#include "tuner/search/prior.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tuner/record/csv_record.h"
#include "tuner/search/portfolio.h"

namespace kernlathe {

std::vector<RankedTransfer> rank_transfers(const std::vector<PriorSource>& sources, const SpaceEnumerator& space) {
  struct Sum {
    Configuration configuration;
    double log_ratio_sum = 0;
    std::size_t sources = 0;
  };
  std::map<std::string, Sum> sums;  // by configuration key of the canonical form
  for (const PriorSource& source : sources) {
    double best = 0;
    double slowest = 0;
    for (const Evaluation& evaluation : source.evaluations) {
      const double value = search_value(evaluation);
      if (!evaluation.ok() || value <= 0) continue;
      if (best == 0 || value < best) best = value;
      slowest = std::max(slowest, value);
    }
    if (best == 0) continue;
    // One figure per configuration of this source: its fastest verified result, else a failure.
    std::map<std::string, std::pair<Configuration, double>> ratios;
    for (const Evaluation& evaluation : source.evaluations) {
      if (evaluation.configuration.size() != space.space().parameters.size()) continue;
      Configuration canonical = space.canonical(evaluation.configuration);
      if (!space.is_valid(canonical)) continue;
      const double value = search_value(evaluation);
      const double ratio = evaluation.ok() && value > 0 ? value / best : slowest / best;
      const std::string key = configuration_key(canonical);
      auto [found, inserted] = ratios.try_emplace(key, canonical, ratio);
      if (!inserted) found->second.second = std::min(found->second.second, ratio);
    }
    for (auto& [key, entry] : ratios) {
      Sum& sum = sums[key];
      sum.configuration = entry.first;
      sum.log_ratio_sum += std::log(entry.second);
      ++sum.sources;
    }
  }
  std::vector<RankedTransfer> ranked;
  ranked.reserve(sums.size());
  for (auto& [key, sum] : sums)
    ranked.push_back({std::move(sum.configuration), std::exp(sum.log_ratio_sum / static_cast<double>(sum.sources)),
                      sum.sources});
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedTransfer& a, const RankedTransfer& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.sources > b.sources;
  });
  return ranked;
}

PriorStrategy::PriorStrategy(const SpaceEnumerator& space, std::vector<Configuration> transfers,
                             std::unique_ptr<Strategy> inner, PriorSettings settings)
    : space_(space), transfers_(std::move(transfers)), inner_(std::move(inner)), settings_(settings) {
  if (transfers_.size() > settings_.transfers) transfers_.resize(settings_.transfers);
}

std::optional<Configuration> PriorStrategy::next_transfer() {
  while (trusted_ && next_transfer_ < transfers_.size()) {
    const Configuration& configuration = transfers_[next_transfer_++];
    std::optional<std::uint64_t> index = space_.index_of(configuration);
    if (!index || !proposed_.insert(*index).second) continue;
    transferred_.insert(*index);
    return configuration;
  }
  return std::nullopt;
}

std::optional<Configuration> PriorStrategy::next_own() {
  // The inner strategy may propose what the prior already did (it is told only once the result is in): ask again.
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::vector<Configuration> next = inner_->ask(1);
    if (next.empty()) return std::nullopt;
    std::optional<std::uint64_t> index = space_.index_of(next.front());
    if (index && proposed_.insert(*index).second) return std::move(next.front());
  }
  return std::nullopt;
}

std::vector<Configuration> PriorStrategy::ask(std::size_t count) {
  std::vector<Configuration> proposals;
  while (proposals.size() < count) {
    // The lead, then the two sides in turn while the prior is trusted and has transfers left.
    const bool prior_turn = proposals_ < settings_.lead || (proposals_ - settings_.lead) % 2 == 0;
    std::optional<Configuration> next = prior_turn ? next_transfer() : next_own();
    if (!next) next = prior_turn ? next_own() : next_transfer();
    if (!next) break;
    ++proposals_;
    proposals.push_back(std::move(*next));
  }
  return proposals;
}

void PriorStrategy::tell(const Evaluation& evaluation) {
  inner_->tell(evaluation);
  std::optional<std::uint64_t> index = space_.index_of(evaluation.configuration);
  if (!index) return;
  proposed_.insert(*index);
  const double value = search_value(evaluation);
  if (evaluation.ok() && value > 0) (transferred_.contains(*index) ? transfer_values_ : own_values_).push_back(value);
  judge();
}

// Once judge_after verified results of each side are in: the prior is dropped when its best transfer is slower than
// the median of the inner strategy's own results (it misleads), and from then on as soon as the inner strategy's own
// best is faster than the best transfer (the search has overtaken it). A prior dropped stays dropped.
void PriorStrategy::judge() {
  if (!trusted_ || transfer_values_.size() < settings_.judge_after || own_values_.size() < settings_.judge_after) return;
  const double best_transfer = *std::min_element(transfer_values_.begin(), transfer_values_.end());
  const double best_own = *std::min_element(own_values_.begin(), own_values_.end());
  if (best_own < best_transfer) trusted_ = false;
  if (judged_) return;
  judged_ = true;
  std::vector<double> own = own_values_;
  std::nth_element(own.begin(), own.begin() + own.size() / 2, own.end());
  if (best_transfer > own[own.size() / 2]) trusted_ = false;
}

std::unique_ptr<Strategy> make_strategy_with_prior(std::string_view name, const SpaceEnumerator& space,
                                                   std::uint64_t seed, std::vector<Configuration> transfers,
                                                   PriorSettings settings) {
  if (transfers.empty()) return make_strategy(name, space, seed);
  std::unique_ptr<Strategy> inner;
  if (name == "portfolio") {
    PortfolioSettings portfolio;
    portfolio.model_share = settings.model_share;
    inner = std::make_unique<PortfolioStrategy>(space, seed, portfolio);
  } else {
    inner = make_strategy(name, space, seed);
  }
  return std::make_unique<PriorStrategy>(space, std::move(transfers), std::move(inner), settings);
}

}  // namespace kernlathe
