#include "tuner/search/surrogate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace kernlathe {
namespace {

// Ten design points: at least one per parameter of the convolution and dedispersion spaces (7 and 8 varying
// parameters), few enough that the model steers most of a 50-evaluation budget. 6 and 16 did no better on the
// convolution landscapes (tune replay, 25 seeds).
constexpr std::size_t initial_samples = 10;
// Random draws the farthest of which becomes the next design point: enough that a large gap is nearly always
// among them, cheap against one evaluation even where decoding a configuration is slow.
constexpr std::size_t design_draws = 64;
// Spaces up to this many valid configurations are scored whole for each proposal (one tree: well under a
// millisecond for 4,362 configurations); larger ones through a sample.
constexpr std::uint64_t whole_space_limit = 20000;
constexpr std::size_t sampled_candidates = 2000;
constexpr std::size_t polished_centres = 5;
// Observations beyond this many (the fastest kept, failures first to go) are left out of a fit, which costs
// O(n log n) per feature to sort, then O(n) per feature, tree and node level.
constexpr std::size_t model_limit = 500;
// 16 trees: half the fitting time of 32, which did no better; leaves of one sample (see surrogate.h). On the
// convolution landscapes leaves of one with the space-filling design took the median evaluations to within 5%
// from 61, 87, 86 (leaves of two, random design) to 32, 60, 57; leaves of one alone gave 56 and 63 on A4000 and
// MI250X, the design alone 49, 84, 93.
constexpr ForestOptions forest_options{16, 1, 16, 0.5, true};

// What the model sees of a parameter that does not matter to a configuration (a `when:` condition is false), and
// of the features computed from it: below every value a feature takes, so one cut separates "irrelevant" from
// every real value and the forest never learns from the default such a parameter is held at.
constexpr double irrelevant_feature = -1e30;

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

}  // namespace

SurrogateStrategy::SurrogateStrategy(const SpaceEnumerator& space, std::uint64_t seed, SurrogateSettings settings)
    : GuidedStrategy(space, seed), settings_(settings) {
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
  // A derived value is hidden where every conditional parameter it reads is irrelevant (the wgmma shared bytes of a
  // simt configuration); one that also reads a relevant one (THREADS of every path) is kept.
  for (std::size_t d = 0; derived_features_ && d < space.space().derived.size(); ++d) {
    std::vector<std::size_t> reads;
    for (int p : space.parameters_read_by_derived(d))
      if (!parameters[static_cast<std::size_t>(p)].relevant_when.empty()) reads.push_back(static_cast<std::size_t>(p));
    derived_conditional_reads_.push_back(std::move(reads));
  }
  score_whole_space_ = valid_count() <= whole_space_limit;
  if (score_whole_space_) feature_cache_.resize(static_cast<std::size_t>(valid_count()));
}

std::vector<double> SurrogateStrategy::features(const Configuration& configuration) const {
  const std::vector<Parameter>& parameters = space_.space().parameters;
  std::vector<double> row;
  row.reserve(varying_parameters_.size() + power_of_two_flagged_.size() + products_.size());
  std::vector<int> position = positions(configuration);
  const std::vector<bool> relevant = space_.relevance(configuration);
  for (std::size_t p : varying_parameters_) {
    std::optional<double> value = numeric(configuration[p]);
    // Enumeration values have no order of their own; their declared position is the best guess at one.
    row.push_back(!relevant[p] ? irrelevant_feature
                  : value && parameters[p].type != ParameterType::enumeration ? *value
                                                                              : static_cast<double>(position[p]));
  }
  for (std::size_t p : power_of_two_flagged_)
    row.push_back(!relevant[p] ? irrelevant_feature
                               : is_power_of_two(std::get<std::int64_t>(configuration[p])) ? 1.0 : 0.0);
  for (const Product& product : products_)
    row.push_back(!relevant[product.first] || !relevant[product.second]
                      ? irrelevant_feature
                      : static_cast<double>(std::get<std::int64_t>(configuration[product.first])) *
                            static_cast<double>(std::get<std::int64_t>(configuration[product.second])));
  if (derived_features_) {
    std::size_t d = 0;
    for (const auto& [name, value] : space_.derived_values(configuration)) {
      const std::vector<std::size_t>& reads = derived_conditional_reads_[d++];
      const bool hidden = !reads.empty() && std::none_of(reads.begin(), reads.end(), [&](std::size_t p) { return relevant[p]; });
      row.push_back(hidden ? irrelevant_feature : numeric(value).value_or(0.0));
    }
  }
  return row;
}

const std::vector<double>& SurrogateStrategy::cached_features(std::uint64_t index) {
  std::vector<double>& row = feature_cache_[static_cast<std::size_t>(index)];
  if (row.empty()) row = features(space_.at(index));
  return row;
}

