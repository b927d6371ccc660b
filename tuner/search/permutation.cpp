#include "tuner/search/permutation.h"

#include <bit>

namespace kernlathe {

namespace {

// splitmix64's finaliser: a cheap mixer whose output bits each depend on every input bit.
std::uint64_t mix(std::uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

}  // namespace

IndexPermutation::IndexPermutation(std::uint64_t n, std::uint64_t seed) : size_(n) {
  // The smallest even-width domain 2^(2h) >= n: at most 4n, so cycle-walking takes under 4 steps on average.
  unsigned bits = n <= 1 ? 2 : static_cast<unsigned>(std::bit_width(n - 1));
  half_bits_ = (bits + 1) / 2;
  if (half_bits_ == 0) half_bits_ = 1;
  half_mask_ = half_bits_ >= 32 ? 0xffffffffULL : (std::uint64_t{1} << half_bits_) - 1;
  std::uint64_t state = seed;
  for (std::uint64_t& key : round_keys_) {
    state = mix(state);
    key = state;
  }
}

std::uint64_t IndexPermutation::encrypt(std::uint64_t value) const {
  // A balanced Feistel network is a bijection whatever the round function; six rounds make neighbouring
  // positions land far apart.
  std::uint64_t left = (value >> half_bits_) & half_mask_;
  std::uint64_t right = value & half_mask_;
  for (std::uint64_t key : round_keys_) {
    std::uint64_t next_right = left ^ (mix(right ^ key) & half_mask_);
    left = right;
    right = next_right;
  }
  return (left << half_bits_) | right;
}

std::uint64_t IndexPermutation::operator()(std::uint64_t position) const {
  // Cycle-walking: re-encrypt until the value falls inside [0, n). Terminates because the walk follows the
  // permutation's cycle through position, which lies inside [0, n).
  std::uint64_t value = encrypt(position);
  while (value >= size_) value = encrypt(value);
  return value;
}

}  // namespace kernlathe
