#pragma once
// A seeded bijection of [0, n) that is computed, not stored: random search walks 10^7 or more valid
// configurations without replacement in O(1) memory.

#include <cstdint>

namespace kernlathe {

class IndexPermutation {
 public:
  // n may be 0 (nothing to permute). Same (n, seed) -> same permutation.
  IndexPermutation(std::uint64_t n, std::uint64_t seed);

  std::uint64_t size() const { return size_; }
  // The position-th element of the permutation; position must be < size().
  std::uint64_t operator()(std::uint64_t position) const;

 private:
  std::uint64_t encrypt(std::uint64_t value) const;

  std::uint64_t size_ = 0;
  unsigned half_bits_ = 1;  // the Feistel network permutes [0, 2^(2 * half_bits_))
  std::uint64_t half_mask_ = 1;
  std::uint64_t round_keys_[6] = {};
};

}  // namespace kernlathe
