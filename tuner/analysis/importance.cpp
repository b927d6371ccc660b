#include "tuner/analysis/importance.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "tuner/search/benchmark.h"

namespace kernlathe {
namespace {

// What the main effects and pairs leave of a forest's variance is taken over the whole product of values up to
// this many combinations, and over this many random combinations beyond.
constexpr std::size_t variance_points = 2048;
// Fewer valid configurations than this leave a forest of a handful of leaves: no importance is reported.
constexpr std::size_t minimum_samples = 8;

// A leaf's extent in one feature: the domain values with index in [first, last).
struct Extent {
  std::size_t first = 0;
  std::size_t last = 0;
};

Extent extent_in(const std::vector<double>& domain, double lower, double upper) {
  const auto first = std::upper_bound(domain.begin(), domain.end(), lower) - domain.begin();
  const auto last = std::upper_bound(domain.begin(), domain.end(), upper) - domain.begin();
  return {static_cast<std::size_t>(first), static_cast<std::size_t>(std::max(first, last))};
}

Estimate estimate_of(std::vector<double> values, double interval) {
  if (values.empty()) return {};
  const double tail = (1 - interval) / 2;
  return {std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size()),
          quantile_of(values, tail), quantile_of(values, 1 - tail)};
}

}  // namespace

VarianceDecomposition decompose_forest(const RegressionForest& forest, const std::vector<std::vector<double>>& domains,
                                       std::uint64_t seed) {
  const std::size_t features = domains.size();
  VarianceDecomposition result;
  result.main.assign(features, 0);
  result.pair.assign(features, std::vector<double>(features, 0));
  if (forest.tree_count() == 0 || features == 0) return result;

  // Difference arrays: a leaf adds its weighted value to a range of values (main effects) or a rectangle of value
  // pairs (interactions); prefix sums afterwards give every marginal mean at once.
  std::vector<std::vector<double>> main(features);
  std::vector<std::vector<std::vector<double>>> pairs(features, std::vector<std::vector<double>>(features));
  for (std::size_t i = 0; i < features; ++i) {
    main[i].assign(domains[i].size() + 1, 0);
    for (std::size_t j = i + 1; j < features; ++j) pairs[i][j].assign((domains[i].size() + 1) * (domains[j].size() + 1), 0);
  }
  double mean = 0;
  std::vector<Extent> extents(features);
  std::vector<double> shares(features);
  for (std::size_t tree = 0; tree < forest.tree_count(); ++tree) {
    for (const RegressionForest::LeafBox& leaf : forest.leaf_boxes(tree)) {
      double mass = 1;  // the share of the product the box holds
      for (std::size_t j = 0; j < features; ++j) {
        extents[j] = extent_in(domains[j], leaf.lower[j], leaf.upper[j]);
        shares[j] = static_cast<double>(extents[j].last - extents[j].first) / static_cast<double>(domains[j].size());
        mass *= shares[j];
      }
      if (mass <= 0) continue;  // a box between domain values holds no combination
      const double weighted = leaf.value * mass;
      mean += weighted;
      for (std::size_t i = 0; i < features; ++i) {
        const double along_i = weighted / shares[i];
        main[i][extents[i].first] += along_i;
        main[i][extents[i].last] -= along_i;
        for (std::size_t j = i + 1; j < features; ++j) {
          const double along_ij = along_i / shares[j];
          std::vector<double>& grid = pairs[i][j];
          const std::size_t columns = domains[j].size() + 1;
          grid[extents[i].first * columns + extents[j].first] += along_ij;
          grid[extents[i].first * columns + extents[j].last] -= along_ij;
          grid[extents[i].last * columns + extents[j].first] -= along_ij;
          grid[extents[i].last * columns + extents[j].last] += along_ij;
        }
      }
    }
  }
  const double trees = static_cast<double>(forest.tree_count());
  mean /= trees;
  result.mean = mean;

  std::vector<std::vector<double>> main_effect(features);
  double explained = 0;
  for (std::size_t i = 0; i < features; ++i) {
    double running = 0, sum_of_squares = 0;
    for (std::size_t a = 0; a < domains[i].size(); ++a) {
      running += main[i][a];
      const double effect = running / trees - mean;
      main_effect[i].push_back(effect);
      sum_of_squares += effect * effect;
    }
    result.main[i] = sum_of_squares / static_cast<double>(domains[i].size());
    explained += result.main[i];
  }
  // pairs[i][j] becomes the two-way effect beyond the main effects, one value per pair of values.
  for (std::size_t i = 0; i < features; ++i) {
    for (std::size_t j = i + 1; j < features; ++j) {
      const std::size_t rows = domains[i].size(), columns = domains[j].size();
      std::vector<double>& grid = pairs[i][j];
      // Two-dimensional prefix sums in place: grid[a][b] becomes the sum over a' <= a, b' <= b.
      for (std::size_t a = 0; a < rows; ++a)
        for (std::size_t b = 0; b < columns; ++b) {
          double& cell = grid[a * (columns + 1) + b];
          if (a > 0) cell += grid[(a - 1) * (columns + 1) + b];
          if (b > 0) cell += grid[a * (columns + 1) + b - 1];
          if (a > 0 && b > 0) cell -= grid[(a - 1) * (columns + 1) + b - 1];
        }
      std::vector<double> effects(rows * columns);
      double sum_of_squares = 0;
      for (std::size_t a = 0; a < rows; ++a)
        for (std::size_t b = 0; b < columns; ++b) {
          const double effect = grid[a * (columns + 1) + b] / trees - main_effect[i][a] - main_effect[j][b] - mean;
          effects[a * columns + b] = effect;
          sum_of_squares += effect * effect;
        }
      grid = std::move(effects);
      result.pair[i][j] = sum_of_squares / static_cast<double>(rows * columns);
      explained += result.pair[i][j];
    }
  }

  // The components of a functional ANOVA are orthogonal, so the variance of f is the sum of the main and pair
  // variances, exact above, plus the mean square of what is left (the effects of three and more parameters
  // together). Only that remainder is estimated: over the whole product when it is small, else over random
  // combinations. So no share exceeds 1 and sampling noise touches only the (usually small) remainder.
  double combinations = 1;
  for (const auto& domain : domains) combinations *= static_cast<double>(domain.size());
  const bool whole = combinations <= static_cast<double>(variance_points);
  const std::size_t count = whole ? static_cast<std::size_t>(combinations) : variance_points;
  std::mt19937_64 random(seed);
  std::vector<std::size_t> digits(features);
  std::vector<double> point(features);
  double remainder = 0;
  for (std::size_t index = 0; index < count; ++index) {
    std::size_t rest = index;  // mixed-radix digits when the whole product is walked
    for (std::size_t j = 0; j < features; ++j) {
      const std::size_t size = domains[j].size();
      digits[j] = whole ? rest % size : static_cast<std::size_t>(random() % size);
      rest /= size;
      point[j] = domains[j][digits[j]];
    }
    double left = forest.predict(point).mean - mean;
    for (std::size_t i = 0; i < features; ++i) {
      left -= main_effect[i][digits[i]];
      for (std::size_t j = i + 1; j < features; ++j) left -= pairs[i][j][digits[i] * domains[j].size() + digits[j]];
    }
    remainder += left * left;
  }
  result.variance = explained + remainder / static_cast<double>(count);

  // As shares of the variance of the function; a flat forest has nothing to share out.
  const double variance = result.variance;
  for (std::size_t i = 0; i < features; ++i) {
    result.main[i] = variance > 0 ? result.main[i] / variance : 0;
    for (std::size_t j = i + 1; j < features; ++j) result.pair[i][j] = variance > 0 ? result.pair[i][j] / variance : 0;
  }
  return result;
}

