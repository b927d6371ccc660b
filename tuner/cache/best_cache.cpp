#include "tuner/cache/best_cache.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>
#include <tuple>

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tuner/common/error.h"

namespace kernlathe {

namespace {

using nlohmann::json;

std::string system_message() { return std::generic_category().message(errno); }

void check_kernel_name(const std::string& kernel) {
  if (kernel.empty() || kernel == "." || kernel == ".." ||
      kernel.find_first_of("/\\") != std::string::npos || kernel.find('\0') != std::string::npos) {
    throw InputError(fmt::format("kernel name '{}' cannot name a best-configuration file: it must be non-empty "
                                 "and contain no path separator",
                                 kernel));
  }
}

std::optional<KernelDatabase> read_file(const std::filesystem::path& file) {
  std::error_code error;
  if (!std::filesystem::exists(file, error)) return std::nullopt;
  try {
    return read_database(file);
  } catch (const DatabaseError& failure) {
    throw InputError(SourceLocation{file.string()}, fmt::format("not a readable best-configuration file ({}); fix or "
                                                                "delete it", failure.what()));
  }
}

// Same directory as the target, so rename() is atomic (no cross-filesystem copy).
void write_atomically(const std::filesystem::path& file, const std::string& text) {
  std::string pattern = (file.parent_path() / (file.filename().string() + ".XXXXXX")).string();
  int descriptor = ::mkstemp(pattern.data());
  if (descriptor < 0) throw TunerError(fmt::format("{}: cannot create a temporary file: {}", pattern, system_message()));
  std::string_view remaining = text;
  while (!remaining.empty()) {
    ssize_t written = ::write(descriptor, remaining.data(), remaining.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) {
      std::string reason = system_message();
      ::close(descriptor);
      ::unlink(pattern.c_str());
      throw TunerError(fmt::format("{}: write failed: {}", pattern, reason));
    }
    remaining.remove_prefix(static_cast<std::size_t>(written));
  }
  // mkstemp creates 0600; the cache is meant to be shared and committed like any other file.
  ::fchmod(descriptor, 0644);
  ::fsync(descriptor);
  ::close(descriptor);
  if (::rename(pattern.c_str(), file.c_str()) != 0) {
    std::string reason = system_message();
    ::unlink(pattern.c_str());
    throw TunerError(fmt::format("{}: cannot replace: {}", file.string(), reason));
  }
}

class ExclusiveLock {
 public:
  explicit ExclusiveLock(const std::filesystem::path& path) {
    descriptor_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (descriptor_ < 0) throw TunerError(fmt::format("{}: cannot open the lock file: {}", path.string(), system_message()));
    while (::flock(descriptor_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      std::string reason = system_message();
      ::close(descriptor_);
      throw TunerError(fmt::format("{}: cannot lock: {}", path.string(), reason));
    }
  }
  ~ExclusiveLock() {
    ::flock(descriptor_, LOCK_UN);
    ::close(descriptor_);
  }
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;

 private:
  int descriptor_ = -1;
};

}  // namespace

BestCache::BestCache(std::filesystem::path directory) : directory_(std::move(directory)) {}

std::filesystem::path BestCache::file_for(const std::string& kernel) const {
  check_kernel_name(kernel);
  return directory_ / (kernel + ".json");
}

bool BestCache::update(const KernelDescription& description, const DatabaseEntry& entry, Replace replace) {
  std::filesystem::path file = file_for(description.kernel);
  std::filesystem::create_directories(directory_);
  std::filesystem::path lock_path = file;
  lock_path += ".lock";
  ExclusiveLock lock(lock_path);

  KernelDatabase database = read_file(file).value_or(KernelDatabase{});
  database.kernel = description.kernel;
  database.description = description;  // the newest spec; entries measured against another one are now stale
  auto existing = std::find_if(database.entries.begin(), database.entries.end(), [&](const DatabaseEntry& stored) {
    return stored.arch == entry.arch && stored.device_name == entry.device_name && stored.problem == entry.problem;
  });
  if (existing != database.entries.end()) {
    bool stale = !stale_reason(database, *existing).empty();
    if (!stale && replace == Replace::when_faster && !(entry.time.median_ms < existing->time.median_ms)) return false;
    *existing = entry;
  } else {
    database.entries.push_back(entry);
  }
  write_atomically(file, database_json(database));
  return true;
}

KernelDatabase BestCache::refresh_description(const KernelDescription& description) {
  std::filesystem::path file = file_for(description.kernel);
  std::filesystem::path lock_path = file;
  lock_path += ".lock";
  const InputError nothing_stored(SourceLocation{file.string()}, "no database to refresh: the kernel has no stored entries");
  if (!std::filesystem::exists(file)) throw nothing_stored;  // before the lock, which would create the directory's file
  ExclusiveLock lock(lock_path);
  std::optional<KernelDatabase> stored = read_file(file);
  if (!stored) throw nothing_stored;
  KernelDatabase refreshed = *stored;
  refreshed.description = description;
  int staled = 0;
  std::string example;
  for (const DatabaseEntry& entry : stored->entries) {
    if (!stale_reason(*stored, entry).empty()) continue;
    std::string now = stale_reason(refreshed, entry);
    if (now.empty()) continue;
    if (staled++ == 0) example = fmt::format("the entry of {} ({}) for {}: {}", entry.device_name, entry.arch,
                                             problem_text(stored->description, entry.problem), now);
  }
  if (staled > 0) {
    throw InputError(SourceLocation{file.string()},
                     fmt::format("refreshing the description would make {} current entr{} stale, e.g. {}; the spec, "
                                 "its space or the template changed since they were measured: tune the kernel again",
                                 staled, staled == 1 ? "y" : "ies", example));
  }
  write_atomically(file, database_json(refreshed));
  return *stored;
}

std::optional<KernelDatabase> BestCache::read(const std::string& kernel) const {
  // No lock: rename() makes every read see either the old or the new complete file.
  return read_file(file_for(kernel));
}

KeepOrReplace decide_keep_or_replace(const std::optional<SideBySideTime>& winner,
                                     const std::optional<SideBySideTime>& stored, bool winner_is_stored) {
  KeepOrReplace decision;
  if (!winner || !stored) return decision;  // only the stored figure to go by
  decision.replace = BestCache::Replace::always;
  if (winner_is_stored) {
    decision.reason = "the stored configuration won the final round again: its figures refreshed";
    return decision;
  }
  if (winner->high_ms < stored->low_ms) {
    decision.reason = fmt::format("replaced: {:.4g} ms [{:.4g}, {:.4g}] is faster beyond the noise than the stored "
                                  "configuration's {:.4g} ms [{:.4g}, {:.4g}]",
                                  winner->mean_ms, winner->low_ms, winner->high_ms, stored->mean_ms, stored->low_ms,
                                  stored->high_ms);
    return decision;
  }
  decision.store = KeepOrReplace::Store::stored_configuration;
  decision.reason = fmt::format("kept the stored configuration: {:.4g} ms [{:.4g}, {:.4g}] against the winner's "
                                "{:.4g} ms [{:.4g}, {:.4g}], within the noise",
                                stored->mean_ms, stored->low_ms, stored->high_ms, winner->mean_ms, winner->low_ms,
                                winner->high_ms);
  return decision;
}

}  // namespace kernlathe
