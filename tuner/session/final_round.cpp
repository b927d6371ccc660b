#include "tuner/session/final_round.h"

#include <algorithm>

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

std::pair<double, double> mean_and_half_width(const std::vector<double>& values) {
  const std::size_t n = values.size();
  if (n == 0) return {0, 0};
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(n);
  double squares = 0;
  for (double value : values) squares += (value - mean) * (value - mean);
  const double half_width =
      n > 1 ? t_quantile_95(n - 1) * std::sqrt(squares / static_cast<double>(n - 1)) / std::sqrt(static_cast<double>(n)) : 0;
  return {mean, half_width};
}

FinalFigures summarise_rounds(std::vector<double> round_ms) {
  FinalFigures figures;
  figures.round_ms = std::move(round_ms);
  if (figures.round_ms.empty()) return figures;
  figures.complete = true;
  const auto [mean, half_width] = mean_and_half_width(figures.round_ms);
  figures.mean_ms = mean;
  figures.low_ms = mean - half_width;
  figures.high_ms = mean + half_width;
  return figures;
}

bool faster_beyond_noise(const FinalFigures& a, const FinalFigures& b) {
  return a.complete && b.complete && a.high_ms < b.low_ms;
}

std::vector<FinalFigures> run_final_round(std::size_t candidates, int rounds,
                                          const std::function<Evaluation(std::size_t candidate, bool with_energy)>& measure,
                                          const std::function<void(int round, std::size_t candidate)>& measured,
                                          int energy_rounds) {
  const int first_energy_round = rounds - std::clamp(energy_rounds, 0, rounds);
  const std::size_t n = candidates;
  std::vector<std::vector<double>> round_ms(n);
  std::vector<std::vector<double>> round_energy_mj(n);
  std::vector<std::string> failures(n);
  for (int round = 0; round < rounds && n > 0; ++round) {
    for (std::size_t step = 0; step < n; ++step) {
      const std::size_t index = (static_cast<std::size_t>(round) + step) % n;
      if (!failures[index].empty()) continue;
      Evaluation evaluation = measure(index, round >= first_energy_round);
      if (evaluation.ok() && evaluation.time.median_ms > 0) {
        round_ms[index].push_back(evaluation.time.median_ms);
        if (evaluation.energy_mj > 0) round_energy_mj[index].push_back(evaluation.energy_mj);
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
    const std::size_t energy_asked =
        round_ms[index].size() > static_cast<std::size_t>(first_energy_round)
            ? round_ms[index].size() - static_cast<std::size_t>(first_energy_round)
            : 0;
    if (energy_asked > 0 && round_energy_mj[index].size() == energy_asked) {
      const auto [mean, half_width] = mean_and_half_width(round_energy_mj[index]);
      summary.round_energy_mj = std::move(round_energy_mj[index]);
      summary.energy_mj = mean;
      summary.energy_low_mj = mean - half_width;
      summary.energy_high_mj = mean + half_width;
    }
    if (!failures[index].empty()) {
      summary.complete = false;
      summary.failure = failures[index];
    }
    figures.push_back(std::move(summary));
  }
  return figures;
}

}  // namespace kernlathe
