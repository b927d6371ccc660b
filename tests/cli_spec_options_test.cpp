#include "tuner/cli/spec_options.h"

#include <gtest/gtest.h>

namespace kernlathe {
namespace {

TEST(CommonSpecOptions, ParsesEveryOptionItAdds) {
  CLI::App app;
  CommonSpecOptions options;
  CLI::Option* device = options.add_to(app, /*with_device=*/true);
  ASSERT_NE(device, nullptr);
  const char* argv[] = {"tune", "saxpy", "--arch", "sm_80", "--problem", "N=64", "--device", "3", "--json"};
  app.parse(static_cast<int>(std::size(argv)), argv);
  EXPECT_EQ(options.spec, "saxpy");
  EXPECT_EQ(options.arch, "sm_80");
  EXPECT_EQ(options.problem, "N=64");
  EXPECT_EQ(options.device, 3);
  EXPECT_TRUE(options.json);
}

TEST(CommonSpecOptions, WithoutDeviceTheOptionIsUnknownAndANegativeIndexIsRefused) {
  CLI::App without;
  CommonSpecOptions options;
  EXPECT_EQ(options.add_to(without, /*with_device=*/false), nullptr);
  const char* with_device_argv[] = {"tune", "saxpy", "--device", "1"};
  EXPECT_THROW(without.parse(4, with_device_argv), CLI::ParseError);

  CLI::App with;
  CommonSpecOptions checked;
  checked.add_to(with, /*with_device=*/true);
  const char* negative[] = {"tune", "saxpy", "--device", "-1"};
  EXPECT_THROW(with.parse(4, negative), CLI::ParseError);
}

}  // namespace
}  // namespace kernlathe
