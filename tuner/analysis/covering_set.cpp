#include "tuner/analysis/covering_set.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace kernlathe {

CoveringSet evaluate_covering_set(const std::vector<std::vector<double>>& fraction, std::vector<std::size_t> columns) {
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  CoveringSet set;
  set.configurations = columns;
  double log_sum = 0;
  bool all_served = !fraction.empty();
  set.worst = fraction.empty() ? 0 : 1e300;
  for (const std::vector<double>& row : fraction) {
    std::size_t best_column = columns.empty() ? 0 : columns.front();
    double best = 0;
    for (std::size_t column : columns) {
      if (row.at(column) > best) {
        best = row[column];
        best_column = column;
      }
    }
    set.served_by.push_back(best_column);
    set.fractions.push_back(best);
    set.worst = std::min(set.worst, best);
    if (best > 0) log_sum += std::log(best);
    else all_served = false;
  }
  set.geometric_mean = all_served ? std::exp(log_sum / static_cast<double>(fraction.size())) : 0;
  return set;
}

namespace {

// Whether a is a better covering set than b (the order choose_covering_set documents).
bool better(const CoveringSet& a, const CoveringSet& b) {
  constexpr double tolerance = 1e-12;
  if (std::fabs(a.geometric_mean - b.geometric_mean) > tolerance) return a.geometric_mean > b.geometric_mean;
  if (std::fabs(a.worst - b.worst) > tolerance) return a.worst > b.worst;
  if (a.configurations.size() != b.configurations.size()) return a.configurations.size() < b.configurations.size();
  return a.configurations < b.configurations;
}

double subsets_up_to(std::size_t n, std::size_t k) {
  double total = 0;
  double choose = 1;  // C(n, size)
  for (std::size_t size = 1; size <= k && size <= n; ++size) {
    choose = choose * static_cast<double>(n - size + 1) / static_cast<double>(size);
    total += choose;
  }
  return total;
}

void search_every_subset(const std::vector<std::vector<double>>& fraction, std::size_t columns, std::size_t size,
                         std::size_t first, std::vector<std::size_t>& current, CoveringSet& best, bool& found) {
  if (current.size() == size) {
    CoveringSet candidate = evaluate_covering_set(fraction, current);
    if (!found || better(candidate, best)) {
      best = std::move(candidate);
      found = true;
    }
    return;
  }
  for (std::size_t column = first; column + (size - current.size()) <= columns; ++column) {
    current.push_back(column);
    search_every_subset(fraction, columns, size, column + 1, current, best, found);
    current.pop_back();
  }
}

}  // namespace

CoveringSet choose_covering_set(const std::vector<std::vector<double>>& fraction, std::size_t max_configurations) {
  if (max_configurations == 0) throw std::invalid_argument("a covering set needs at least one configuration");
  const std::size_t columns = fraction.empty() ? 0 : fraction.front().size();
  for (const std::vector<double>& row : fraction)
    if (row.size() != columns) throw std::invalid_argument("the fraction matrix has rows of different lengths");
  if (columns == 0) return evaluate_covering_set(fraction, {});
  const std::size_t largest = std::min(max_configurations, columns);
  CoveringSet best;
  bool found = false;
  if (subsets_up_to(columns, largest) <= 200000) {
    std::vector<std::size_t> current;
    for (std::size_t size = 1; size <= largest; ++size) search_every_subset(fraction, columns, size, 0, current, best, found);
    return best;
  }
  // Greedy: add the column that improves the set most, then swap single columns while a swap improves it, then drop
  // the columns that serve nothing.
  std::vector<std::size_t> chosen;
  best = evaluate_covering_set(fraction, chosen);
  while (chosen.size() < largest) {
    std::optional<CoveringSet> step;
    for (std::size_t column = 0; column < columns; ++column) {
      if (std::find(chosen.begin(), chosen.end(), column) != chosen.end()) continue;
      std::vector<std::size_t> trial = chosen;
      trial.push_back(column);
      CoveringSet candidate = evaluate_covering_set(fraction, trial);
      if (!step || better(candidate, *step)) step = std::move(candidate);
    }
    if (!step || !better(*step, best)) break;
    best = *step;
    chosen = best.configurations;
  }
  for (bool improved = true; improved;) {
    improved = false;
    for (std::size_t position = 0; position < chosen.size() && !improved; ++position) {
      for (std::size_t column = 0; column < columns && !improved; ++column) {
        if (std::find(chosen.begin(), chosen.end(), column) != chosen.end()) continue;
        std::vector<std::size_t> trial = chosen;
        trial[position] = column;
        CoveringSet candidate = evaluate_covering_set(fraction, trial);
        if (better(candidate, best)) {
          best = std::move(candidate);
          chosen = best.configurations;
          improved = true;
        }
      }
    }
  }
  // A column added early may serve nothing once later ones are in: drop those (a smaller set wins a tie).
  for (bool dropped = true; dropped && chosen.size() > 1;) {
    dropped = false;
    for (std::size_t position = 0; position < chosen.size() && !dropped; ++position) {
      std::vector<std::size_t> trial = chosen;
      trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(position));
      CoveringSet candidate = evaluate_covering_set(fraction, trial);
      if (better(candidate, best)) {
        best = std::move(candidate);
        chosen = best.configurations;
        dropped = true;
      }
    }
  }
  return best;
}

}  // namespace kernlathe
