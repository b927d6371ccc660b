#include "tuner/search/transfer_benchmark.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kernlathe {

std::vector<double> best_over_optimum_curve(Strategy& strategy, const ReplaySource& source, std::uint64_t budget) {
  const double infinity = std::numeric_limits<double>::infinity();
  std::vector<double> curve;
  curve.reserve(budget);
  double best = infinity;
  while (curve.size() < budget) {
    std::vector<Configuration> next = strategy.ask(1);
    if (next.empty()) break;
    const Evaluation evaluation = source.evaluate(next.front());
    strategy.tell(evaluation);
    if (evaluation.ok() && search_value(evaluation) > 0) best = std::min(best, search_value(evaluation));
    curve.push_back(best / source.optimum_ms());
  }
  const double last = curve.empty() ? infinity : curve.back();
  curve.resize(budget, last);
  return curve;
}

double geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::infinity();
  double log_sum = 0;
  for (double value : values) {
    if (!std::isfinite(value) || value <= 0) return std::numeric_limits<double>::infinity();
    log_sum += std::log(value);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

namespace {

std::pair<double, double> mean_and_variance_of_logs(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += std::log(value);
  const double mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (double value : values) squares += (std::log(value) - mean) * (std::log(value) - mean);
  return {mean, values.size() > 1 ? squares / static_cast<double>(values.size() - 1) : 0.0};
}

}  // namespace

bool worse_beyond_noise(const std::vector<double>& with_prior, const std::vector<double>& without_prior) {
  if (with_prior.empty() || without_prior.empty()) return false;
  const double with_mean = geometric_mean(with_prior);
  const double without_mean = geometric_mean(without_prior);
  if (!std::isfinite(with_mean)) return std::isfinite(without_mean);
  if (!std::isfinite(without_mean)) return false;
  const auto [with_log, with_variance] = mean_and_variance_of_logs(with_prior);
  const auto [without_log, without_variance] = mean_and_variance_of_logs(without_prior);
  const double standard_error = std::sqrt(with_variance / static_cast<double>(with_prior.size()) +
                                          without_variance / static_cast<double>(without_prior.size()));
  const double difference = with_log - without_log;
  return difference > 2 * standard_error && difference > std::log(1.01);
}

std::vector<TransferCase> run_transfer_benchmark(const SpaceEnumerator& space,
                                                 const std::vector<TransferLandscape>& landscapes,
                                                 const std::string& strategy, int seeds,
                                                 const std::vector<std::uint64_t>& budgets,
                                                 const PriorSettings& settings, int first_seed) {
  const std::uint64_t largest = budgets.empty() ? 0 : *std::max_element(budgets.begin(), budgets.end());
  std::vector<TransferCase> cases;
  for (std::size_t target = 0; target < landscapes.size(); ++target) {
    const ReplaySource source(landscapes[target].evaluations, space);
    std::vector<PriorSource> prior;
    for (std::size_t other = 0; other < landscapes.size(); ++other)
      if (other != target) prior.push_back({landscapes[other].device, landscapes[other].evaluations});
    std::vector<Configuration> transfers;
    for (RankedTransfer& transfer : rank_transfers(prior, space)) transfers.push_back(std::move(transfer.configuration));

    TransferCase result;
    result.target = landscapes[target].device;
    result.prior_sources = prior.size();
    result.with_prior.assign(budgets.size(), {});
    result.without_prior.assign(budgets.size(), {});
    result.top_transfer_over_optimum = std::numeric_limits<double>::infinity();
    if (!transfers.empty()) {
      const Evaluation top = source.evaluate(transfers.front());
      if (top.ok() && search_value(top) > 0) result.top_transfer_over_optimum = search_value(top) / source.optimum_ms();
    }
    for (int seed = first_seed; seed < first_seed + seeds; ++seed) {
      std::unique_ptr<Strategy> plain = make_strategy(strategy, space, static_cast<std::uint64_t>(seed));
      std::unique_ptr<Strategy> guided =
          make_strategy_with_prior(strategy, space, static_cast<std::uint64_t>(seed), transfers, settings);
      const std::vector<double> plain_curve = best_over_optimum_curve(*plain, source, largest);
      const std::vector<double> guided_curve = best_over_optimum_curve(*guided, source, largest);
      for (std::size_t index = 0; index < budgets.size(); ++index) {
        result.without_prior[index].push_back(plain_curve[budgets[index] - 1]);
        result.with_prior[index].push_back(guided_curve[budgets[index] - 1]);
      }
    }
    cases.push_back(std::move(result));
  }
  return cases;
}

}  // namespace kernlathe
