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

KernelDescription description(const std::string& kernel = "saxpy", const std::string& spec_hash = "hash-a") {
  KernelDescription described;
  described.kernel = kernel;
  described.spec_hash = spec_hash;
  described.entry_point = kernel;
  described.problem = {{"N", 1024}};
  return described;
}

DatabaseEntry entry(std::int64_t n, double time_ms, const std::string& spec_hash = "hash-a",
                    const std::string& arch = "sm_90", const std::string& device = "NVIDIA H200") {
  DatabaseEntry best;
  best.arch = arch;
  best.device_name = device;
  best.problem = {{"N", n}};
  best.configuration = {{"BLOCK", std::int64_t{256}}, {"VEC", std::int64_t{4}}, {"USE_SHMEM", false}, {"LAYOUT", std::string("row")}};
  best.time = {time_ms, 0.01, 50};
  best.date = "2024-05-01T12:00:00Z";
  best.spec_hash = spec_hash;
  best.gflops = 12.5;
  best.gbps = 3900.25;
  return best;
}

std::optional<DatabaseEntry> lookup(const BestCache& cache, const std::string& kernel, const std::string& arch,
                                    std::int64_t n, const std::string& device = "NVIDIA H200") {
  std::optional<KernelDatabase> database = cache.read(kernel);
  if (!database) return std::nullopt;
  for (const DatabaseEntry& stored : database->entries)
    if (stored.arch == arch && stored.device_name == device && stored.problem == Problem{{"N", n}}) return stored;
  return std::nullopt;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream input(path);
  std::stringstream contents;
  contents << input.rdbuf();
  return contents.str();
}

TEST_F(BestCacheTest, FirstEntryIsStoredAndReadBackWholeWithTypedValues) {
  BestCache cache(directory_);
  EXPECT_EQ(cache.read("saxpy"), std::nullopt);
  DatabaseEntry stored = entry(1024, 0.5);
  EXPECT_TRUE(cache.update(description(), stored));
  std::optional<DatabaseEntry> found = lookup(cache, "saxpy", "sm_90", 1024);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, stored);
  // Values keep their types through the file: an integer, a boolean and an enumeration string.
  EXPECT_EQ(found->configuration.at("BLOCK"), Value{std::int64_t{256}});
  EXPECT_EQ(found->configuration.at("USE_SHMEM"), Value{false});
  EXPECT_EQ(found->configuration.at("LAYOUT"), Value{std::string("row")});
  EXPECT_EQ(cache.read("saxpy")->description.spec_hash, "hash-a");
  EXPECT_EQ(lookup(cache, "saxpy", "sm_80", 1024), std::nullopt);
  EXPECT_EQ(lookup(cache, "saxpy", "sm_90", 2048), std::nullopt);
  EXPECT_TRUE(std::filesystem::exists(directory_ / "saxpy.json"));
}

TEST_F(BestCacheTest, FasterReplacesSlowerDoesNotStaleIsReplaced) {
  BestCache cache(directory_);
  ASSERT_TRUE(cache.update(description(), entry(1024, 0.5)));

  EXPECT_FALSE(cache.update(description(), entry(1024, 0.6)));
  EXPECT_EQ(lookup(cache, "saxpy", "sm_90", 1024)->time.median_ms, 0.5);
  EXPECT_FALSE(cache.update(description(), entry(1024, 0.5)));  // a tie keeps the stored entry

  DatabaseEntry faster = entry(1024, 0.4);
  faster.configuration["BLOCK"] = std::int64_t{128};
  EXPECT_TRUE(cache.update(description(), faster));
  EXPECT_EQ(lookup(cache, "saxpy", "sm_90", 1024)->configuration.at("BLOCK"), Value{std::int64_t{128}});

  // The stored time was measured against another version of the kernel: it no longer says anything.
  EXPECT_TRUE(cache.update(description("saxpy", "hash-b"), entry(1024, 0.9, "hash-b")));
  std::optional<DatabaseEntry> found = lookup(cache, "saxpy", "sm_90", 1024);
  EXPECT_EQ(found->time.median_ms, 0.9);
  EXPECT_EQ(found->spec_hash, "hash-b");
  EXPECT_EQ(cache.read("saxpy")->entries.size(), 1u);
}

