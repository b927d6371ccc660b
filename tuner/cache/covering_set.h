#pragma once
// A covering set: at most K configurations of a kernel that serve every tuned problem well, so that an application
// ships a handful of cubins rather than one per shape. The input is a matrix of measured times, problem by
// configuration (a configuration not measured on a problem is missing there, never guessed); each problem is then
// served by the fastest chosen configuration measured on it, and the runtime dispatches a problem nobody tuned to
// the nearest tuned problem's configuration (its ladder's nearest-problem rung, in log space).
//
// The choice maximises the geometric mean over problems of best / served time (1 = the problem's own best): greedy
// additions, then swaps of one chosen configuration for another while that improves it. Problems no chosen
// configuration was measured on count as uncovered, and the choice first covers as many problems as it can.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kernlathe {

struct CoveringMatrix {
  std::vector<std::string> problems;        // row labels
  std::vector<std::string> configurations;  // column labels
  std::vector<std::vector<std::optional<double>>> time_ms;  // [problem][configuration]; nullopt: not measured there

  void check() const;  // std::invalid_argument when the shape is inconsistent or a time is not positive
};

struct CoveringSet {
  std::vector<std::size_t> chosen;       // configuration indices, in the order they were added
  // Per problem: the chosen configuration that serves it (nullopt: uncovered), and best / its time (0 uncovered).
  std::vector<std::optional<std::size_t>> serves;
  std::vector<double> fraction;
  std::size_t uncovered = 0;
  double geometric_mean = 0;             // over covered problems
  double worst = 0;                      // over covered problems
};

// At most max_configurations (>= 1) columns; fewer when fewer suffice to reach every problem's own best.
CoveringSet choose_covering_set(const CoveringMatrix& matrix, std::size_t max_configurations);

// How a set chosen without each problem serves that problem: for every problem p, the set is chosen on the other
// problems and p is served by its fastest chosen configuration measured on it. The fractions of a problem left
// uncovered that way are 0 and counted in `uncovered`.
CoveringSet held_out_covering(const CoveringMatrix& matrix, std::size_t max_configurations);

}  // namespace kernlathe
