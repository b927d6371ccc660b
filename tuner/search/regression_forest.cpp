#include "tuner/search/regression_forest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

namespace kernlathe {

// A tree is grown over a range of an array: members holds each sample of the tree's bootstrap draw once, with the
// times it was drawn (a sample drawn twice weighs two in every sum and count, as two copies did, in a third fewer
// entries), and a node owns a range [begin, end) of it; a split partitions the range stably in place. Each
// feature's values are replaced once per fit by their rank among the feature's distinct values (its bin), so a node
// finds its best cut on a feature by summing its members' targets per bin and reading the bins in order: the
// candidate cuts and their scores are those of sorting the node's samples by the feature. Before, every feature's
// sorted order was kept through the splits, and partitioning all of them at each split, with the per-tree setup,
// took half the fitting time (perf, bf16 GEMM space, about 160 features).
struct RegressionForest::Builder {
  // Features whose bins one pass over a node's members fills: a feature alone adds into the same bin again and again
  // where the members share a value, each addition waiting for the previous one.
  static constexpr std::size_t interleaved = 4;

  const std::vector<double>& targets;
  const ForestOptions& options;
  std::mt19937_64& random;
  std::size_t sample_count;
  std::size_t feature_count;
  std::vector<std::vector<double>> distinct;  // distinct[f]: the values feature f takes, ascending
  std::vector<std::uint32_t> bins;            // bins[f * sample_count + sample]: its value's rank in distinct[f]
  // constant[depth * feature_count + f]: whether feature f takes one value over the node being grown at that depth.
  // A feature constant in a node is constant in every node below it, so it is known there without a pass.
  std::vector<std::uint8_t> constant;
  std::size_t features_per_split = 1;
  struct Member {
    std::uint32_t sample = 0;
    std::uint32_t weight = 0;
    double weighted_target = 0;  // weight * targets[sample]
  };
  std::vector<Member> members;
  std::vector<Member> scratch;  // the right-hand part during a partition
  std::vector<int> feature_order;
  // Per bin, over the node being split: members counted and their targets summed; touched lists the bins in use.
  std::size_t most_bins = 1;
  std::vector<std::uint32_t> bin_count;  // interleaved blocks of most_bins
  std::vector<double> bin_sum;
  std::vector<std::uint32_t> touched;  // interleaved blocks of sample_count: the bins in use, in the order first seen
  std::size_t touched_count[interleaved] = {};

  struct Split {
    int feature = -1;
    double threshold = 0;
    double score = 0;  // sum_left^2 / n_left + sum_right^2 / n_right: larger is a smaller squared error
  };

  Builder(const std::vector<std::vector<double>>& samples, const std::vector<double>& targets_,
          const ForestOptions& options_, std::mt19937_64& random_)
      : targets(targets_),
        options(options_),
        random(random_),
        sample_count(samples.size()),
        feature_count(samples.front().size()),
        distinct(feature_count),
        bins(feature_count * sample_count),
        // A node that splits lies above fewer levels than the samples it holds.
        constant((std::min(options_.maximum_depth, samples.size()) + 1) * feature_count, 0),
        feature_order(feature_count) {
    for (std::size_t f = 0; f < feature_count; ++f) {
      std::vector<double>& values = distinct[f];
      values.reserve(sample_count);
      for (const auto& sample : samples) values.push_back(sample[f]);
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      for (std::size_t s = 0; s < sample_count; ++s)
        bins[f * sample_count + s] = static_cast<std::uint32_t>(
            std::lower_bound(values.begin(), values.end(), samples[s][f]) - values.begin());
      constant[f] = values.size() < 2;
      most_bins = std::max(most_bins, values.size());
    }
    bin_count.assign(interleaved * most_bins, 0);
    bin_sum.assign(interleaved * most_bins, 0.0);
    touched.assign(interleaved * sample_count + 1, 0);
  }

  // Sums the node's targets per bin of up to `interleaved` features at once, in one pass over its members (see
  // interleaved).
  template <std::size_t count>
  void accumulate(const int* features, std::size_t begin, std::size_t end) {
    const std::uint32_t* columns[count];
    std::uint32_t* counts[count];
    double* sums[count];
    std::uint32_t* used[count];
    std::size_t used_count[count];
    for (std::size_t j = 0; j < count; ++j) {
      columns[j] = bins.data() + static_cast<std::size_t>(features[j]) * sample_count;
      counts[j] = bin_count.data() + j * most_bins;
      sums[j] = bin_sum.data() + j * most_bins;
      used[j] = touched.data() + j * sample_count;
      used_count[j] = 0;
    }
    const Member* member = members.data();
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint32_t sample = member[i].sample;
      const std::uint32_t weight = member[i].weight;
      const double value = member[i].weighted_target;
      for (std::size_t j = 0; j < count; ++j) {
        const std::uint32_t bin = columns[j][sample];
        // A bin seen for the first time joins the list; written every time, kept only then (no branch to mispredict).
        used[j][used_count[j]] = bin;
        used_count[j] += counts[j][bin] == 0 ? 1 : 0;
        counts[j][bin] += weight;
        sums[j][bin] += value;
      }
    }
    for (std::size_t j = 0; j < count; ++j) touched_count[j] = used_count[j];
  }

  void accumulate(const int* features, std::size_t count, std::size_t begin, std::size_t end) {
    static_assert(interleaved == 4);
    switch (count) {
      case 4: accumulate<4>(features, begin, end); break;
      case 3: accumulate<3>(features, begin, end); break;
      case 2: accumulate<2>(features, begin, end); break;
      case 1: accumulate<1>(features, begin, end); break;
      default: break;
    }
  }

