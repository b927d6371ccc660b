#include <gtest/gtest.h>

#include "tuner/common/hash.h"

namespace kernlathe {
namespace {

TEST(ContentHash, IsFnv1aWithLengthPrefixedParts) {
  // Published FNV-1a 64-bit test vectors.
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(content_hash({}), "cbf29ce484222325");
  std::string hash = content_hash({"spec text", "template text"});
  EXPECT_EQ(hash.size(), 16u);
  EXPECT_EQ(hash, content_hash({"spec text", "template text"}));
  EXPECT_NE(content_hash({"ab", "c"}), content_hash({"a", "bc"}));
  EXPECT_NE(content_hash({"spec text", "template text"}), content_hash({"spec text", "template text!"}));
}

TEST(ContentHash, SizedPartsHashAsTheirJoinedText) {
  // Template hashes and cubin keys hash "<size>:<bytes>" per part; in pieces they must stay the values stored in
  // databases and exports.
  const std::string header(100000, 'x');
  const std::uint64_t state = fnv1a_64("template text");
  EXPECT_EQ(fnv1a_64_sized(header, state), fnv1a_64("100000:" + header, state));
  EXPECT_EQ(fnv1a_64_sized("", state), fnv1a_64("0:", state));
  EXPECT_NE(fnv1a_64_sized("ab", fnv1a_64_sized("c", state)), fnv1a_64_sized("a", fnv1a_64_sized("bc", state)));
}

}  // namespace
}  // namespace kernlathe
