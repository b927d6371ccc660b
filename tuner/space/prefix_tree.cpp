#include "tuner/space/prefix_tree.h"

#include <limits>

namespace kernlathe::space_detail {

void PackedArray::pop_back() {
  switch (width_) {
    case 1: narrow8_.pop_back(); break;
    case 2: narrow16_.pop_back(); break;
    case 4: narrow32_.pop_back(); break;
    default: wide_.pop_back(); break;
  }
}

std::size_t PackedArray::size() const {
  switch (width_) {
    case 1: return narrow8_.size();
    case 2: return narrow16_.size();
    case 4: return narrow32_.size();
    default: return wide_.size();
  }
}

std::size_t PackedArray::memory_bytes() const {
  return narrow8_.capacity() + narrow16_.capacity() * 2 + narrow32_.capacity() * 4 + wide_.capacity() * 8;
}

void PackedArray::shrink_to_fit() {
  narrow8_.shrink_to_fit();
  narrow16_.shrink_to_fit();
  narrow32_.shrink_to_fit();
  wide_.shrink_to_fit();
}

template <typename To, typename From>
static void move_into(std::vector<To>& to, std::vector<From>& from) {
  to.reserve(from.size() + from.size() / 2 + 1);
  to.assign(from.begin(), from.end());
  std::vector<From>().swap(from);
}

void PackedArray::widen(std::uint64_t value) {
  int new_width = value <= 0xffff ? 2 : value <= 0xffffffff ? 4 : 8;
  if (new_width <= width_) new_width = width_ * 2;
  // Widen by whole steps so each element is copied once per step; at most three steps over a lifetime.
  while (width_ < new_width) {
    switch (width_) {
      case 1: move_into(narrow16_, narrow8_); width_ = 2; max_value_ = 0xffff; break;
      case 2: move_into(narrow32_, narrow16_); width_ = 4; max_value_ = 0xffffffff; break;
      default: move_into(wide_, narrow32_); width_ = 8; max_value_ = std::numeric_limits<std::uint64_t>::max(); break;
    }
  }
}

PrefixTree::PrefixTree(int depth)
    : depth_(depth),
      value_index_(depth),
      child_begin_(depth > 1 ? depth - 1 : 0),
      first_leaf_(depth > 2 ? depth - 2 : 0) {}

void PrefixTree::finish() {
  for (int level = 0; level + 1 < depth_; ++level) {
    child_begin_[level].push_back(value_index_[level + 1].size());
    if (level + 2 < depth_) first_leaf_[level].push_back(leaf_count());
  }
  for (auto& array : value_index_) array.shrink_to_fit();
  for (auto& array : child_begin_) array.shrink_to_fit();
  for (auto& array : first_leaf_) array.shrink_to_fit();
}

std::size_t PrefixTree::memory_bytes() const {
  std::size_t bytes = 0;
  for (const auto& array : value_index_) bytes += array.memory_bytes();
  for (const auto& array : child_begin_) bytes += array.memory_bytes();
  for (const auto& array : first_leaf_) bytes += array.memory_bytes();
  return bytes;
}

void PrefixTree::at(std::uint64_t index, std::span<std::uint32_t> value_indices) const {
  std::uint64_t begin = 0;
  std::uint64_t end = value_index_[0].size();
  for (int level = 0; level + 1 < depth_; ++level) {
    // The last node in [begin, end) whose first leaf is at or before index.
    std::uint64_t low = begin;
    std::uint64_t high = end;
    while (high - low > 1) {
      std::uint64_t middle = low + (high - low) / 2;
      if (first_leaf(level, middle) <= index) {
        low = middle;
      } else {
        high = middle;
      }
    }
    value_indices[level] = static_cast<std::uint32_t>(value_index_[level][low]);
    begin = child_begin_[level][low];
    end = child_begin_[level][low + 1];
  }
  value_indices[depth_ - 1] = static_cast<std::uint32_t>(value_index_[depth_ - 1][index]);
}

std::optional<std::uint64_t> PrefixTree::index_of(std::span<const std::uint32_t> value_indices) const {
  std::uint64_t begin = 0;
  std::uint64_t end = value_index_[0].size();
  for (int level = 0; level < depth_; ++level) {
    const PackedArray& values = value_index_[level];
    std::uint64_t low = begin;
    std::uint64_t high = end;
    while (low < high) {  // first node with a value index not below the wanted one
      std::uint64_t middle = low + (high - low) / 2;
      if (values[middle] < value_indices[level]) {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    if (low == end || values[low] != value_indices[level]) return std::nullopt;
    if (level + 1 == depth_) return low;
    begin = child_begin_[level][low];
    end = child_begin_[level][low + 1];
  }
  return std::nullopt;
}

PrefixTree::Cursor::Cursor(const PrefixTree& tree, std::uint64_t leaf)
    : tree_(&tree), node_(static_cast<std::size_t>(tree.depth_)), values_(static_cast<std::size_t>(tree.depth_)) {
  position(leaf);
}

void PrefixTree::Cursor::position(std::uint64_t leaf) {
  const PrefixTree& tree = *tree_;
  changed_from_ = 0;
  // The descent of at(), keeping each level's node for advance().
  std::uint64_t begin = 0;
  for (int level = 0; level + 1 < tree.depth_; ++level) {
    std::uint64_t low = begin;
    std::uint64_t high = tree.child_begin_[level].size() - 1;  // the end sentinel is not a node
    if (level > 0) high = tree.child_begin_[level - 1][node_[level - 1] + 1];
    while (high - low > 1) {
      const std::uint64_t middle = low + (high - low) / 2;
      if (tree.first_leaf(level, middle) <= leaf) {
        low = middle;
      } else {
        high = middle;
      }
    }
    node_[level] = low;
    values_[level] = static_cast<std::uint32_t>(tree.value_index_[level][low]);
    begin = tree.child_begin_[level][low];
  }
  node_[tree.depth_ - 1] = leaf;
  values_[tree.depth_ - 1] = static_cast<std::uint32_t>(tree.value_index_[tree.depth_ - 1][leaf]);
}

bool PrefixTree::Cursor::advance() {
  const PrefixTree& tree = *tree_;
  const int last = tree.depth_ - 1;
  const std::uint64_t leaf = node_[last] + 1;
  if (leaf == tree.leaf_count()) {
    position(0);
    return false;
  }
  node_[last] = leaf;
  values_[last] = static_cast<std::uint32_t>(tree.value_index_[last][leaf]);
  changed_from_ = last;
  // Every node has at least one child, so a level whose child left its range moves on by exactly one node.
  for (int level = last - 1; level >= 0; --level) {
    if (node_[level + 1] < tree.child_begin_[level][node_[level] + 1]) break;
    ++node_[level];
    values_[level] = static_cast<std::uint32_t>(tree.value_index_[level][node_[level]]);
    changed_from_ = level;
  }
  return true;
}

}  // namespace kernlathe::space_detail
