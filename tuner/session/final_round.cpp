#include "tuner/session/final_round.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace kernlathe {

namespace {

// Two-sided 95% quantiles of Student's t for 1 to 10 degrees of freedom; beyond, the normal's 1.96 is within 12%.
double t_quantile_95(std::size_t degrees_of_freedom) {
  static const double quantiles[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228};
  if (degrees_of_freedom == 0) return 0;
  if (degrees_of_freedom <= 10) return quantiles[degrees_of_freedom - 1];
  return 1.96;
}

}  // namespace

FinalFigures summarise_rounds(std::vector<double> round_ms) {
  FinalFigures figures;
  figures.round_ms = std::move(round_ms);
  const std::size_t n = figures.round_ms.size();
  if (n == 0) return figures;
  figures.complete = true;
  figures.mean_ms = std::accumulate(figures.round_ms.begin(), figures.round_ms.end(), 0.0) / static_cast<double>(n);
  double squares = 0;
  for (double value : figures.round_ms) squares += (value - figures.mean_ms) * (value - figures.mean_ms);
  const double half_width = n > 1 ? t_quantile_95(n - 1) * std::sqrt(squares / static_cast<double>(n - 1)) / std::sqrt(static_cast<double>(n)) : 0;
  figures.low_ms = figures.mean_ms - half_width;
  figures.high_ms = figures.mean_ms + half_width;
  return figures;
}

bool faster_beyond_noise(const FinalFigures& a, const FinalFigures& b) {
  return a.complete && b.complete && a.high_ms < b.low_ms;
}

std::vector<FinalFigures> run_final_round(const std::vector<Configuration>& candidates, int rounds,
                                          const std::function<Evaluation(const Configuration&)>& measure,
                                          const std::function<void(int round, std::size_t candidate)>& measured) {
  const std::size_t n = candidates.size();
  std::vector<std::vector<double>> round_ms(n);
  std::vector<std::string> failures(n);
  for (int round = 0; round < rounds && n > 0; ++round) {
    for (std::size_t step = 0; step < n; ++step) {
      const std::size_t index = (static_cast<std::size_t>(round) + step) % n;
      if (!failures[index].empty()) continue;
      Evaluation evaluation = measure(candidates[index]);
      if (evaluation.ok() && evaluation.time.median_ms > 0) {
        round_ms[index].push_back(evaluation.time.median_ms);
      } else {
        failures[index] = fmt::format("round {}: {}{}", round + 1, status_name(evaluation.status),
                                      evaluation.message.empty() ? "" : ": " + evaluation.message);
      }
      if (measured) measured(round, index);
    }
  }
  std::vector<FinalFigures> figures;
  for (std::size_t index = 0; index < n; ++index) {
    FinalFigures summary = summarise_rounds(round_ms[index]);
    if (!failures[index].empty()) {
      summary.complete = false;
      summary.failure = failures[index];
    }
    figures.push_back(std::move(summary));
  }
  return figures;
}

}  // namespace kernlathe