TEST_F(BestCacheTest, ACallerThatMeasuredBothSideBySideDecides) {
  // A final round measured the stored configuration beside the new one: its figures replace a lucky stored time.
  BestCache cache(directory_);
  ASSERT_TRUE(cache.update(description(), entry(1024, 0.40)));
  EXPECT_FALSE(cache.update(description(), entry(1024, 0.45)));
  EXPECT_TRUE(cache.update(description(), entry(1024, 0.45), BestCache::Replace::always));
  EXPECT_EQ(lookup(cache, "saxpy", "sm_90", 1024)->time.median_ms, 0.45);
}

TEST_F(BestCacheTest, OneEntryPerDeviceArchAndProblemSortedInAReadableFile) {
  BestCache cache(directory_);
  cache.update(description(), entry(4096, 1.0, "hash-a", "sm_90"));
  cache.update(description(), entry(1024, 1.0, "hash-a", "sm_90"));
  cache.update(description(), entry(1024, 1.0, "hash-a", "sm_80", "NVIDIA A100"));
  cache.update(description(), entry(1024, 1.5, "hash-a", "sm_90", "NVIDIA H100"));
  std::vector<DatabaseEntry> entries = cache.read("saxpy")->entries;
  ASSERT_EQ(entries.size(), 4u);
  std::string text = read_text(directory_ / "saxpy.json");
  nlohmann::json document = nlohmann::json::parse(text);
  EXPECT_EQ(document.at("kernel"), "saxpy");
  EXPECT_EQ(document.at("format"), 2);
  ASSERT_EQ(document.at("entries").size(), 4u);
  // Sorted by arch, device, problem; pretty-printed with sorted keys, so a re-tune shows up as a small diff.
  EXPECT_EQ(document.at("entries")[0].at("arch"), "sm_80");
  EXPECT_EQ(document.at("entries")[1].at("device_name"), "NVIDIA H100");
  EXPECT_EQ(document.at("entries")[2].at("problem"), "N=1024");
  EXPECT_EQ(document.at("entries")[3].at("problem"), "N=4096");
  EXPECT_EQ(text, document.dump(2) + "\n");
}

TEST_F(BestCacheTest, KernelsHaveSeparateFiles) {
  BestCache cache(directory_);
  cache.update(description(), entry(1024, 1.0));
  cache.update(description("transpose"), entry(1024, 2.0));
  EXPECT_EQ(cache.read("saxpy")->entries.size(), 1u);
  EXPECT_EQ(lookup(cache, "transpose", "sm_90", 1024)->time.median_ms, 2.0);
  EXPECT_TRUE(std::filesystem::exists(directory_ / "transpose.json"));
}

TEST_F(BestCacheTest, CorruptFileAndBadKernelNameAreInputErrors) {
  BestCache cache(directory_);
  std::filesystem::create_directories(directory_);
  std::ofstream(directory_ / "saxpy.json") << "{ \"entries\": [ {\"arch\": ";
  try {
    cache.read("saxpy");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("saxpy.json"), std::string::npos) << error.what();
  }
  EXPECT_THROW(cache.update(description(), entry(1, 1.0)), InputError);
  EXPECT_THROW(cache.update(description("../escape"), entry(1, 1.0)), InputError);
  EXPECT_THROW(cache.read(""), InputError);
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
          if (!cache.update(description(), entry(process * 1000 + update, 1.0 + update))) status = 2;
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
  std::vector<DatabaseEntry> entries = BestCache(directory_).read("saxpy")->entries;
  ASSERT_EQ(entries.size(), 2u * updates_per_process);
  std::set<std::int64_t> problems;
  for (const DatabaseEntry& stored : entries) problems.insert(stored.problem.at("N"));
  EXPECT_EQ(problems.size(), 2u * updates_per_process);
  EXPECT_TRUE(problems.contains(0));
  EXPECT_TRUE(problems.contains(1049));
  // No temporary file survives: only the cache and its lock file.
  std::set<std::string> files;
  for (const auto& file : std::filesystem::directory_iterator(directory_)) files.insert(file.path().filename());
  EXPECT_EQ(files, (std::set<std::string>{"saxpy.json", "saxpy.json.lock"}));
}

