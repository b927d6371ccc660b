#include "tuner/search/strategy.h"

#include <algorithm>
#include <stdexcept>
#include <cmath>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "tuner/search/annealing.h"
#include "tuner/search/bayesian.h"
#include "tuner/search/differential_evolution.h"
#include "tuner/search/genetic.h"
#include "tuner/search/local_search.h"
#include "tuner/search/permutation.h"
#include "tuner/search/portfolio.h"
#include "tuner/search/surrogate.h"

namespace kernlathe {

Strategy::~Strategy() = default;

namespace {

// Walks positions 0, 1, ... of an order over the valid indices; the strategies differ only in the order.
class IndexOrderStrategy : public Strategy {
 public:
  explicit IndexOrderStrategy(const SpaceEnumerator& space) : space_(space), valid_count_(space.valid_count()) {}

  std::vector<Configuration> ask(std::size_t count) override {
    std::vector<Configuration> proposals;
    proposals.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, valid_count_ - next_position_)));
    while (proposals.size() < count && next_position_ < valid_count_) {
      const std::uint64_t index = index_at(next_position_++);
      if (!told_.empty() && told_.erase(index) > 0) continue;  // its result is known already
      proposals.push_back(space_.at(index));
    }
    return proposals;
  }

  // The order depends on no result; a configuration told before its turn (what a resumed run recorded) is
  // passed over when its turn comes.
  void tell(const Evaluation& evaluation) override {
    if (std::optional<std::uint64_t> index = space_.index_of(evaluation.configuration); index && !proposed(*index))
      told_.insert(*index);
  }

 protected:
  virtual std::uint64_t index_at(std::uint64_t position) const = 0;

  // Whether index was handed out already; only exhaustive order can tell cheaply, and a false "no" costs one
  // entry in told_ until the end of the run.
  virtual bool proposed(std::uint64_t) const { return false; }

  const SpaceEnumerator& space_;
  std::uint64_t valid_count_ = 0;
  std::uint64_t next_position_ = 0;
  std::unordered_set<std::uint64_t> told_;
};

class ExhaustiveStrategy final : public IndexOrderStrategy {
 public:
  using IndexOrderStrategy::IndexOrderStrategy;
  std::string name() const override { return "exhaustive"; }

 private:
  std::uint64_t index_at(std::uint64_t position) const override { return position; }
  bool proposed(std::uint64_t index) const override { return index < next_position_; }
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
  return {"exhaustive", "random",   "local",     "annealing", "genetic", "differential-evolution",
          "bayesian",   "surrogate", "portfolio"};
}

std::string default_strategy_name() { return "portfolio"; }

namespace {

// "portfolio:model_share=0.25,local_learns_from_model=0" -> the portfolio with those settings; only the portfolio
// takes settings.
PortfolioSettings portfolio_settings(std::string_view text, std::string_view full_name) {
  PortfolioSettings settings;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t equals = item.find('=');
    const std::string key(item.substr(0, equals));
    double value = -1;
    if (equals != std::string_view::npos) {
      try {
        std::size_t used = 0;
        const std::string number(item.substr(equals + 1));
        value = std::stod(number, &used);
        if (used != number.size()) value = -1;
      } catch (const std::exception&) {
        value = -1;
      }
    }
    if (key == "model_share" && value >= 0 && value <= 1) {
      settings.model_share = value;
    } else if (key == "local_learns_from_model" && (value == 0 || value == 1)) {
      settings.local_learns_from_model = value == 1;
    } else if (key == "model_first" && value >= 0 && value <= 1e6 && value == std::floor(value)) {
      settings.model_first = static_cast<std::size_t>(value);
    } else if (key == "refit_growth" && value >= 0 && value <= 100) {
      settings.refit_growth = value;
    } else {
      throw InputError(fmt::format("strategy '{}': '{}' is not a setting of the portfolio (model_share=X with X "
                                   "from 0 to 1, local_learns_from_model=0 or 1, model_first=N, refit_growth=X "
                                   "with X from 0 to 100)",
                                   full_name, item));
    }
  }
  return settings;
}

}  // namespace

void check_strategy_name(std::string_view full_name) {
  const std::size_t colon = full_name.find(':');
  const std::string_view name = full_name.substr(0, colon);
  if (colon != std::string_view::npos) {
    if (name != "portfolio")
      throw InputError(fmt::format("strategy '{}': only the portfolio takes settings (portfolio:model_share=X)",
                                   full_name));
    portfolio_settings(full_name.substr(colon + 1), full_name);
    return;
  }
  std::vector<std::string> names = strategy_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string suggestion = expr::closest_match(name, names);
  throw InputError(fmt::format("unknown search strategy '{}'{}; known strategies: {}", name,
                               suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                               fmt::format("{}", fmt::join(names, ", "))));
}

std::unique_ptr<Strategy> make_strategy(std::string_view full_name, const SpaceEnumerator& space, std::uint64_t seed) {
  check_strategy_name(full_name);
  const std::size_t colon = full_name.find(':');
  const std::string_view name = full_name.substr(0, colon);
  if (colon != std::string_view::npos)
    return std::make_unique<PortfolioStrategy>(space, seed, portfolio_settings(full_name.substr(colon + 1), full_name));
  if (name == "exhaustive") return std::make_unique<ExhaustiveStrategy>(space);
  if (name == "random") return std::make_unique<RandomStrategy>(space, seed);
  if (name == "local") return std::make_unique<LocalSearchStrategy>(space, seed);
  if (name == "annealing") return std::make_unique<AnnealingStrategy>(space, seed);
  if (name == "genetic") return std::make_unique<GeneticStrategy>(space, seed);
  if (name == "differential-evolution") return std::make_unique<DifferentialEvolutionStrategy>(space, seed);
  if (name == "bayesian") return std::make_unique<BayesianStrategy>(space, seed);
  if (name == "surrogate") return std::make_unique<SurrogateStrategy>(space, seed);
  if (name == "portfolio") return std::make_unique<PortfolioStrategy>(space, seed);
  throw std::logic_error(fmt::format("strategy '{}' is listed by strategy_names() but not built", name));
}

}  // namespace kernlathe
