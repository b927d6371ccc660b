#pragma once
// Which parameters matter: a functional ANOVA of log time (Hutter, Hoos and Leyton-Brown's fANOVA) on the
// project's random forest (tuner/search/regression_forest.h), with bootstrap intervals.
//
// A forest is fitted to log(time) of the valid configurations. Seen as a function f of the parameters, it is
// decomposed over the product of the values each parameter takes among those configurations, every combination
// weighted alike:
//   main effect of P        f_P(a)    = mean of f over everything but P, at P = a, minus the overall mean
//   interaction of P and Q  f_PQ(a,b) = mean of f at P = a, Q = b, minus f_P(a), f_Q(b) and the overall mean
// and a parameter's importance is the variance of its main effect as a share of the variance of f; a pair's is the
// variance of its two-way effect beyond the two main effects, as the same share. The means are exact: every leaf
// of a tree is a box, and the mean of a tree over a product of value sets is a sum over its leaves weighted by the
// share of each parameter's values the box holds. The components are orthogonal, so the variance of f is the sum
// of these variances plus that of the remainder (effects of three or more parameters together); only the remainder
// is estimated, over the whole product when it has at most 2048 combinations and over 2048 combinations drawn from
// it otherwise. Shares therefore never add up to more than 1.
//
// Uncertainty: the valid configurations are resampled with replacement and a forest fitted to each resample; a
// figure is reported as its mean over the resamples with the central interval (90% by default) of its values.
//
// Limits worth knowing: where constraints exclude part of the product, the forest's values there are
// extrapolated (a tree's box extends to combinations no configuration covers); enumeration values are split in
// their declared order, as if ordinal.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tuner/analysis/recording.h"
#include "tuner/search/regression_forest.h"

namespace kernlathe {

struct ImportanceOptions {
  int resamples = 32;        // bootstrap resamples, each with its own forest
  std::uint64_t seed = 1;    // the same seed gives the same figures, whatever the number of threads
  int trees = 16;            // per forest
  double interval = 0.90;    // central interval of the resampled values
  unsigned threads = 0;      // resamples fitted in parallel; 0: one thread per core
};

struct Estimate {
  double mean = 0;
  double low = 0;   // the interval's lower end
  double high = 0;  // and upper end
};

struct ParameterImportance {
  std::string parameter;
  Estimate main_effect;        // share of the variance of log time
  Estimate with_interactions;  // main effect plus every pair that holds the parameter
};

struct InteractionImportance {
  std::string first;
  std::string second;
  Estimate share;  // variance of the two-way effect beyond the main effects, as a share of the variance of log time
};

struct ImportanceResult {
  std::size_t samples = 0;  // valid configurations the forests were fitted to
  int resamples = 0;
  double interval = 0;
  std::vector<ParameterImportance> parameters;      // ranked by mean main effect, largest first
  std::vector<InteractionImportance> interactions;  // every pair, largest first
  std::vector<std::string> constant_parameters;     // one value among the valid configurations: not analysed
  Estimate explained;        // main effects and all pairs together
  std::string not_computed;  // why nothing was computed (too few valid configurations); empty otherwise
};

// One fitted forest decomposed over the product of domains (domains[j]: the sorted distinct values feature j
// takes). Shares of the variance of the forest's function; pair[i][j] is filled for i < j.
struct VarianceDecomposition {
  double mean = 0;
  double variance = 0;
  std::vector<double> main;               // per feature
  std::vector<std::vector<double>> pair;  // per pair of features, i < j
};
VarianceDecomposition decompose_forest(const RegressionForest& forest, const std::vector<std::vector<double>>& domains,
                                       std::uint64_t seed);

// names[j] names feature j; features[i] holds sample i's numeric parameter values (numeric_value()), times_ms[i]
// its time (positive). Deterministic for options.seed.
ImportanceResult analyse_importance(const std::vector<std::string>& names,
                                    const std::vector<std::vector<double>>& features,
                                    const std::vector<double>& times_ms, const ImportanceOptions& options);

// The same on a recording's valid configurations.
ImportanceResult analyse_importance(const Recording& recording, const ImportanceOptions& options);

}  // namespace kernlathe
