#include "tuner/cli/configuration_listing.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "tuner/common/error.h"

namespace kernlathe {
namespace {

constexpr std::size_t flush_bytes = std::size_t{1} << 20;
constexpr std::size_t short_piece = 32;

std::string json_value(const Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return nlohmann::json(*integer).dump();
  if (const auto* real = std::get_if<double>(&value)) return nlohmann::json(*real).dump();
  if (const auto* boolean = std::get_if<bool>(&value)) return *boolean ? "true" : "false";
  return nlohmann::json(std::get<std::string>(value)).dump();
}

}  // namespace

ConfigurationListing::ConfigurationListing(const Space& space, ListingFormat format) : format_(format) {
  const auto add_piece = [&](const std::string& piece) {
    Piece placed{static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(piece.size())};
    text_ += piece;
    return placed;
  };
  for (std::size_t p = 0; p < space.parameters.size(); ++p) {
    const Parameter& parameter = space.parameters[p];
    std::vector<Piece>& pieces = pieces_.emplace_back();
    // The separator before a parameter belongs to its piece: text joins with spaces, JSON opens with '{' and
    // joins with ','. The line's end belongs to the last parameter's pieces.
    const std::string before = format == ListingFormat::text ? (p == 0 ? "" : " ") : (p == 0 ? "{" : ",");
    const bool last = p + 1 == space.parameters.size();
    const std::string after = !last ? "" : format == ListingFormat::text ? "\n" : "}\n";
    std::size_t longest = 0;
    for (const Value& value : parameter.values) {
      const std::string piece =
          format == ListingFormat::text
              ? before + parameter.name + "=" + expr::to_string(value) + after
              : before + nlohmann::json(parameter.name).dump() + ":" + json_value(value) + after;
      longest = std::max(longest, piece.size());
      pieces.push_back(add_piece(piece));
    }
    longest_line_ += longest;
  }
  if (pieces_.empty()) longest_line_ = 3;  // "{}\n"
  longest_line_ += short_piece;  // the overrun of a fixed-size copy
  text_.append(short_piece, '\0');
  buffer_.resize(flush_bytes + longest_line_);
  piece_start_.assign(pieces_.size() + 1, 0);
}

void ConfigurationListing::add(std::span<const std::uint32_t> value_indices, std::size_t first_changed) {
  if (used_ + longest_line_ > buffer_.size()) buffer_.resize(used_ + longest_line_);
  char* line = buffer_.data() + used_;
  if (pieces_.empty()) {
    const std::string_view empty = format_ == ListingFormat::text ? "\n" : "{}\n";
    std::memcpy(line, empty.data(), empty.size());
    used_ += empty.size();
    return;
  }
  // Most lines differ from the one before in their last few pieces (bench_large: the deepest levels of the walk), so
  // the part before the first that changed is copied from it in one move.
  std::size_t from = previous_line_buffered_ ? std::min(first_changed, pieces_.size()) : 0;
  char* out = line;
  if (from > 0) {
    const std::uint32_t previous_length = piece_start_.back();
    std::memcpy(line, line - previous_length, piece_start_[from]);
    out += piece_start_[from];
  }
  const char* text = text_.data();
  for (std::size_t p = from; p < pieces_.size(); ++p) {
    piece_start_[p] = static_cast<std::uint32_t>(out - line);
    const Piece piece = pieces_[p][value_indices[p]];
    // A short piece is copied as a fixed 32 bytes (two vector moves, no call; text_ and the buffer have the slack)
    // and the line goes on after its real length.
    if (piece.length <= short_piece) {
      std::memcpy(out, text + piece.offset, short_piece);
    } else {
      std::memcpy(out, text + piece.offset, piece.length);
    }
    out += piece.length;
  }
  piece_start_.back() = static_cast<std::uint32_t>(out - line);
  previous_line_buffered_ = true;
  used_ = static_cast<std::size_t>(out - buffer_.data());
}

void ConfigurationListing::flush(std::FILE* out) {
  if (used_ == 0) return;
  if (std::fwrite(buffer_.data(), 1, used_, out) != used_)
    throw TunerError("cannot write the configuration listing (is the output closed?)");
  used_ = 0;
  previous_line_buffered_ = false;
}

std::uint64_t ConfigurationListing::write(const SpaceEnumerator& space, std::uint64_t first, std::uint64_t count,
                                          ListingFormat format, std::FILE* out) {
  ConfigurationListing listing(space.space(), format);
  std::uint64_t written = 0;
  space.for_each_in_order(first, count, [&](std::span<const std::uint32_t> value_indices, std::size_t first_changed) {
    listing.add(value_indices, first_changed);
    ++written;
    if (listing.used_ >= flush_bytes) listing.flush(out);
  });
  listing.flush(out);
  return written;
}

}  // namespace kernlathe
