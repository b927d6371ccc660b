#pragma once
// `tune space --list`: valid configurations written one line each, as text ("BLOCK=128 VEC=4") or JSON lines
// ({"BLOCK":128,"VEC":4}), at the speed of the enumerator. Every parameter value's text is formatted once, each
// line is put together from those pieces in a large buffer (the part before the first parameter that changed is the
// line before's, copied at once), and the buffer is written in megabyte blocks; nothing is kept per configuration,
// so memory does not grow with the count.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tuner/space/space.h"

namespace kernlathe {

enum class ListingFormat { text, json_lines };

class ConfigurationListing {
 public:
  ConfigurationListing(const Space& space, ListingFormat format);

  // Appends the line of one configuration given as value indices in declared parameter order
  // (SpaceEnumerator::for_each_in_order), whose parameters before first_changed hold the values of the line added
  // before (0: any may differ).
  void add(std::span<const std::uint32_t> value_indices, std::size_t first_changed = 0);
  // Writes what is buffered to out and empties the buffer.
  void flush(std::FILE* out);
  // The buffered text (for tests).
  std::string buffered() const { return std::string(buffer_.data(), used_); }

  // Lists the configurations [first, first + count) of space to out; returns how many were written.
  static std::uint64_t write(const SpaceEnumerator& space, std::uint64_t first, std::uint64_t count,
                             ListingFormat format, std::FILE* out);

 private:
  struct Piece {
    std::uint32_t offset = 0;  // in text_
    std::uint32_t length = 0;
  };
  ListingFormat format_;
  std::string text_;                         // every piece, back to back
  std::vector<std::vector<Piece>> pieces_;  // per parameter, per value: the text written for it
  std::size_t longest_line_ = 0;
  std::vector<char> buffer_;
  std::size_t used_ = 0;
  // The line added last, when it is still in the buffer (the end of it): its length and where each parameter's piece
  // starts in it (one more entry: the length).
  bool previous_line_buffered_ = false;
  std::vector<std::uint32_t> piece_start_;
};

}  // namespace kernlathe