bool SurrogateStrategy::needs_fit() const {
  const std::size_t told = observations().size();
  if (fitted_observations_ == 0) return true;
  return told > fitted_observations_ &&
         static_cast<double>(told) >= static_cast<double>(fitted_observations_) * (1.0 + settings_.refit_growth);
}

void SurrogateStrategy::fit() {
  const auto started = std::chrono::steady_clock::now();
  fitted_observations_ = observations().size();
  std::vector<const Observation*> successes = ranked();
  const double fastest = std::log(*successes.front()->time_ms);
  const double slowest = std::log(*successes.back()->time_ms);
  const double failure_value = slowest + 0.25 * std::max(slowest - fastest, 0.1);

  // In the order the results came (bootstrap draws depend on it); past model_limit the fastest are kept.
  std::vector<std::pair<const Observation*, double>> data;
  for (const Observation& observation : observations())
    data.emplace_back(&observation, observation.time_ms ? std::log(*observation.time_ms) : failure_value);
  if (data.size() > model_limit) {
    std::stable_sort(data.begin(), data.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    data.resize(model_limit);
  }
  std::vector<std::vector<double>> samples;
  std::vector<double> targets;
  for (const auto& [observation, target] : data) {
    samples.push_back(score_whole_space_ ? cached_features(observation->index) : features(observation->configuration));
    targets.push_back(target);
  }
  forest_.fit(samples, targets, forest_options, random_);
  ++updates_.count;
  updates_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

std::vector<std::uint64_t> SurrogateStrategy::candidates() {
  std::vector<std::uint64_t> indices;
  if (score_whole_space_) {
    for (std::uint64_t index = 0; index < valid_count(); ++index)
      if (!proposed_index(index)) indices.push_back(index);
    return indices;
  }
  std::vector<const Observation*> successes = ranked();
  for (std::size_t c = 0; c < polished_centres && c < successes.size(); ++c)
    for (const Configuration& neighbour : unproposed_neighbours(successes[c]->configuration, false))
      indices.push_back(*space_.index_of(neighbour));
  for (std::size_t c = 0; c < sampled_candidates; ++c) {
    std::uint64_t index = random_() % valid_count();
    if (!proposed_index(index)) indices.push_back(index);
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  return indices;
}

std::optional<Configuration> SurrogateStrategy::propose() {
  if (proposed_count() < initial_samples) return space_filling_proposal();
  if (ranked().size() < 2) return std::nullopt;
  if (needs_fit()) fit();
  const std::size_t tree = uniform_index(random_, forest_.tree_count());
  std::optional<std::uint64_t> chosen;
  double chosen_prediction = 0;
  // Lowest predicted log time under the drawn tree; the lowest index wins a tie, so only the seed decides.
  for (std::uint64_t index : candidates()) {
    // Two calls rather than one with a conditional operator, which would copy the cached row into a temporary.
    const double prediction = score_whole_space_ ? forest_.predict_with_tree(cached_features(index), tree)
                                                 : forest_.predict_with_tree(features(space_.at(index)), tree);
    if (!chosen || prediction < chosen_prediction) {
      chosen = index;
      chosen_prediction = prediction;
    }
  }
  if (!chosen) return std::nullopt;
  Configuration configuration = space_.at(*chosen);
  claim(configuration);
  return configuration;
}

std::optional<Configuration> SurrogateStrategy::space_filling_proposal() {
  // Distances to everything told (a resumed run) and to every design proposal, results or not (one told twice
  // leaves the nearest distance as it is).
  std::vector<std::vector<double>> placed;
  for (const Observation& observation : observations()) placed.push_back(encode(observation.configuration));
  for (const Configuration& configuration : design_) placed.push_back(encode(configuration));
  std::optional<std::uint64_t> chosen;
  double chosen_distance = -1;
  for (std::size_t draw = 0; draw < design_draws; ++draw) {
    const std::uint64_t index = random_() % valid_count();
    if (proposed_index(index)) continue;
    const std::vector<double> point = encode(space_.at(index));
    double nearest = std::numeric_limits<double>::infinity();
    for (const std::vector<double>& other : placed) {
      double squared = 0;
      for (std::size_t p = 0; p < point.size(); ++p) squared += (point[p] - other[p]) * (point[p] - other[p]);
      nearest = std::min(nearest, squared);
    }
    // The first draw wins a tie, so only the seed decides.
    if (nearest > chosen_distance) {
      chosen = index;
      chosen_distance = nearest;
    }
  }
  if (!chosen) return std::nullopt;  // every draw hit a proposed configuration: a random one instead
  Configuration configuration = space_.at(*chosen);
  claim(configuration);
  design_.push_back(configuration);
  return configuration;
}

}  // namespace kernlathe
