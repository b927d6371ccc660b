#include "tuner/measure/ceiling_cache.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kernlathe {
namespace {

class CeilingCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kernlathe-ceiling-cache-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static CachedCeilings h200() {
    CachedCeilings entry;
    entry.ceilings.copy_gbps = 4313.3;
    entry.ceilings.pinned_h2d_gbps = 55.1;
    entry.ceilings.fma_gflops = 66900;
    entry.ceilings.tensor_gflops = 762000;
    entry.ceilings.tensor_source = "cuBLAS 13.0.2 bf16 8192^3";
    entry.measured_at = 1.8e9;
    return entry;
  }

  std::filesystem::path dir_;
  const CeilingCacheKey key_{"NVIDIA H200", "sm_90", "580.159.04"};
};

TEST_F(CeilingCache, AnEntryReadsBackWithinAWeekAndNotAfter) {
  EXPECT_FALSE(read_cached_ceilings(dir_, key_, 1.8e9).has_value());  // nothing cached yet
  write_cached_ceilings(dir_, key_, h200());
  std::optional<CachedCeilings> read = read_cached_ceilings(dir_, key_, 1.8e9 + 3600);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->ceilings, h200().ceilings);
  EXPECT_EQ(read->measured_at, 1.8e9);
  EXPECT_TRUE(read_cached_ceilings(dir_, key_, 1.8e9 + 6.9 * 24 * 3600).has_value());
  EXPECT_FALSE(read_cached_ceilings(dir_, key_, 1.8e9 + 7.1 * 24 * 3600).has_value());  // stale: measure again
  EXPECT_FALSE(read_cached_ceilings(dir_, key_, 1.8e9 - 3600).has_value());  // measured "in the future": a clock jump
}

TEST_F(CeilingCache, AnotherDriverOrGpuDoesNotReadTheEntry) {
  write_cached_ceilings(dir_, key_, h200());
  EXPECT_FALSE(read_cached_ceilings(dir_, {"NVIDIA H200", "sm_90", "590.10"}, 1.8e9).has_value());
  EXPECT_FALSE(read_cached_ceilings(dir_, {"NVIDIA H100 80GB HBM3", "sm_90", "580.159.04"}, 1.8e9).has_value());
}

TEST_F(CeilingCache, TornOrIncompleteFilesAreTreatedAsMissing) {
  write_cached_ceilings(dir_, key_, h200());
  ASSERT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
  const std::filesystem::path file = std::filesystem::directory_iterator(dir_)->path();
  std::ofstream(file, std::ios::trunc) << "{\"device\": \"NVIDIA H2";  // torn
  EXPECT_FALSE(read_cached_ceilings(dir_, key_, 1.8e9).has_value());
  CachedCeilings without_fma = h200();
  without_fma.ceilings.fma_gflops = 0;  // a roofline needs it: such an entry is measured again
  write_cached_ceilings(dir_, key_, without_fma);
  EXPECT_FALSE(read_cached_ceilings(dir_, key_, 1.8e9).has_value());
  write_cached_ceilings(dir_, key_, h200());  // replaced whole
  EXPECT_TRUE(read_cached_ceilings(dir_, key_, 1.8e9).has_value());
}

// A streamed spec's pinned copy ceiling is the ceilings' (cached or just measured), never measured twice; the run
// says which.
TEST(PinnedCopyCeiling, ComesFromTheCeilingsAndSaysWhence) {
  Ceilings ceilings;
  ceilings.copy_gbps = 4240;
  ceilings.pinned_h2d_gbps = 55.4;
  std::optional<PinnedCopyCeiling> cached = pinned_copy_ceiling(ceilings, true, 1795517043);  // 2026-11-24 10:44:03
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->gbps, 55.4);
  EXPECT_EQ(cached->source, "the ceiling cache, measured 2026-11-24T10:44:03Z");
  std::optional<PinnedCopyCeiling> measured = pinned_copy_ceiling(ceilings, false, 1795517043);
  ASSERT_TRUE(measured.has_value());
  EXPECT_EQ(measured->gbps, 55.4);
  EXPECT_EQ(measured->source, "the ceilings measured in this run");
  ceilings.pinned_h2d_gbps = 0;  // not measured (a failure): the run measures it itself
  EXPECT_FALSE(pinned_copy_ceiling(ceilings, true, 1795517043).has_value());
}

}  // namespace
}  // namespace kernlathe
