#pragma once
// Content hashes that name what a record or a cached result was measured against (the spec, the template,
// the space), so stale results are recognised instead of silently reused.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace kernlathe {

// 64-bit FNV-1a over the parts, as 16 lowercase hex digits. Each part's length is hashed before its bytes,
// so ("ab", "c") and ("a", "bc") hash differently.
std::string content_hash(std::initializer_list<std::string_view> parts);

// The raw 64-bit value behind content_hash, for callers that combine hashes.
std::uint64_t fnv1a_64(std::string_view bytes, std::uint64_t state = 0xcbf29ce484222325ULL);

// fnv1a_64 of "<decimal size>:<bytes>", the form template hashes and cubin keys give each part, without building that
// string: FNV-1a of pieces in turn is FNV-1a of their concatenation, and copying gemm_bf16's 100 KiB of headers to
// hash them cost as much as hashing them.
std::uint64_t fnv1a_64_sized(std::string_view bytes, std::uint64_t state);

}  // namespace kernlathe