TEST_F(BestCacheTest, RefreshingTheDescriptionKeepsEveryEntry) {
  BestCache cache(directory_);
  EXPECT_THROW(cache.refresh_description(description()), InputError);  // nothing stored yet
  ASSERT_TRUE(cache.update(description(), entry(1024, 0.5)));
  ASSERT_TRUE(cache.update(description(), entry(4096, 0.9, "an older spec")));
  const std::string before = read_text(directory_ / "saxpy.json");
  KernelDescription refreshed = description();
  refreshed.problem_defaults = {{"N <= 2048", {{"BLOCK", std::int64_t{64}}}}};
  const KernelDatabase old = cache.refresh_description(refreshed);
  EXPECT_TRUE(old.description.problem_defaults.empty());
  const KernelDatabase now = *cache.read("saxpy");
  EXPECT_EQ(now.description.problem_defaults, refreshed.problem_defaults);
  EXPECT_EQ(now.entries, old.entries);
  EXPECT_NE(read_text(directory_ / "saxpy.json"), before);
  // Back without problem defaults: the file as it was, byte for byte.
  cache.refresh_description(description());
  EXPECT_EQ(read_text(directory_ / "saxpy.json"), before);
}

TEST_F(BestCacheTest, ARefreshThatWouldStaleACurrentEntryIsRefused) {
  BestCache cache(directory_);
  ASSERT_TRUE(cache.update(description(), entry(1024, 0.5)));
  const std::string before = read_text(directory_ / "saxpy.json");
  try {
    cache.refresh_description(description("saxpy", "hash-b"));
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("would make 1 current entry stale, e.g. the entry of NVIDIA H200 (sm_90) "
                                             "for N=1024: measured against spec hash hash-a, the kernel is now hash-b"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(read_text(directory_ / "saxpy.json"), before);
}

TEST(KeepOrReplace, TheWinnerReplacesOnlyWhenFasterBeyondTheNoise) {
  const SideBySideTime stored{1.00, 0.98, 1.02};
  const KeepOrReplace clear = decide_keep_or_replace(SideBySideTime{0.90, 0.89, 0.91}, stored, false);
  EXPECT_EQ(clear.store, KeepOrReplace::Store::winner);
  EXPECT_EQ(clear.replace, BestCache::Replace::always);
  EXPECT_NE(clear.reason.find("replaced: 0.9 ms"), std::string::npos) << clear.reason;

  // Intervals overlap (0.97..0.99 against 0.98..1.02): the stored configuration stays, with this round's figures.
  const KeepOrReplace within = decide_keep_or_replace(SideBySideTime{0.98, 0.97, 0.99}, stored, false);
  EXPECT_EQ(within.store, KeepOrReplace::Store::stored_configuration);
  EXPECT_EQ(within.replace, BestCache::Replace::always);
  EXPECT_NE(within.reason.find("kept the stored configuration: 1 ms [0.98, 1.02]"), std::string::npos) << within.reason;
}

TEST(KeepOrReplace, TheStoredWinnerIsRefreshedAndWithoutFiguresTheStoredTimeDecides) {
  const SideBySideTime figures{1.00, 0.98, 1.02};
  const KeepOrReplace again = decide_keep_or_replace(figures, figures, true);
  EXPECT_EQ(again.store, KeepOrReplace::Store::winner);
  EXPECT_EQ(again.replace, BestCache::Replace::always);
  EXPECT_NE(again.reason.find("won the final round again"), std::string::npos);

  for (const KeepOrReplace& alone : {decide_keep_or_replace(figures, std::nullopt, false),
                                     decide_keep_or_replace(std::nullopt, figures, false)}) {
    EXPECT_EQ(alone.store, KeepOrReplace::Store::winner);
    EXPECT_EQ(alone.replace, BestCache::Replace::when_faster);
    EXPECT_TRUE(alone.reason.empty());
  }
}

}  // namespace
}  // namespace kernlathe
