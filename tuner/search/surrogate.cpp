#include "tuner/search/surrogate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tuner {
namespace {

double knob(const char* name, double fallback) { const char* v = std::getenv(name); return v ? std::atof(v) : fallback; }
const std::size_t initial_samples = static_cast<std::size_t>(knob("SURR_INIT", 10));
const double kappa = knob("SURR_KAPPA", 0);
const std::size_t polish_every = static_cast<std::size_t>(knob("SURR_POLISH", 0));
const bool walk_mode = knob("SURR_WALK", 0) > 0;
// Spaces up to this many valid configurations are scored whole at every fit (a few milliseconds); larger ones
// through a sample.
constexpr std::uint64_t whole_space_limit = 20000;
constexpr std::size_t sampled_candidates = 2000;
constexpr std::size_t polished_centres = 5;
// Proposals kept from one fit: a batch larger than this is topped up by a refit on the same data.
constexpr std::size_t queue_limit = 64;

const ForestOptions forest_options{static_cast<int>(knob("SURR_TREES", 32)), static_cast<std::size_t>(knob("SURR_LEAF", 2)), 16, knob("SURR_FRACTION", 0.5), knob("SURR_BOOT", 1) > 0};

bool is_power_of_two(std::int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

std::optional<double> numeric(const Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return static_cast<double>(*integer);
  if (const auto* real = std::get_if<double>(&value)) return *real;
  if (const auto* boolean = std::get_if<bool>(&value)) return *boolean ? 1.0 : 0.0;
  return std::nullopt;
}

bool all_integers(const Parameter& parameter) {
  return std::all_of(parameter.values.begin(), parameter.values.end(),
                     [](const Value& value) { return std::holds_alternative<std::int64_t>(value); });
}

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double expected_improvement(double incumbent, const ForestPrediction& prediction) {
  const double improvement = incumbent - prediction.mean;
  if (prediction.spread < 1e-12) return std::max(improvement, 0.0);
  const double z = improvement / prediction.spread;
  return improvement * normal_cdf(z) + prediction.spread * normal_pdf(z);
}

}  // namespace

SurrogateStrategy::SurrogateStrategy(const SpaceEnumerator& space, std::uint64_t seed) : GuidedStrategy(space, seed) {
  const std::vector<Parameter>& parameters = space.space().parameters;
  std::vector<std::size_t> integer_parameters;
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    if (parameters[p].values.size() < 2) continue;
    varying_parameters_.push_back(p);
    if (!all_integers(parameters[p])) continue;
    integer_parameters.push_back(p);
    // Tile and block sizes that are powers of two often behave apart from their neighbours (48 vs 32 and 64),
    // which no threshold on the value itself can express.
    const std::size_t powers = static_cast<std::size_t>(
        std::count_if(parameters[p].values.begin(), parameters[p].values.end(),
                      [](const Value& value) { return is_power_of_two(std::get<std::int64_t>(value)); }));
    if (powers > 0 && powers < parameters[p].values.size()) power_of_two_flagged_.push_back(p);
  }
  // Threads per block, elements per thread and per block are products of two parameters.
  for (std::size_t i = 0; i < integer_parameters.size(); ++i)
    for (std::size_t j = i + 1; j < integer_parameters.size(); ++j)
      products_.push_back({integer_parameters[i], integer_parameters[j]});
  derived_features_ = !space.space().derived.empty();
  score_whole_space_ = valid_count() <= whole_space_limit;
  if (score_whole_space_) feature_cache_.resize(static_cast<std::size_t>(valid_count()));
}

std::vector<double> SurrogateStrategy::features(const Configuration& configuration) const {
  const std::vector<Parameter>& parameters = space_.space().parameters;
  std::vector<double> row;
  row.reserve(varying_parameters_.size() + power_of_two_flagged_.size() + products_.size());
  std::vector<int> position = positions(configuration);
  for (std::size_t p : varying_parameters_) {
    std::optional<double> value = numeric(configuration[p]);
    // Enumeration values have no order of their own; their declared position is the best guess at one.
    row.push_back(value && parameters[p].type != ParameterType::enumeration ? *value
                                                                            : static_cast<double>(position[p]));
  }
  for (std::size_t p : power_of_two_flagged_)
    row.push_back(is_power_of_two(std::get<std::int64_t>(configuration[p])) ? 1.0 : 0.0);
  for (const Product& product : products_)
    row.push_back(static_cast<double>(std::get<std::int64_t>(configuration[product.first])) *
                  static_cast<double>(std::get<std::int64_t>(configuration[product.second])));
  if (derived_features_)
    for (const auto& [name, value] : space_.derived_values(configuration)) row.push_back(numeric(value).value_or(0.0));
  return row;
}

