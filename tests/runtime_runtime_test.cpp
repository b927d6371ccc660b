// The Runtime's databases without a GPU: files and folders are read on construction, a corrupt or missing one is
// reported (warnings) while the others stay usable, and asking for a kernel no database knows names the known
// kernels and the files that could not be read. Selection and launching need a device: tests/gpu/runtime_device_test.
#include "kernlathe/runtime.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace kernlathe {
namespace {

KernelDatabase small_database(const std::string& kernel) {
  KernelDatabase database;
  database.kernel = kernel;
  database.description.kernel = kernel;
  database.description.template_name = kernel + ".cu";
  database.description.template_hash = "0000000000000000";
  database.description.spec_hash = "current";
  database.description.entry_point = kernel;
  DatabaseEntry entry;
  entry.device_name = "NVIDIA H200";
  entry.arch = "sm_90";
  entry.spec_hash = "current";
  database.entries = {entry};
  return database;
}

class RuntimeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() / ("kernlathe-runtime-files-" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory_);
    std::ofstream(directory_ / "saxpy.json") << database_json(small_database("saxpy"));
    std::ofstream(directory_ / "broken.json") << "{\"format\": 2, \"kernel\": ";
    std::ofstream(directory_ / "saxpy.source.json") << "{}";  // a source bundle beside the databases is not one
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::filesystem::path directory_;
};

TEST_F(RuntimeFiles, CorruptFileIsReportedAndTheOthersStayUsable) {
  RuntimeOptions options;
  options.databases = {directory_, directory_ / "missing.json"};
  Runtime runtime(options);
  // Kernels other tests of this binary embedded may be listed too (the registry is process-wide); "broken" is not.
  std::vector<std::string> kernels = runtime.kernels();
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "saxpy"), kernels.end());
  EXPECT_EQ(std::find(kernels.begin(), kernels.end(), "broken"), kernels.end());
  EXPECT_EQ(runtime.database("saxpy").entries.size(), 1u);
  ASSERT_EQ(runtime.warnings().size(), 2u);
  EXPECT_NE(runtime.warnings()[0].find("broken.json: not valid JSON"), std::string::npos) << runtime.warnings()[0];
  EXPECT_NE(runtime.warnings()[1].find("missing.json: no such file or directory"), std::string::npos) << runtime.warnings()[1];
  try {
    runtime.database("softmax");
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("no database knows the kernel 'softmax' (known: "), std::string::npos) << message;
    EXPECT_NE(message.find("saxpy"), std::string::npos) << message;
    EXPECT_NE(message.find("not read: " + (directory_ / "broken.json").string()), std::string::npos) << message;
  }
}

TEST_F(RuntimeFiles, TheSameKernelInTwoFilesKeepsTheFirstDescriptionAndBothEntries) {
  std::filesystem::create_directories(directory_ / "second");
  KernelDatabase other = small_database("saxpy");
  other.description.spec_hash = "other";
  other.entries[0].device_name = "NVIDIA H100 80GB HBM3";
  other.entries[0].spec_hash = "other";
  std::ofstream(directory_ / "second" / "saxpy.json") << database_json(other);
  RuntimeOptions options;
  options.databases = {directory_ / "saxpy.json", directory_ / "second"};
  Runtime runtime(options);
  const KernelDatabase& merged = runtime.database("saxpy");
  EXPECT_EQ(merged.description.spec_hash, "current");
  ASSERT_EQ(merged.entries.size(), 2u);
  // The second file's entry was measured against another description: stale here, passed over by selection.
  EXPECT_NE(stale_reason(merged, merged.entries[1]), "");
  EXPECT_EQ(stale_reason(merged, merged.entries[0]), "");
}

TEST(RuntimeOptionsTest, FromExportNamesTheThreeFolders) {
  RuntimeOptions options = RuntimeOptions::from_export("ship");
  EXPECT_EQ(options.databases, std::vector<std::filesystem::path>{"ship/database"});
  EXPECT_EQ(options.sources, "ship/sources");
  EXPECT_EQ(options.cubins, "ship/cubins");
  EXPECT_STREQ(version(), KERNLATHE_VERSION_STRING);
}

}  // namespace
}  // namespace kernlathe
