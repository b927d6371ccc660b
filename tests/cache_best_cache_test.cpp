#include "tuner/cache/best_cache.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "tuner/common/error.h"

namespace kernlathe {
namespace {

class BestCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "best_cache_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    directory_ = root_ / "results" / "best";  // not created yet: update creates it
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::filesystem::path root_;
  std::filesystem::path directory_;
};

BestEntry entry(const std::string& problem, double time_ms, const std::string& spec_hash = "hash-a",
                const std::string& arch = "sm_90") {
  BestEntry best;
  best.kernel = "saxpy";
  best.arch = arch;
  best.problem = problem;
  best.configuration = {{"BLOCK", "256"}, {"VEC", "4"}, {"USE_SHMEM", "false"}};
  best.time_ms = time_ms;
  best.device_name = "NVIDIA H200";
  best.date = "2024-05-01T12:00:00Z";
  best.spec_hash = spec_hash;
  best.gflops = 12.5;
  best.gbps = 3900.25;
  return best;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream input(path);
  std::stringstream contents;
  contents << input.rdbuf();
  return contents.str();
}

TEST_F(BestCacheTest, FirstEntryIsStoredAndReadBackWhole) {
  BestCache cache(directory_);
  EXPECT_EQ(cache.lookup("saxpy", "sm_90", "N=1024"), std::nullopt);
  EXPECT_TRUE(cache.entries("saxpy").empty());
  BestEntry stored = entry("N=1024", 0.5);
  EXPECT_TRUE(cache.update(stored));
  std::optional<BestEntry> found = cache.lookup("saxpy", "sm_90", "N=1024");
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, stored);
  EXPECT_EQ(cache.lookup("saxpy", "sm_80", "N=1024"), std::nullopt);
  EXPECT_EQ(cache.lookup("saxpy", "sm_90", "N=2048"), std::nullopt);
  EXPECT_TRUE(std::filesystem::exists(directory_ / "saxpy.json"));
}

TEST_F(BestCacheTest, FasterReplacesSlowerDoesNotOtherHashReplaces) {
  BestCache cache(directory_);
  ASSERT_TRUE(cache.update(entry("N=1024", 0.5)));

  EXPECT_FALSE(cache.update(entry("N=1024", 0.6)));
  EXPECT_EQ(cache.lookup("saxpy", "sm_90", "N=1024")->time_ms, 0.5);
  EXPECT_FALSE(cache.update(entry("N=1024", 0.5)));  // a tie keeps the stored entry

  BestEntry faster = entry("N=1024", 0.4);
  faster.configuration["BLOCK"] = "128";
  EXPECT_TRUE(cache.update(faster));
  EXPECT_EQ(cache.lookup("saxpy", "sm_90", "N=1024")->configuration.at("BLOCK"), "128");

  // The stored time was measured against another version of the kernel: it no longer says anything.
  EXPECT_TRUE(cache.update(entry("N=1024", 0.9, "hash-b")));
  std::optional<BestEntry> found = cache.lookup("saxpy", "sm_90", "N=1024");
  EXPECT_EQ(found->time_ms, 0.9);
  EXPECT_EQ(found->spec_hash, "hash-b");
  EXPECT_EQ(cache.entries("saxpy").size(), 1u);
}

TEST_F(BestCacheTest, OneEntryPerArchAndProblemSortedInAReadableFile) {
  BestCache cache(directory_);
  cache.update(entry("N=4096", 1.0, "h", "sm_90"));
  cache.update(entry("N=1024", 1.0, "h", "sm_90"));
  cache.update(entry("N=1024", 1.0, "h", "sm_80"));
  std::vector<BestEntry> entries = cache.entries("saxpy");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].arch + " " + entries[0].problem, "sm_80 N=1024");
  EXPECT_EQ(entries[1].arch + " " + entries[1].problem, "sm_90 N=1024");
  EXPECT_EQ(entries[2].arch + " " + entries[2].problem, "sm_90 N=4096");

  std::string text = read_text(directory_ / "saxpy.json");
  nlohmann::json document = nlohmann::json::parse(text);
  EXPECT_EQ(document.at("kernel"), "saxpy");
  EXPECT_EQ(document.at("entries").size(), 3u);
  // Pretty-printed with sorted keys, so a re-tune shows up as a small diff.
  EXPECT_EQ(text, document.dump(2) + "\n");
  EXPECT_LT(text.find("\"arch\""), text.find("\"configuration\""));
  EXPECT_LT(text.find("\"configuration\""), text.find("\"time_ms\""));
}

TEST_F(BestCacheTest, KernelsHaveSeparateFiles) {
  BestCache cache(directory_);
  BestEntry other = entry("N=1024", 2.0);
  other.kernel = "transpose";
  cache.update(entry("N=1024", 1.0));
  cache.update(other);
  EXPECT_EQ(cache.entries("saxpy").size(), 1u);
  EXPECT_EQ(cache.lookup("transpose", "sm_90", "N=1024")->time_ms, 2.0);
  EXPECT_TRUE(std::filesystem::exists(directory_ / "transpose.json"));
}

TEST_F(BestCacheTest, CorruptFileAndBadKernelNameAreInputErrors) {
  BestCache cache(directory_);
  std::filesystem::create_directories(directory_);
  std::ofstream(directory_ / "saxpy.json") << "{ \"entries\": [ {\"arch\": ";
  EXPECT_THROW(cache.entries("saxpy"), InputError);
  EXPECT_THROW(cache.update(entry("N=1", 1.0)), InputError);
  BestEntry bad = entry("N=1", 1.0);
  bad.kernel = "../escape";
  EXPECT_THROW(cache.update(bad), InputError);
  EXPECT_THROW(cache.entries(""), InputError);
}

TEST_F(BestCacheTest, TwoConcurrentWriterProcessesLoseNothing) {
  constexpr int updates_per_process = 50;
  std::vector<pid_t> children;
  for (int process = 0; process < 2; ++process) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // In the child: no gtest assertions, only an exit status.
      int status = 0;
      try {
        BestCache cache(directory_);
        for (int update = 0; update < updates_per_process; ++update) {
          if (!cache.update(entry("N=" + std::to_string(process * 1000 + update), 1.0 + update))) status = 2;
        }
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  std::vector<BestEntry> entries = BestCache(directory_).entries("saxpy");
  ASSERT_EQ(entries.size(), 2u * updates_per_process);
  std::set<std::string> problems;
  for (const BestEntry& stored : entries) problems.insert(stored.problem);
  EXPECT_EQ(problems.size(), 2u * updates_per_process);
  EXPECT_TRUE(problems.contains("N=0"));
  EXPECT_TRUE(problems.contains("N=1049"));
  // No temporary file survives: only the cache and its lock file.
  std::set<std::string> files;
  for (const auto& file : std::filesystem::directory_iterator(directory_)) files.insert(file.path().filename());
  EXPECT_EQ(files, (std::set<std::string>{"saxpy.json", "saxpy.json.lock"}));
}

}  // namespace
}  // namespace kernlathe