const std::vector<double>& SurrogateStrategy::cached_features(std::uint64_t index) {
  std::vector<double>& row = feature_cache_[static_cast<std::size_t>(index)];
  if (row.empty()) row = features(space_.at(index));
  return row;
}

std::optional<Configuration> SurrogateStrategy::propose() {
  if (proposed_count() < initial_samples || ranked().size() < 2) return std::nullopt;
  if (polish_every > 0 && ++proposals_ % polish_every == 0 && walker_) {
    bool adjacent = uniform01(random_) < 0.7;
    std::vector<Configuration> moves = unproposed_neighbours(walker_->configuration, adjacent);
    if (moves.empty()) moves = unproposed_neighbours(walker_->configuration, !adjacent);
    if (!walk_mode) moves.clear();
    if (moves.empty())
      for (const Observation* centre : ranked()) {
        if (!walk_mode) {
          moves = unproposed_neighbours(centre->configuration, true);
          if (!moves.empty()) break;
        }
        moves = unproposed_neighbours(centre->configuration, false);
        if (!moves.empty()) {
          walker_ = *centre;
          break;
        }
      }
    if (!moves.empty()) {
      Configuration move = moves[uniform_index(random_, moves.size())];
      claim(move);
      return move;
    }
  }
  while (true) {
    if (queue_.empty() || stale_) fill_queue();
    if (queue_.empty()) return std::nullopt;
    Configuration next = space_.at(queue_.back());
    queue_.pop_back();
    if (claim(next)) return next;
  }
}

void SurrogateStrategy::observed(const Observation& observation) {
  stale_ = true;
  temperature_ = std::max(0.002, temperature_ * 0.97);
  if (!observation.time_ms) return;
  if (!walker_) {
    walker_ = observation;
    return;
  }
  double slowdown = *observation.time_ms / *walker_->time_ms - 1.0;
  if (slowdown <= 0 || uniform01(random_) < std::exp(-slowdown / temperature_)) walker_ = observation;
}

void SurrogateStrategy::fill_queue() {
  stale_ = false;
  queue_.clear();
  std::vector<const Observation*> successes = ranked();
  const double fastest = std::log(*successes.front()->time_ms);
  const double slowest = std::log(*successes.back()->time_ms);
  const double failure_value = slowest + 0.25 * std::max(slowest - fastest, 0.1);

  std::vector<std::vector<double>> samples;
  std::vector<double> targets;
  for (const Observation& observation : observations()) {
    samples.push_back(score_whole_space_ ? cached_features(observation.index) : features(observation.configuration));
    targets.push_back(observation.time_ms ? std::log(*observation.time_ms) : failure_value);
  }
  forest_.fit(samples, targets, forest_options, random_);

  std::vector<std::uint64_t> candidates;
  if (score_whole_space_) {
    for (std::uint64_t index = 0; index < valid_count(); ++index)
      if (!proposed_index(index)) candidates.push_back(index);
  } else {
    for (std::size_t c = 0; c < polished_centres && c < successes.size(); ++c)
      for (const Configuration& neighbour : unproposed_neighbours(successes[c]->configuration, false))
        candidates.push_back(*space_.index_of(neighbour));
    for (std::size_t c = 0; c < sampled_candidates; ++c) {
      std::uint64_t index = random_() % valid_count();
      if (!proposed_index(index)) candidates.push_back(index);
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  }

  std::vector<std::pair<double, std::uint64_t>> scored;
  scored.reserve(candidates.size());
  for (std::uint64_t index : candidates) {
    const ForestPrediction prediction =
        forest_.predict(score_whole_space_ ? cached_features(index) : features(space_.at(index)));
    scored.emplace_back(kappa > 0 ? -(prediction.mean - kappa * prediction.spread) : expected_improvement(fastest, prediction), index);
  }
  // Highest expected improvement first; ties by index so the order depends on nothing but the seed.
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (scored.size() > queue_limit) scored.resize(queue_limit);
  for (auto entry = scored.rbegin(); entry != scored.rend(); ++entry) queue_.push_back(entry->second);
}

}  // namespace tuner