ImportanceResult analyse_importance(const std::vector<std::string>& names,
                                    const std::vector<std::vector<double>>& features,
                                    const std::vector<double>& times_ms, const ImportanceOptions& options) {
  ImportanceResult result;
  result.samples = features.size();
  result.interval = options.interval;
  if (features.size() != times_ms.size()) throw TunerError("analyse_importance: one time per sample is needed");

  // Parameters with one value among the samples explain nothing; they are named and left out of the model.
  std::vector<std::size_t> kept;
  std::vector<std::vector<double>> domains;
  for (std::size_t j = 0; j < names.size(); ++j) {
    std::vector<double> domain;
    for (const auto& sample : features) domain.push_back(sample[j]);
    std::sort(domain.begin(), domain.end());
    domain.erase(std::unique(domain.begin(), domain.end()), domain.end());
    if (domain.size() < 2) {
      result.constant_parameters.push_back(names[j]);
      continue;
    }
    kept.push_back(j);
    domains.push_back(std::move(domain));
  }
  if (features.size() < minimum_samples) {
    result.not_computed = fmt::format("{} valid configurations; at least {} are needed", features.size(), minimum_samples);
    return result;
  }
  if (kept.empty()) {
    result.not_computed = "no parameter takes more than one value among the valid configurations";
    return result;
  }

  std::vector<std::vector<double>> samples;
  samples.reserve(features.size());
  std::vector<double> targets;
  targets.reserve(features.size());
  for (std::size_t i = 0; i < features.size(); ++i) {
    std::vector<double> row;
    for (std::size_t j : kept) row.push_back(features[i][j]);
    samples.push_back(std::move(row));
    targets.push_back(std::log(times_ms[i]));
  }

  const int resamples = std::max(1, options.resamples);
  result.resamples = resamples;
  std::vector<VarianceDecomposition> decompositions(static_cast<std::size_t>(resamples));
  ForestOptions forest_options;
  forest_options.trees = options.trees;
  forest_options.minimum_leaf_size = 1;
  std::atomic<int> next{0};
  // Each resample draws from its own generator, seeded by (seed, resample): the figures do not depend on which
  // thread fitted which resample.
  auto work = [&] {
    for (int r = next++; r < resamples; r = next++) {
      std::seed_seq seeds{static_cast<std::uint32_t>(options.seed), static_cast<std::uint32_t>(options.seed >> 32),
                          static_cast<std::uint32_t>(r)};
      std::mt19937_64 random(seeds);
      std::vector<std::vector<double>> drawn_samples(samples.size());
      std::vector<double> drawn_targets(samples.size());
      for (std::size_t i = 0; i < samples.size(); ++i) {
        const std::size_t pick = static_cast<std::size_t>(random() % samples.size());
        drawn_samples[i] = samples[pick];
        drawn_targets[i] = targets[pick];
      }
      RegressionForest forest;
      forest.fit(drawn_samples, drawn_targets, forest_options, random);
      decompositions[static_cast<std::size_t>(r)] = decompose_forest(forest, domains, random());
    }
  };
  unsigned threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(resamples));
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < threads; ++t) workers.emplace_back(work);
  work();
  for (std::thread& worker : workers) worker.join();

  const std::size_t count = kept.size();
  std::vector<double> explained;
  for (const VarianceDecomposition& decomposition : decompositions) {
    double total = 0;
    for (std::size_t i = 0; i < count; ++i) {
      total += decomposition.main[i];
      for (std::size_t j = i + 1; j < count; ++j) total += decomposition.pair[i][j];
    }
    explained.push_back(total);
  }
  result.explained = estimate_of(explained, options.interval);
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<double> main, with_interactions;
    for (const VarianceDecomposition& decomposition : decompositions) {
      double total = decomposition.main[i];
      for (std::size_t j = 0; j < count; ++j)
        if (j != i) total += decomposition.pair[std::min(i, j)][std::max(i, j)];
      main.push_back(decomposition.main[i]);
      with_interactions.push_back(total);
    }
    result.parameters.push_back(
        {names[kept[i]], estimate_of(main, options.interval), estimate_of(with_interactions, options.interval)});
  }
  std::stable_sort(result.parameters.begin(), result.parameters.end(),
                   [](const auto& a, const auto& b) { return a.main_effect.mean > b.main_effect.mean; });
  std::vector<InteractionImportance> interactions;
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t j = i + 1; j < count; ++j) {
      std::vector<double> shares;
      for (const VarianceDecomposition& decomposition : decompositions) shares.push_back(decomposition.pair[i][j]);
      interactions.push_back({names[kept[i]], names[kept[j]], estimate_of(shares, options.interval)});
    }
  std::stable_sort(interactions.begin(), interactions.end(),
                   [](const auto& a, const auto& b) { return a.share.mean > b.share.mean; });
  result.interactions = std::move(interactions);
  return result;
}

ImportanceResult analyse_importance(const Recording& recording, const ImportanceOptions& options) {
  std::vector<std::string> names;
  for (const Parameter& parameter : recording.parameters) names.push_back(parameter.name);
  std::vector<std::vector<double>> features;
  std::vector<double> times;
  for (const Evaluation& evaluation : recording.evaluations) {
    if (!is_valid_measurement(evaluation)) continue;
    std::vector<double> row;
    for (std::size_t p = 0; p < recording.parameters.size(); ++p)
      row.push_back(numeric_value(recording.parameters[p], evaluation.configuration[p]));
    features.push_back(std::move(row));
    times.push_back(evaluation.time.median_ms);
  }
  return analyse_importance(names, features, times, options);
}

}  // namespace kernlathe
