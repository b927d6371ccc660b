#include "tuner/cache/covering_set.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace kernlathe {

namespace {

// Each problem's own best over every measured configuration.
std::vector<double> best_per_problem(const CoveringMatrix& matrix) {
  std::vector<double> best(matrix.problems.size(), std::numeric_limits<double>::infinity());
  for (std::size_t p = 0; p < matrix.problems.size(); ++p)
    for (const std::optional<double>& time : matrix.time_ms[p])
      if (time) best[p] = std::min(best[p], *time);
  return best;
}

// How well `chosen` serves the problems in `rows`: the problems covered, then the sum of log(best / served).
struct Score {
  std::size_t covered = 0;
  double log_sum = 0;
  bool operator<(const Score& other) const {
    return covered != other.covered ? covered < other.covered : log_sum < other.log_sum - 1e-12;
  }
};

Score score_of(const CoveringMatrix& matrix, const std::vector<double>& best, const std::vector<std::size_t>& rows,
               const std::vector<std::size_t>& chosen) {
  Score score;
  for (std::size_t p : rows) {
    double served = std::numeric_limits<double>::infinity();
    for (std::size_t c : chosen)
      if (const std::optional<double>& time = matrix.time_ms[p][c]) served = std::min(served, *time);
    if (std::isfinite(served)) {
      ++score.covered;
      score.log_sum += std::log(best[p] / served);
    }
  }
  return score;
}

// Greedy additions, then improving swaps, over the problems in `rows`.
std::vector<std::size_t> choose_on(const CoveringMatrix& matrix, const std::vector<double>& best,
                                   const std::vector<std::size_t>& rows, std::size_t max_configurations) {
  const std::size_t columns = matrix.configurations.size();
  std::vector<std::size_t> chosen;
  Score current = score_of(matrix, best, rows, chosen);
  while (chosen.size() < max_configurations) {
    std::optional<std::size_t> pick;
    Score pick_score = current;
    for (std::size_t c = 0; c < columns; ++c) {
      if (std::find(chosen.begin(), chosen.end(), c) != chosen.end()) continue;
      std::vector<std::size_t> trial = chosen;
      trial.push_back(c);
      const Score trial_score = score_of(matrix, best, rows, trial);
      if (pick_score < trial_score) {
        pick = c;
        pick_score = trial_score;
      }
    }
    if (!pick) break;  // nothing improves: every problem already gets its best
    chosen.push_back(*pick);
    current = pick_score;
  }
  for (bool improved = true; improved;) {
    improved = false;
    for (std::size_t slot = 0; slot < chosen.size(); ++slot) {
      for (std::size_t c = 0; c < columns; ++c) {
        if (std::find(chosen.begin(), chosen.end(), c) != chosen.end()) continue;
        std::vector<std::size_t> trial = chosen;
        trial[slot] = c;
        const Score trial_score = score_of(matrix, best, rows, trial);
        if (current < trial_score) {
          chosen = std::move(trial);
          current = trial_score;
          improved = true;
        }
      }
    }
  }
  // Drop what the others make redundant (a set that reached every problem's best before it was full).
  for (std::size_t slot = chosen.size(); slot-- > 0;) {
    std::vector<std::size_t> trial = chosen;
    trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(slot));
    if (!(score_of(matrix, best, rows, trial) < current)) chosen = std::move(trial);
  }
  return chosen;
}

// Fills serves, fraction and the summaries of `set` for problem p from `chosen`.
void serve(const CoveringMatrix& matrix, const std::vector<double>& best, std::size_t p,
           const std::vector<std::size_t>& chosen, CoveringSet& set) {
  std::optional<std::size_t> by;
  for (std::size_t c : chosen)
    if (const std::optional<double>& time = matrix.time_ms[p][c])
      if (!by || *time < *matrix.time_ms[p][*by]) by = c;
  set.serves[p] = by;
  set.fraction[p] = by ? best[p] / *matrix.time_ms[p][*by] : 0;
}

void summarise(CoveringSet& set) {
  double log_sum = 0;
  std::size_t covered = 0;
  set.worst = 0;
  set.uncovered = 0;
  for (double fraction : set.fraction) {
    if (fraction <= 0) {
      ++set.uncovered;
      continue;
    }
    log_sum += std::log(fraction);
    set.worst = covered == 0 ? fraction : std::min(set.worst, fraction);
    ++covered;
  }
  set.geometric_mean = covered > 0 ? std::exp(log_sum / static_cast<double>(covered)) : 0;
}

}  // namespace

void CoveringMatrix::check() const {
  if (time_ms.size() != problems.size())
    throw std::invalid_argument(fmt::format("covering matrix: {} rows of times for {} problems", time_ms.size(), problems.size()));
  for (std::size_t p = 0; p < problems.size(); ++p) {
    if (time_ms[p].size() != configurations.size())
      throw std::invalid_argument(fmt::format("covering matrix: problem {} has {} times for {} configurations", problems[p],
                                              time_ms[p].size(), configurations.size()));
    for (const std::optional<double>& time : time_ms[p])
      if (time && !(*time > 0))
        throw std::invalid_argument(fmt::format("covering matrix: problem {} has a time of {} ms", problems[p], *time));
  }
}

CoveringSet choose_covering_set(const CoveringMatrix& matrix, std::size_t max_configurations) {
  matrix.check();
  if (max_configurations == 0) throw std::invalid_argument("a covering set needs at least one configuration");
  const std::vector<double> best = best_per_problem(matrix);
  std::vector<std::size_t> rows(matrix.problems.size());
  for (std::size_t p = 0; p < rows.size(); ++p) rows[p] = p;
  CoveringSet set;
  set.chosen = choose_on(matrix, best, rows, max_configurations);
  set.serves.resize(rows.size());
  set.fraction.resize(rows.size());
  for (std::size_t p : rows) serve(matrix, best, p, set.chosen, set);
  summarise(set);
  return set;
}

CoveringSet held_out_covering(const CoveringMatrix& matrix, std::size_t max_configurations) {
  matrix.check();
  if (max_configurations == 0) throw std::invalid_argument("a covering set needs at least one configuration");
  const std::vector<double> best = best_per_problem(matrix);
  CoveringSet set;
  set.serves.resize(matrix.problems.size());
  set.fraction.resize(matrix.problems.size());
  for (std::size_t held = 0; held < matrix.problems.size(); ++held) {
    std::vector<std::size_t> rows;
    for (std::size_t p = 0; p < matrix.problems.size(); ++p)
      if (p != held) rows.push_back(p);
    const std::vector<std::size_t> chosen = choose_on(matrix, best, rows, max_configurations);
    serve(matrix, best, held, chosen, set);
  }
  summarise(set);
  return set;
}

}  // namespace kernlathe
