#include "tuner/measure/ceiling_cache.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <fstream>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/common/error.h"
#include "tuner/common/hash.h"

namespace kernlathe {
namespace {

std::string file_name(const CeilingCacheKey& key) {
  std::string readable;
  for (char c : key.device_name + "-" + key.arch) readable += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  // The hash tells apart drivers and names that sanitise alike.
  return fmt::format("{}-{}.json", readable, content_hash({key.device_name, key.arch, key.driver_version}).substr(0, 12));
}

}  // namespace

std::filesystem::path default_ceiling_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "kernlathe" / "ceilings";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "kernlathe" / "ceilings";
  return std::filesystem::temp_directory_path() / "kernlathe-ceilings";
}

std::optional<CachedCeilings> read_cached_ceilings(const std::filesystem::path& dir, const CeilingCacheKey& key,
                                                   double now, double max_age_seconds) {
  std::ifstream file(dir / file_name(key));
  if (!file) return std::nullopt;
  try {
    const nlohmann::json document = nlohmann::json::parse(file);
    if (document.at("device").get<std::string>() != key.device_name || document.at("arch").get<std::string>() != key.arch ||
        document.at("driver").get<std::string>() != key.driver_version)
      return std::nullopt;
    CachedCeilings entry;
    entry.measured_at = document.at("measured_at").get<double>();
    if (!(now - entry.measured_at <= max_age_seconds) || entry.measured_at > now + 60) return std::nullopt;
    entry.ceilings = ceilings_from_metadata(document.at("values").get<std::map<std::string, std::string>>());
    entry.ceilings.failures = document.value("failures", "");
    // An entry without the two roofline ceilings is no use to a report: measure again.
    if (!(entry.ceilings.copy_gbps > 0) || !(entry.ceilings.fma_gflops > 0)) return std::nullopt;
    return entry;
  } catch (const std::exception&) {
    return std::nullopt;  // a torn or foreign file: measured again and replaced
  }
}

void write_cached_ceilings(const std::filesystem::path& dir, const CeilingCacheKey& key, const CachedCeilings& entry) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw TunerError(fmt::format("cannot create the ceiling cache {}: {}", dir.string(), error.message()));
  const nlohmann::json document = {{"device", key.device_name},
                                   {"arch", key.arch},
                                   {"driver", key.driver_version},
                                   {"measured_at", entry.measured_at},
                                   {"values", ceiling_metadata(entry.ceilings)},
                                   {"failures", entry.ceilings.failures}};
  const std::filesystem::path target = dir / file_name(key);
  // Unique per process and per thread: problems of a sweep tuned at once on GPUs of one model may store the same
  // entry together, and each must rename a whole file of its own into place.
  static std::atomic<std::uint64_t> counter{0};
  const std::filesystem::path temporary =
      target.string() + fmt::format(".tmp{}.{}", static_cast<long>(::getpid()), counter.fetch_add(1));
  {
    std::ofstream file(temporary, std::ios::trunc);
    file << document.dump(2) << "\n";
    if (!file) throw TunerError(fmt::format("cannot write {}", temporary.string()));
  }
  std::filesystem::rename(temporary, target, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw TunerError(fmt::format("cannot write {}", target.string()));
  }
}

std::optional<PinnedCopyCeiling> pinned_copy_ceiling(const Ceilings& ceilings, bool from_cache, double measured_at) {
  if (!(ceilings.pinned_h2d_gbps > 0)) return std::nullopt;
  if (!from_cache) return PinnedCopyCeiling{ceilings.pinned_h2d_gbps, "the ceilings measured in this run"};
  const auto when = static_cast<std::time_t>(measured_at);
  return PinnedCopyCeiling{ceilings.pinned_h2d_gbps,
                           fmt::format("the ceiling cache, measured {:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(when))};
}

}  // namespace kernlathe
