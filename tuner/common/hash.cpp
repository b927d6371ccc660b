#include "tuner/common/hash.h"

#include <string>

#include <fmt/format.h>

namespace kernlathe {

std::uint64_t fnv1a_64(std::string_view bytes, std::uint64_t state) {
  constexpr std::uint64_t prime = 0x100000001b3ULL;
  for (unsigned char byte : bytes) {
    state ^= byte;
    state *= prime;
  }
  return state;
}

std::uint64_t fnv1a_64_sized(std::string_view bytes, std::uint64_t state) {
  state = fnv1a_64(std::to_string(bytes.size()), state);
  state = fnv1a_64(":", state);
  return fnv1a_64(bytes, state);
}

std::string content_hash(std::initializer_list<std::string_view> parts) {
  std::uint64_t state = 0xcbf29ce484222325ULL;
  for (std::string_view part : parts) {
    // Little-endian length prefix: makes the hash independent of the host and the split unambiguous.
    char length_bytes[8];
    std::uint64_t length = part.size();
    for (char& byte : length_bytes) {
      byte = static_cast<char>(length & 0xff);
      length >>= 8;
    }
    state = fnv1a_64(std::string_view(length_bytes, sizeof length_bytes), state);
    state = fnv1a_64(part, state);
  }
  return fmt::format("{:016x}", state);
}

}  // namespace kernlathe