  // The best cut on the j-th feature accumulated, read from its bins in order, which are then emptied; feature
  // stays -1 when the node's members take one value of it.
  Split best_split_in(std::size_t j, int feature, std::size_t n, double total) {
    std::uint32_t* used = touched.data() + j * sample_count;
    const std::size_t used_count = touched_count[j];
    std::uint32_t* count = bin_count.data() + j * most_bins;
    double* sum = bin_sum.data() + j * most_bins;
    Split best;
    if (used_count > 1) {
      std::sort(used, used + used_count);
      const std::vector<double>& values = distinct[static_cast<std::size_t>(feature)];
      std::size_t left = 0;
      double left_sum = 0;
      for (std::size_t k = 0; k + 1 < used_count; ++k) {
        left += count[used[k]];
        left_sum += sum[used[k]];
        if (left < options.minimum_leaf_size || n - left < options.minimum_leaf_size) continue;
        const double right_sum = total - left_sum;
        const double score = left_sum * left_sum / static_cast<double>(left) +
                             right_sum * right_sum / static_cast<double>(n - left);
        if (best.feature < 0 || score > best.score)
          best = {feature, 0.5 * (values[used[k]] + values[used[k + 1]]), score};
      }
    }
    for (std::size_t k = 0; k < used_count; ++k) {
      count[used[k]] = 0;
      sum[used[k]] = 0;
    }
    return best;
  }

  // Moves the members of [begin, end) that go left to its front, both parts in their order; returns where the right
  // part starts.
  template <typename GoesLeft>
  std::size_t partition(std::size_t begin, std::size_t end, GoesLeft goes_left) {
    scratch.clear();
    std::size_t write = begin;
    for (std::size_t i = begin; i < end; ++i) {
      if (goes_left(members[i].sample)) {
        members[write++] = members[i];
      } else {
        scratch.push_back(members[i]);
      }
    }
    std::copy(scratch.begin(), scratch.end(), members.begin() + static_cast<std::ptrdiff_t>(write));
    return write;
  }

  int grow(Tree& tree, std::size_t begin, std::size_t end, std::size_t depth) {
    const int node_index = static_cast<int>(tree.size());
    tree.push_back(Node{});
    double total = 0;
    std::size_t size = 0;  // samples counted with their weights
    for (std::size_t i = begin; i < end; ++i) {
      total += members[i].weighted_target;
      size += members[i].weight;
    }
    const double mean = total / static_cast<double>(size);
    tree[static_cast<std::size_t>(node_index)].value = mean;
    if (depth >= options.maximum_depth || size < 2 * options.minimum_leaf_size) return node_index;

    const double parent_score = mean * mean * static_cast<double>(size);
    std::iota(feature_order.begin(), feature_order.end(), 0);
    std::shuffle(feature_order.begin(), feature_order.end(), random);
    // Features are drawn until features_per_split of them could cut this node: a feature that is constant here
    // does not use up a draw, so a node is only a leaf when no feature can split it.
    std::uint8_t* known_constant = constant.data() + depth * feature_count;
    if (depth > 0) std::copy_n(known_constant - feature_count, feature_count, known_constant);
    Split best;
    std::size_t usable = 0;
    std::size_t next = 0;  // in feature_order
    while (usable < features_per_split && next < feature_count) {
      int batch[interleaved];
      std::size_t count = 0;
      for (; count < interleaved && next < feature_count; ++next)
        if (!known_constant[feature_order[next]]) batch[count++] = feature_order[next];
      accumulate(batch, count, begin, end);
      // Every feature of the batch is read (which empties its bins); those past features_per_split usable ones
      // take no part, as if never drawn.
      for (std::size_t j = 0; j < count; ++j) {
        Split split = best_split_in(j, batch[j], size, total);
        if (touched_count[j] < 2) known_constant[batch[j]] = 1;
        if (split.feature < 0 || usable >= features_per_split) continue;
        ++usable;
        if (best.feature < 0 || split.score > best.score) best = split;
      }
    }
    // Relative tolerance: a "gain" of rounding noise would split identical targets forever.
    if (best.feature < 0 || best.score <= parent_score + 1e-12 * std::abs(parent_score) + 1e-300) return node_index;

    const std::uint32_t* column = bins.data() + static_cast<std::size_t>(best.feature) * sample_count;
    const std::vector<double>& values = distinct[static_cast<std::size_t>(best.feature)];
    const auto goes_left = [&](std::size_t sample) { return values[column[sample]] <= best.threshold; };
    const std::size_t middle = partition(begin, end, goes_left);
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
  const std::size_t n = samples.size();
  for (int t = 0; t < options.trees; ++t) {
    std::vector<std::uint32_t> drawn(n, 0);
    if (options.bootstrap) {
      for (std::size_t draw = 0; draw < n; ++draw) ++drawn[static_cast<std::size_t>(random() % n)];
    } else {
      std::fill(drawn.begin(), drawn.end(), 1u);
    }
    builder.members.clear();
    for (std::size_t sample = 0; sample < n; ++sample)
      if (drawn[sample] > 0)
        builder.members.push_back({static_cast<std::uint32_t>(sample), drawn[sample], drawn[sample] * targets[sample]});
    Tree tree;
    builder.grow(tree, 0, builder.members.size(), 0);
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
