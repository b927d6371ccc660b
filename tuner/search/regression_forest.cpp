#include "tuner/search/regression_forest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

namespace kernlathe {

// A tree is grown over ranges of index arrays rather than copies: members holds the tree's samples (a bootstrap
// draw, with repeats) in draw order, and sorted[f] the same samples ordered by (feature f, target). A node owns the
// same range [begin, end) of each; splitting it partitions every array stably in place, since a subsequence of a
// sorted sequence stays sorted. The cuts, sums and so the trees are exactly those of sorting every node afresh
// (what this did before: 80% of the fitting time went to sorting, and much of the rest to allocating). The samples
// are sorted once per fit; a tree's orders are counted out of that.
struct RegressionForest::Builder {
  const std::vector<double>& targets;
  const ForestOptions& options;
  std::mt19937_64& random;
  std::vector<std::vector<double>> columns;  // columns[f][sample]: feature-major, so a node's scan reads one array
  std::size_t features_per_split = 1;
  std::vector<std::vector<std::size_t>> by_feature;  // every sample once, in (feature, target) order
  std::vector<std::size_t> members;
  std::vector<std::vector<std::size_t>> sorted;
  std::vector<std::size_t> scratch;  // the right-hand part during a partition

  struct Split {
    int feature = -1;
    double threshold = 0;
    double score = 0;  // sum_left^2 / n_left + sum_right^2 / n_right: larger is a smaller squared error
  };

  Builder(const std::vector<std::vector<double>>& samples, const std::vector<double>& targets_,
          const ForestOptions& options_, std::mt19937_64& random_)
      : targets(targets_), options(options_), random(random_), columns(samples.front().size()) {
    for (std::size_t f = 0; f < columns.size(); ++f) {
      columns[f].reserve(samples.size());
      for (const auto& sample : samples) columns[f].push_back(sample[f]);
    }
  }

  // Every sample once, ordered by (feature f, target), per feature: sorted once per fit, so that each tree's
  // orders come from counting its draw instead of sorting it. Ties in (value, target) may fall in any order:
  // nothing read from sorted[f] tells them apart.
  void sort_samples() {
    by_feature.assign(columns.size(), {});
    std::vector<std::tuple<double, double, std::size_t>> keyed(targets.size());
    for (std::size_t f = 0; f < columns.size(); ++f) {
      for (std::size_t i = 0; i < targets.size(); ++i) keyed[i] = {columns[f][i], targets[i], i};
      std::sort(keyed.begin(), keyed.end());
      by_feature[f].reserve(keyed.size());
      for (const auto& entry : keyed) by_feature[f].push_back(std::get<2>(entry));
    }
  }

  // Prepares members and sorted for a tree over draw: each sample as often as it was drawn, in sorted order.
  void start_tree(std::vector<std::size_t> draw) {
    members = std::move(draw);
    std::vector<std::size_t> drawn(targets.size(), 0);
    for (std::size_t member : members) ++drawn[member];
    sorted.assign(columns.size(), {});
    for (std::size_t f = 0; f < columns.size(); ++f) {
      sorted[f].reserve(members.size());
      for (std::size_t sample : by_feature[f]) sorted[f].insert(sorted[f].end(), drawn[sample], sample);
    }
  }

  double mean_of(std::size_t begin, std::size_t end) const {
    double sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += targets[members[i]];
    return sum / static_cast<double>(end - begin);
  }

  // The best threshold on one feature, read from the node's members in (feature, target) order; feature stays -1
  // when the node's values of it leave no legal cut.
  Split best_split_on(int feature, std::size_t begin, std::size_t end) const {
    const std::vector<std::size_t>& order = sorted[static_cast<std::size_t>(feature)];
    const std::vector<double>& values = columns[static_cast<std::size_t>(feature)];
    if (constant_in(static_cast<std::size_t>(feature), begin, end)) return {};
    double total = 0;
    for (std::size_t i = begin; i < end; ++i) total += targets[order[i]];
    Split best;
    double left_sum = 0;
    const std::size_t n = end - begin;
    for (std::size_t left = 1; left < n; ++left) {
      left_sum += targets[order[begin + left - 1]];
      const double below = values[order[begin + left - 1]], above = values[order[begin + left]];
      if (below == above) continue;  // a cut must fall between distinct values
      if (left < options.minimum_leaf_size || n - left < options.minimum_leaf_size) continue;
      const double right_sum = total - left_sum;
      const double score = left_sum * left_sum / static_cast<double>(left) +
                           right_sum * right_sum / static_cast<double>(n - left);
      if (best.feature < 0 || score > best.score) best = {feature, 0.5 * (below + above), score};
    }
    return best;
  }

