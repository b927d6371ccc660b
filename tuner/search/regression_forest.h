#pragma once
// A small random forest for regression: bagged CART trees, each split chosen among a random subset of the
// features by the largest drop in squared error. The surrogate strategy models log time with it; the spread of
// the trees' predictions serves as its uncertainty.
//
// Written here rather than taken from Debian's libxgboost: `tune` is built on one machine and run on the GPU
// host, which has no xgboost, and the whole model is a hundred lines of sorting and averaging.

#include <cstddef>
#include <random>
#include <vector>

namespace kernlathe {

struct ForestOptions {
  int trees = 32;
  std::size_t minimum_leaf_size = 2;  // samples a leaf keeps at least
  std::size_t maximum_depth = 16;
  double feature_fraction = 0.5;      // of the features considered at each split (at least one)
  bool bootstrap = true;              // each tree sees a resample with replacement of the samples
};

struct ForestPrediction {
  double mean = 0;    // average over the trees
  double spread = 0;  // standard deviation over the trees
};

class RegressionForest {
 public:
  // samples[i] is one row of features (all rows the same length), targets[i] its value. Deterministic for the
  // generator's state. No samples: every prediction is 0 with spread 0.
  void fit(const std::vector<std::vector<double>>& samples, const std::vector<double>& targets,
           const ForestOptions& options, std::mt19937_64& random);
  ForestPrediction predict(const std::vector<double>& features) const;
  // One tree's prediction, tree < tree_count(): a draw from the forest's belief (Thompson sampling).
  double predict_with_tree(const std::vector<double>& features, std::size_t tree) const;
  std::size_t tree_count() const { return trees_.size(); }
  std::size_t feature_count() const { return feature_count_; }

  // A leaf of one tree seen as a box of feature space: every sample that reaches it has lower[j] < features[j]
  // <= upper[j] (infinite where no split bounds feature j). The functional ANOVA of tuner/analysis integrates the
  // forest over these boxes instead of sampling it.
  struct LeafBox {
    std::vector<double> lower;
    std::vector<double> upper;
    double value = 0;
  };
  std::vector<LeafBox> leaf_boxes(std::size_t tree) const;

 private:
  struct Node {
    int feature = -1;  // -1: a leaf holding value
    double threshold = 0;  // samples with feature <= threshold go left
    int left = -1;
    int right = -1;
    double value = 0;
  };
  using Tree = std::vector<Node>;

  struct Builder;
  std::vector<Tree> trees_;
  std::size_t feature_count_ = 0;
};

}  // namespace kernlathe
