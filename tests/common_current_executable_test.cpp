#include <gtest/gtest.h>

#include <filesystem>

#include "tuner/common/current_executable.h"

namespace kernlathe {
namespace {

TEST(CurrentExecutable, IsThisTestBinaryAndExists) {
  const std::filesystem::path executable = current_executable();
  EXPECT_TRUE(executable.is_absolute());
  EXPECT_EQ(executable.filename(), "test_common");
  EXPECT_TRUE(std::filesystem::is_regular_file(executable));
}

}  // namespace
}  // namespace kernlathe
