#pragma once
// Ceilings (ceilings.h) are properties of a GPU model and its driver, and measuring them takes about a second. A
// run measures them once per GPU model and driver and keeps them here for a week; `tune ceilings` always measures
// afresh and refreshes the entry. The copy ceiling that memory-bound results are reported against is measured in
// every run regardless (measure_copy_gbps, 10 ms).
//
// One JSON file per GPU model, driver and arch in the cache folder, written whole to a temporary name and renamed,
// so a reader never sees half a file. An unreadable or foreign file is treated as missing and replaced.

#include <filesystem>
#include <optional>
#include <string>

#include "tuner/measure/ceilings.h"

namespace kernlathe {

struct CeilingCacheKey {
  std::string device_name;     // "NVIDIA H200"
  std::string arch;            // "sm_90"
  std::string driver_version;  // "580.159.04"; empty without NVML
};

struct CachedCeilings {
  Ceilings ceilings;
  double measured_at = 0;  // seconds since the epoch
};

// $XDG_CACHE_HOME/kernlathe/ceilings, else ~/.cache/kernlathe/ceilings, else a folder under the temporary directory.
std::filesystem::path default_ceiling_cache_dir();

inline constexpr double ceiling_cache_max_age_seconds = 7 * 24 * 3600.0;

// The entry for key measured at most max_age_seconds before now (seconds since the epoch), if there is one.
std::optional<CachedCeilings> read_cached_ceilings(const std::filesystem::path& dir, const CeilingCacheKey& key,
                                                   double now, double max_age_seconds = ceiling_cache_max_age_seconds);
// Throws TunerError when the folder or file cannot be written.
void write_cached_ceilings(const std::filesystem::path& dir, const CeilingCacheKey& key, const CachedCeilings& entry);

// Streamed specs report their passes against one large pinned host-to-device copy (loader::
// measure_pinned_copy_in_gbps, 512 MiB). The ceilings hold that very measurement, so a run takes it from them,
// cached or measured in this run, instead of measuring it again: that took 0.33-0.47 s of a streamed spec's
// start-up on the H200. `source` says where the figure came from ("the ceilings measured in this run", "the
// ceiling cache, measured 2026-11-24T10:44:03Z"). Nothing when the ceilings lack it: the run measures it itself.
struct PinnedCopyCeiling {
  double gbps = 0;
  std::string source;
};
std::optional<PinnedCopyCeiling> pinned_copy_ceiling(const Ceilings& ceilings, bool from_cache, double measured_at);

}  // namespace kernlathe
