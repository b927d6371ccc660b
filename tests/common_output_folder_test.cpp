// check_output_folder: a file where a folder belongs, or above it, is refused by option and path before anything is
// written; a folder that exists or can be made passes, and nothing is created.
#include "tuner/common/output_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tuner/common/error.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

class OutputFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("common_output_folder_test-" + std::to_string(::getpid()));
    fs::create_directories(directory_);
    std::ofstream(directory_ / "a_file") << "x";
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string message_of(const fs::path& folder) {
    try {
      check_output_folder("-o", folder, "the export");
    } catch (const InputError& error) {
      return error.what();
    }
    return "";
  }

  fs::path directory_;
};

TEST_F(OutputFolder, AFileWhereTheFolderBelongsIsRefusedByOptionAndPath) {
  const fs::path file = directory_ / "a_file";
  EXPECT_EQ(message_of(file), "-o " + file.string() + ": is a file, not a folder (-o names the folder of the export)");
}

TEST_F(OutputFolder, AFileAboveTheFolderIsNamed) {
  const fs::path under = directory_ / "a_file" / "deeper" / "out";
  EXPECT_EQ(message_of(under), "-o " + under.string() + ": " + (directory_ / "a_file").string() +
                                   " is a file, so no folder can be made under it");
}

TEST_F(OutputFolder, AFolderThatExistsOrCanBeMadePassesAndNothingIsCreated) {
  EXPECT_EQ(message_of(directory_), "");
  EXPECT_EQ(message_of(directory_ / "new" / "out"), "");
  EXPECT_FALSE(fs::exists(directory_ / "new"));
  EXPECT_EQ(message_of(fs::path()), "");
  EXPECT_EQ(message_of("relative/out"), "");
}

}  // namespace
}  // namespace kernlathe
