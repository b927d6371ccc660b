#include "tuner/search/regression_forest.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kernlathe {

struct RegressionForest::Builder {
  const std::vector<std::vector<double>>& samples;
  const std::vector<double>& targets;
  const ForestOptions& options;
  std::mt19937_64& random;
  std::size_t features_per_split = 1;

  struct Split {
    int feature = -1;
    double threshold = 0;
    double score = 0;  // sum_left^2 / n_left + sum_right^2 / n_right: larger is a smaller squared error
  };

  double mean_of(const std::vector<std::size_t>& members) const {
    double sum = 0;
    for (std::size_t member : members) sum += targets[member];
    return sum / static_cast<double>(members.size());
  }

  // The best threshold on one feature; feature stays -1 when the node's values of it leave no legal cut.
  Split best_split_on(int feature, const std::vector<std::size_t>& members) const {
    std::vector<std::pair<double, double>> points;  // (feature value, target)
    points.reserve(members.size());
    for (std::size_t member : members)
      points.emplace_back(samples[member][static_cast<std::size_t>(feature)], targets[member]);
    std::sort(points.begin(), points.end());
    const double total = std::accumulate(points.begin(), points.end(), 0.0,
                                         [](double sum, const auto& point) { return sum + point.second; });
    Split best;
    double left_sum = 0;
    const std::size_t n = points.size();
    for (std::size_t left = 1; left < n; ++left) {
      left_sum += points[left - 1].second;
      if (points[left - 1].first == points[left].first) continue;  // a cut must fall between distinct values
      if (left < options.minimum_leaf_size || n - left < options.minimum_leaf_size) continue;
      const double right_sum = total - left_sum;
      const double score = left_sum * left_sum / static_cast<double>(left) +
                           right_sum * right_sum / static_cast<double>(n - left);
      if (best.feature < 0 || score > best.score) {
        best = {feature, 0.5 * (points[left - 1].first + points[left].first), score};
      }
    }
    return best;
  }

  int grow(Tree& tree, const std::vector<std::size_t>& members, std::size_t depth) {
    const int node_index = static_cast<int>(tree.size());
    tree.push_back(Node{});
    const double mean = mean_of(members);
    tree[static_cast<std::size_t>(node_index)].value = mean;
    if (depth >= options.maximum_depth || members.size() < 2 * options.minimum_leaf_size) return node_index;

    const double parent_score = mean * mean * static_cast<double>(members.size());
    std::vector<int> order(samples.front().size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), random);
    // Features are drawn until features_per_split of them could cut this node: a feature that is constant here
    // does not use up a draw, so a node is only a leaf when no feature can split it.
    Split best;
    std::size_t usable = 0;
    for (int feature : order) {
      if (usable >= features_per_split) break;
      Split split = best_split_on(feature, members);
      if (split.feature < 0) continue;
      ++usable;
      if (best.feature < 0 || split.score > best.score) best = split;
    }
    // Relative tolerance: a "gain" of rounding noise would split identical targets forever.
    if (best.feature < 0 || best.score <= parent_score + 1e-12 * std::abs(parent_score) + 1e-300) return node_index;

    std::vector<std::size_t> left, right;
    for (std::size_t member : members)
      (samples[member][static_cast<std::size_t>(best.feature)] <= best.threshold ? left : right).push_back(member);
    const int left_child = grow(tree, left, depth + 1);
    const int right_child = grow(tree, right, depth + 1);
    Node& node = tree[static_cast<std::size_t>(node_index)];
    node.feature = best.feature;
    node.threshold = best.threshold;
    node.left = left_child;
    node.right = right_child;
    return node_index;
  }
};

void RegressionForest::fit(const std::vector<std::vector<double>>& samples, const std::vector<double>& targets,
                           const ForestOptions& options, std::mt19937_64& random) {
  trees_.clear();
  if (samples.empty()) return;
  Builder builder{samples, targets, options, random};
  const double wanted = std::ceil(options.feature_fraction * static_cast<double>(samples.front().size()));
  builder.features_per_split = std::max<std::size_t>(1, static_cast<std::size_t>(wanted));
  const std::size_t n = samples.size();
  for (int t = 0; t < options.trees; ++t) {
    std::vector<std::size_t> members(n);
    if (options.bootstrap) {
      for (std::size_t& member : members) member = static_cast<std::size_t>(random() % n);
    } else {
      std::iota(members.begin(), members.end(), std::size_t{0});
    }
    Tree tree;
    builder.grow(tree, members, 0);
    trees_.push_back(std::move(tree));
  }
}

double RegressionForest::predict_with_tree(const std::vector<double>& features, std::size_t tree) const {
  const Tree& nodes = trees_[tree];
  const Node* node = &nodes.front();
  while (node->feature >= 0)
    node = &nodes[static_cast<std::size_t>(features[static_cast<std::size_t>(node->feature)] <= node->threshold
                                               ? node->left
                                               : node->right)];
  return node->value;
}

ForestPrediction RegressionForest::predict(const std::vector<double>& features) const {
  if (trees_.empty()) return {};
  double sum = 0, sum_of_squares = 0;
  for (const Tree& tree : trees_) {
    const Node* node = &tree.front();
    while (node->feature >= 0) {
      const bool goes_left = features[static_cast<std::size_t>(node->feature)] <= node->threshold;
      node = &tree[static_cast<std::size_t>(goes_left ? node->left : node->right)];
    }
    sum += node->value;
    sum_of_squares += node->value * node->value;
  }
  const double count = static_cast<double>(trees_.size());
  const double mean = sum / count;
  return {mean, std::sqrt(std::max(0.0, sum_of_squares / count - mean * mean))};
}

}  // namespace kernlathe
