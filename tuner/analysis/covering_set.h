#pragma once
// A covering set (issue 32): at most K configurations of a kernel and architecture that cover the tuned problems,
// so an application ships a few configurations instead of one per problem. Chosen from a matrix of measured
// fractions: fraction[p][c] = (problem p's best time) / (configuration c's time at p), 1 for the problem's own best,
// 0 where c failed or was not measured at p. Each problem is then served by the chosen configuration with the largest
// fraction there, and the set is judged by the geometric mean of those fractions and by the worst of them.

#include <cstddef>
#include <vector>

namespace kernlathe {

struct CoveringSet {
  std::vector<std::size_t> configurations;  // chosen columns, ascending
  std::vector<std::size_t> served_by;       // per problem: the chosen column serving it
  std::vector<double> fractions;            // per problem: its fraction under the set
  double geometric_mean = 0;                // of fractions (0 when a problem has none above 0)
  double worst = 0;
};

// The fractions of a given set of columns over the problems (the set's figures as above). Columns must be valid.
CoveringSet evaluate_covering_set(const std::vector<std::vector<double>>& fraction, std::vector<std::size_t> columns);

// At most max_configurations columns maximising the geometric mean, ties to the larger worst fraction, then to the
// smaller set and the lower column numbers. Exact (every subset of max_configurations or fewer columns) while the
// subsets number at most 200,000; beyond, greedy additions, then single swaps until none improves, then columns dropped that serve nothing. Rows must
// have equal lengths; max_configurations >= 1.
CoveringSet choose_covering_set(const std::vector<std::vector<double>>& fraction, std::size_t max_configurations);

}  // namespace kernlathe