  // Whether feature f takes one value over the node: its range in sorted[f] starts and ends with the same value.
  // Such a feature stays constant in every node below, where no cut on it is possible whichever members its range
  // holds, so its array is no longer partitioned.
  bool constant_in(std::size_t f, std::size_t begin, std::size_t end) const {
    return columns[f][sorted[f][begin]] == columns[f][sorted[f][end - 1]];
  }

  // Moves the samples of [begin, end) that go left to its front, both parts in their order; returns where the
  // right part starts.
  template <typename GoesLeft>
  std::size_t partition(std::vector<std::size_t>& array, std::size_t begin, std::size_t end, GoesLeft goes_left) {
    scratch.clear();
    std::size_t write = begin;
    for (std::size_t i = begin; i < end; ++i) {
      if (goes_left(array[i])) {
        array[write++] = array[i];
      } else {
        scratch.push_back(array[i]);
      }
    }
    std::copy(scratch.begin(), scratch.end(), array.begin() + static_cast<std::ptrdiff_t>(write));
    return write;
  }

  int grow(Tree& tree, std::size_t begin, std::size_t end, std::size_t depth) {
    const int node_index = static_cast<int>(tree.size());
    tree.push_back(Node{});
    const double mean = mean_of(begin, end);
    const std::size_t size = end - begin;
    tree[static_cast<std::size_t>(node_index)].value = mean;
    if (depth >= options.maximum_depth || size < 2 * options.minimum_leaf_size) return node_index;

    const double parent_score = mean * mean * static_cast<double>(size);
    std::vector<int> order(columns.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), random);
    // Features are drawn until features_per_split of them could cut this node: a feature that is constant here
    // does not use up a draw, so a node is only a leaf when no feature can split it.
    Split best;
    std::size_t usable = 0;
    for (int feature : order) {
      if (usable >= features_per_split) break;
      Split split = best_split_on(feature, begin, end);
      if (split.feature < 0) continue;
      ++usable;
      if (best.feature < 0 || split.score > best.score) best = split;
    }
    // Relative tolerance: a "gain" of rounding noise would split identical targets forever.
    if (best.feature < 0 || best.score <= parent_score + 1e-12 * std::abs(parent_score) + 1e-300) return node_index;

    const std::vector<double>& values = columns[static_cast<std::size_t>(best.feature)];
    const auto goes_left = [&](std::size_t sample) { return values[sample] <= best.threshold; };
    const std::size_t middle = partition(members, begin, end, goes_left);
    for (std::size_t f = 0; f < sorted.size(); ++f)
      if (!constant_in(f, begin, end)) partition(sorted[f], begin, end, goes_left);
    const int left_child = grow(tree, begin, middle, depth + 1);
    const int right_child = grow(tree, middle, end, depth + 1);
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
  feature_count_ = samples.empty() ? 0 : samples.front().size();
  if (samples.empty()) return;
  Builder builder(samples, targets, options, random);
  const double wanted = std::ceil(options.feature_fraction * static_cast<double>(samples.front().size()));
  builder.features_per_split = std::max<std::size_t>(1, static_cast<std::size_t>(wanted));
  builder.sort_samples();
  const std::size_t n = samples.size();
  for (int t = 0; t < options.trees; ++t) {
    std::vector<std::size_t> members(n);
    if (options.bootstrap) {
      for (std::size_t& member : members) member = static_cast<std::size_t>(random() % n);
    } else {
      std::iota(members.begin(), members.end(), std::size_t{0});
    }
    builder.start_tree(std::move(members));
    Tree tree;
    builder.grow(tree, 0, n, 0);
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

std::vector<RegressionForest::LeafBox> RegressionForest::leaf_boxes(std::size_t tree) const {
  const Tree& nodes = trees_[tree];
  std::vector<LeafBox> leaves;
  const double infinity = std::numeric_limits<double>::infinity();
  LeafBox box{std::vector<double>(feature_count_, -infinity), std::vector<double>(feature_count_, infinity), 0};
  // Depth first with the box narrowed on the way down and restored on the way up.
  auto descend = [&](auto& self, int index) -> void {
    const Node& node = nodes[static_cast<std::size_t>(index)];
    if (node.feature < 0) {
      box.value = node.value;
      leaves.push_back(box);
      return;
    }
    const auto feature = static_cast<std::size_t>(node.feature);
    const double upper = box.upper[feature];
    box.upper[feature] = std::min(upper, node.threshold);
    self(self, node.left);
    box.upper[feature] = upper;
    const double lower = box.lower[feature];
    box.lower[feature] = std::max(lower, node.threshold);
    self(self, node.right);
    box.lower[feature] = lower;
  };
  descend(descend, 0);
  return leaves;
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
