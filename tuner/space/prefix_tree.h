#pragma once
// Private to tuner/space: the valid tuples of one parameter group, stored as a prefix tree laid out level by
// level. Level l holds one node per distinct valid prefix of length l + 1, in enumeration order; the children of
// a node are contiguous in the next level and sorted by value index, and the leaves (the last level) are the
// valid tuples themselves, so a leaf's position is the tuple's index within the group.
//
// A large space holds one leaf per valid configuration, so every array keeps the narrowest integer width that
// holds its largest value: one byte per leaf for a parameter with at most 256 values.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace kernlathe::space_detail {

// Unsigned integers in 1, 2, 4 or 8 bytes each, widened on the first value that does not fit.
class PackedArray {
 public:
  void push_back(std::uint64_t value) {
    if (value > max_value_) widen(value);
    switch (width_) {
      case 1: narrow8_.push_back(static_cast<std::uint8_t>(value)); break;
      case 2: narrow16_.push_back(static_cast<std::uint16_t>(value)); break;
      case 4: narrow32_.push_back(static_cast<std::uint32_t>(value)); break;
      default: wide_.push_back(value); break;
    }
  }
  void pop_back();
  std::uint64_t operator[](std::size_t index) const {
    switch (width_) {
      case 1: return narrow8_[index];
      case 2: return narrow16_[index];
      case 4: return narrow32_[index];
      default: return wide_[index];
    }
  }
  std::size_t size() const;
  std::size_t memory_bytes() const;
  void shrink_to_fit();

 private:
  void widen(std::uint64_t value);

  int width_ = 1;
  std::uint64_t max_value_ = 0xff;
  std::vector<std::uint8_t> narrow8_;
  std::vector<std::uint16_t> narrow16_;
  std::vector<std::uint32_t> narrow32_;
  std::vector<std::uint64_t> wide_;
};

class PrefixTree {
 public:
  explicit PrefixTree(int depth);

  // Building, leaf by leaf in order: a leaf whose prefix differs from the previous leaf's from some level on opens a
  // node at each level from there to the one above the leaves, then is added. Only prefixes of valid tuples are ever
  // opened.
  void open(int level, std::uint32_t value_index) {
    value_index_[level].push_back(value_index);
    child_begin_[level].push_back(value_index_[level + 1].size());
    if (level + 2 < depth_) first_leaf_[level].push_back(leaf_count());
  }
  void add_leaf(std::uint32_t value_index) { value_index_[depth_ - 1].push_back(value_index); }
  void finish();  // appends the end sentinels and releases spare capacity

  int depth() const { return depth_; }
  std::uint64_t leaf_count() const { return value_index_[depth_ - 1].size(); }
  std::size_t memory_bytes() const;

  // value_indices has depth() entries, one per level.
  void at(std::uint64_t index, std::span<std::uint32_t> value_indices) const;

  // Walks the leaves in order from a given one: each step moves to the next leaf and updates only the levels whose
  // node changes (amortised constant time), where at() searches every level afresh.
  class Cursor {
   public:
    Cursor(const PrefixTree& tree, std::uint64_t leaf);  // leaf < leaf_count()
    // The next leaf; false, and back at leaf 0, after the last.
    bool advance();
    std::span<const std::uint32_t> value_indices() const { return values_; }
    // The shallowest level whose node the last advance() changed (the levels below it changed too); 0 after the
    // cursor was placed or went back to leaf 0.
    int changed_from() const { return changed_from_; }

   private:
    void position(std::uint64_t leaf);
    const PrefixTree* tree_;
    std::vector<std::uint64_t> node_;    // per level, the node on the path to the current leaf
    std::vector<std::uint32_t> values_;  // per level, its value index
    int changed_from_ = 0;
  };
  std::optional<std::uint64_t> index_of(std::span<const std::uint32_t> value_indices) const;

 private:
  std::uint64_t first_leaf(int level, std::uint64_t node) const {
    // One level above the leaves the first child is the first leaf, so that level stores no copy of it.
    return level + 2 == depth_ ? child_begin_[level][node] : first_leaf_[level][node];
  }

  int depth_;
  std::vector<PackedArray> value_index_;  // per level: the value index of each node
  std::vector<PackedArray> child_begin_;  // per level but the last: first child of each node, then an end sentinel
  std::vector<PackedArray> first_leaf_;   // per level but the last two: first leaf under each node, then the leaf count
};

}  // namespace kernlathe::space_detail
