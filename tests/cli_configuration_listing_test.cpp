#include "tuner/cli/configuration_listing.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_support.h"
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
  enumerator.for_each_in_order(0, 3, [&](std::span<const std::uint32_t> value_indices, std::size_t first_changed) {
    text.add(value_indices, first_changed);
    json.add(value_indices, first_changed);
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
  const std::string contents = cli_test::read_back(file);
  std::string expected;
  for (std::uint64_t index = 10; index < enumerator.valid_count(); ++index)
    expected += to_string(space, enumerator.at(index)) + "\n";
  EXPECT_EQ(contents, expected);
}

// Groups of parameters tied by constraints (one with a conditional parameter, a derived value and more than 64
// values), a free parameter, and more than a megabyte of listing, so lines are put together across buffer flushes.
Space grouped_space() {
  return parse_space(R"(
name: grouped
parameters:
  - name: PATH
    type: enum
    values: [alpha, beta]
  - name: A
    range: {from: 0, to: 79}
  - name: NAME
    type: enum
    values: [x, y, z, w_v]
  - name: B
    values: [1, 2, 4, 8]
  - name: C
    values: [1, 2, 3]
    when: PATH == "beta"
  - name: FLAG
    type: bool
  - name: D
    values: [0, 3, 5, 7, 9, 11]
  - name: E
    values: [10, 200]
derived:
  S: A + B * C
constraints:
  - S % 3 != 0 or C == 1
  - A < 40 * B or PATH == "beta"
  - FLAG or D > 0
)",
                     "grouped.yaml");
}


nlohmann::ordered_json json_of(const Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return *integer;
  if (const auto* real = std::get_if<double>(&value)) return *real;
  if (const auto* boolean = std::get_if<bool>(&value)) return *boolean;
  return std::get<std::string>(value);
}

TEST(ConfigurationListing, AStreamedListingHoldsWhatAtGivesInIndexOrder) {
  const Space space = grouped_space();
  const SpaceEnumerator indexed(space, {});
  const SpaceEnumerator in_order(space, {}, EnumerationLimits{}, EnumeratorKind::in_order);
  std::string expected_text;
  std::string expected_json;
  for (std::uint64_t index = 0; index < indexed.valid_count(); ++index) {
    const Configuration configuration = indexed.at(index);
    expected_text += to_string(space, configuration) + "\n";
    nlohmann::ordered_json line = nlohmann::ordered_json::object();
    for (std::size_t p = 0; p < space.parameters.size(); ++p)
      line[space.parameters[p].name] = json_of(configuration[p]);
    expected_json += line.dump() + "\n";
  }
  ASSERT_GT(expected_text.size(), std::size_t{1} << 20);  // crosses a flush
  for (const SpaceEnumerator* enumerator : {&indexed, &in_order}) {
    std::FILE* text = std::tmpfile();
    std::FILE* json = std::tmpfile();
    ASSERT_NE(text, nullptr);
    ASSERT_NE(json, nullptr);
    EXPECT_EQ(ConfigurationListing::write(*enumerator, 0, enumerator->valid_count(), ListingFormat::text, text),
              indexed.valid_count());
    ConfigurationListing::write(*enumerator, 0, enumerator->valid_count(), ListingFormat::json_lines, json);
    EXPECT_TRUE(cli_test::read_back(text) == expected_text) << (enumerator == &indexed ? "indexed" : "in order");
    EXPECT_TRUE(cli_test::read_back(json) == expected_json) << (enumerator == &indexed ? "indexed" : "in order");
  }
}

}  // namespace
}  // namespace kernlathe
