#include "tuner/search/bayesian.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

namespace kernlathe {
namespace {

constexpr std::size_t initial_samples = 10;
constexpr std::size_t random_candidates = 200;
constexpr std::size_t polished_centres = 3;
// Observations beyond this many (the fastest kept) are dropped from the model: O(n^3) per refit.
constexpr std::size_t model_limit = 150;
// Results between refits: a refit costs O(n^3), and a few results barely move the model.
constexpr std::size_t refit_interval = 4;
constexpr double noise_variance = 1e-3;
// In units of the [0, 1] position scale of every parameter. Chosen by marginal likelihood per refit, the length
// scale collapsed to the shortest candidate and the search did worse than random on all three convolution
// landscapes; a fixed, fairly smooth prior did far better (tune replay, 25 seeds).
constexpr double length_scale = 0.35;

double squared_distance(const Eigen::RowVectorXd& a, const Eigen::RowVectorXd& b) { return (a - b).squaredNorm(); }

Eigen::MatrixXd kernel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, double length_scale) {
  Eigen::MatrixXd result(a.rows(), b.rows());
  const double scale = -0.5 / (length_scale * length_scale);
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < b.rows(); ++j) result(i, j) = std::exp(scale * squared_distance(a.row(i), b.row(j)));
  return result;
}

struct Model {
  Eigen::MatrixXd inputs;
  Eigen::LLT<Eigen::MatrixXd> factor;
  Eigen::VectorXd weights;
  double length_scale = 0.3;
  bool ok = false;
};

Model fit(const Eigen::MatrixXd& inputs, const Eigen::VectorXd& targets, double length_scale) {
  Model model;
  model.inputs = inputs;
  model.length_scale = length_scale;
  Eigen::MatrixXd covariance = kernel(inputs, inputs, length_scale);
  covariance.diagonal().array() += noise_variance;
  model.factor.compute(covariance);
  if (model.factor.info() != Eigen::Success) return model;
  model.weights = model.factor.solve(targets);
  model.ok = true;
  return model;
}

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

BayesianStrategy::BayesianStrategy(const SpaceEnumerator& space, std::uint64_t seed) : GuidedStrategy(space, seed) {}

void BayesianStrategy::observed(const Observation&) {
  if (++results_since_fit_ >= refit_interval) queue_.clear();
}

std::optional<Configuration> BayesianStrategy::propose() {
  if (proposed_count() < initial_samples || ranked().size() < 2) return std::nullopt;
  while (true) {
    if (queue_.empty()) fill_queue();
    if (queue_.empty()) return std::nullopt;
    Configuration next = std::move(queue_.back());
    queue_.pop_back();
    if (claim(next)) return next;
  }
}

void BayesianStrategy::fill_queue() {
  // Training data: log time, failures at the slowest log time seen plus a margin.
  std::vector<const Observation*> successes = ranked();
  std::vector<std::pair<const Observation*, double>> data;
  const double slowest = std::log(*successes.back()->time_ms);
  const double fastest = std::log(*successes.front()->time_ms);
  const double failure_value = slowest + 0.25 * std::max(slowest - fastest, 0.1);
  for (const Observation* observation : successes) data.emplace_back(observation, std::log(*observation->time_ms));
  for (const Observation& observation : observations())
    if (!observation.time_ms) data.emplace_back(&observation, failure_value);
  if (data.size() > model_limit) {
    std::stable_sort(data.begin(), data.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    data.resize(model_limit);
  }
  const std::size_t dimensions = space_.space().parameters.size();
  Eigen::MatrixXd inputs(static_cast<Eigen::Index>(data.size()), static_cast<Eigen::Index>(dimensions));
  Eigen::VectorXd targets(static_cast<Eigen::Index>(data.size()));
  for (std::size_t i = 0; i < data.size(); ++i) {
    std::vector<double> encoded = encode(data[i].first->configuration);
    for (std::size_t p = 0; p < dimensions; ++p)
      inputs(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(p)) = encoded[p];
    targets(static_cast<Eigen::Index>(i)) = data[i].second;
  }
  const double mean = targets.mean();
  const double spread = std::max(std::sqrt((targets.array() - mean).square().mean()), 1e-9);
  Eigen::VectorXd standardised = (targets.array() - mean) / spread;

  const Model model = fit(inputs, standardised, length_scale);
  if (!model.ok) return;

  std::vector<Configuration> candidates;
  for (std::size_t c = 0; c < polished_centres && c < successes.size(); ++c)
    for (Configuration& neighbour : unproposed_neighbours(successes[c]->configuration, false))
      candidates.push_back(std::move(neighbour));
  for (std::size_t c = 0; c < random_candidates; ++c) {
    Configuration candidate = space_.at(random_() % valid_count());
    if (!proposed(candidate)) candidates.push_back(std::move(candidate));
  }
  if (candidates.empty()) return;

  Eigen::MatrixXd points(static_cast<Eigen::Index>(candidates.size()), static_cast<Eigen::Index>(dimensions));
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    std::vector<double> encoded = encode(candidates[i]);
    for (std::size_t p = 0; p < dimensions; ++p)
      points(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(p)) = encoded[p];
  }
  const Eigen::MatrixXd cross = kernel(model.inputs, points, model.length_scale);  // n x m
  const Eigen::VectorXd predicted_mean = cross.transpose() * model.weights;
  const Eigen::MatrixXd solved = model.factor.matrixL().solve(cross);
  const Eigen::VectorXd variance = (1.0 + noise_variance - solved.colwise().squaredNorm().array()).max(1e-12);
  const double incumbent = standardised.minCoeff();

  std::vector<std::pair<double, std::size_t>> scored;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    double sigma = std::sqrt(variance(static_cast<Eigen::Index>(i)));
    double improvement = incumbent - predicted_mean(static_cast<Eigen::Index>(i));
    double z = improvement / sigma;
    scored.emplace_back(improvement * normal_cdf(z) + sigma * normal_pdf(z), i);
  }
  // Highest expected improvement last (popped first); ties by candidate order keep it deterministic.
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  queue_.clear();
  results_since_fit_ = 0;
  for (const auto& [score, i] : scored) queue_.push_back(candidates[i]);
}

}  // namespace kernlathe
