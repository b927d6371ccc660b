// Values and configurations as the commands' --json outputs write them.
#include "tuner/space/json_values.h"

#include <gtest/gtest.h>

#include <string>

namespace kernlathe {
namespace {

TEST(JsonValues, EachValueKeepsItsJsonType) {
  EXPECT_EQ(value_to_json(Value{std::int64_t{128}}).dump(), "128");
  EXPECT_EQ(value_to_json(Value{0.5}).dump(), "0.5");
  EXPECT_EQ(value_to_json(Value{true}).dump(), "true");
  EXPECT_EQ(value_to_json(Value{std::string("rows")}).dump(), "\"rows\"");
}

TEST(JsonValues, AConfigurationIsAnObjectInDeclaredParameterOrder) {
  Space space;
  space.parameters.resize(3);
  space.parameters[0].name = "VEC";
  space.parameters[1].name = "BLOCK";
  space.parameters[2].name = "CACHE";
  const Configuration configuration{Value{std::int64_t{4}}, Value{std::int64_t{256}}, Value{false}};
  EXPECT_EQ(configuration_to_json(space, configuration).dump(), R"({"VEC":4,"BLOCK":256,"CACHE":false})");
}

}  // namespace
}  // namespace kernlathe
