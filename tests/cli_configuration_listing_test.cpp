#include "tuner/cli/configuration_listing.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

Space small_space() {
  return parse_space(R"(
name: listing
parameters:
  - name: BLOCK
    values: [64, 128, 256]
  - name: VEC
    values: [1, 2, 4]
  - name: UNROLL
    type: bool
  - name: ORDER
    type: enum
    values: [row, column]
constraints:
  - BLOCK * VEC <= 512
)",
                     "listing.yaml");
}

TEST(ConfigurationListing, TextAndJsonLinesMatchTheConfigurationsInIndexOrder) {
  const Space space = small_space();
  const SpaceEnumerator enumerator(space, {});
  ASSERT_EQ(enumerator.valid_count(), 8u * 2 * 2);  // BLOCK x VEC: 8 of 9 pairs, times UNROLL x ORDER
  ConfigurationListing text(space, ListingFormat::text);
  ConfigurationListing json(space, ListingFormat::json_lines);
  enumerator.for_each_in_order(0, 3, [&](std::span<const std::uint32_t> value_indices) {
    text.add(value_indices);
    json.add(value_indices);
  });
  std::string expected_text;
  for (std::uint64_t index = 0; index < 3; ++index) expected_text += to_string(space, enumerator.at(index)) + "\n";
  EXPECT_EQ(text.buffered(), expected_text);
  EXPECT_EQ(text.buffered().substr(0, text.buffered().find('\n')), "BLOCK=64 VEC=1 UNROLL=false ORDER=row");
  EXPECT_EQ(json.buffered().substr(0, json.buffered().find('\n')),
            R"({"BLOCK":64,"VEC":1,"UNROLL":false,"ORDER":"row"})");
}

TEST(ConfigurationListing, WriteListsEveryConfigurationOnceThroughAFile) {
  const Space space = small_space();
  const SpaceEnumerator enumerator(space, {});
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(ConfigurationListing::write(enumerator, 10, 1000, ListingFormat::text, file), enumerator.valid_count() - 10);
  std::rewind(file);
  std::string contents;
  for (int c; (c = std::fgetc(file)) != EOF;) contents += static_cast<char>(c);
  std::fclose(file);
  std::string expected;
  for (std::uint64_t index = 10; index < enumerator.valid_count(); ++index)
    expected += to_string(space, enumerator.at(index)) + "\n";
  EXPECT_EQ(contents, expected);
}

}  // namespace
}  // namespace kernlathe
