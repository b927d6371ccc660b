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

// Bumped when the layout changes incompatibly; readers reject files of a newer format instead of misreading.
constexpr int cache_format = 1;

std::string system_message() { return std::generic_category().message(errno); }

void check_kernel_name(const std::string& kernel) {
  if (kernel.empty() || kernel == "." || kernel == ".." ||
      kernel.find_first_of("/\\") != std::string::npos || kernel.find('\0') != std::string::npos) {
    throw InputError(fmt::format("kernel name '{}' cannot name a best-configuration file: it must be non-empty "
                                 "and contain no path separator",
                                 kernel));
  }
}

json entry_to_json(const BestEntry& entry) {
  return json{
      {"arch", entry.arch},
      {"problem", entry.problem},
      {"configuration", entry.configuration},
      {"time_ms", entry.time_ms},
      {"device_name", entry.device_name},
      {"date", entry.date},
      {"spec_hash", entry.spec_hash},
      {"gflops", entry.gflops},
      {"gbps", entry.gbps},
  };
}

BestEntry entry_from_json(const json& object, const std::string& kernel) {
  BestEntry entry;
  entry.kernel = kernel;
  entry.arch = object.at("arch").get<std::string>();
  entry.problem = object.at("problem").get<std::string>();
  entry.configuration = object.at("configuration").get<std::map<std::string, std::string>>();
  entry.time_ms = object.at("time_ms").get<double>();
  entry.device_name = object.value("device_name", "");
  entry.date = object.value("date", "");
  entry.spec_hash = object.value("spec_hash", "");
  entry.gflops = object.value("gflops", 0.0);
  entry.gbps = object.value("gbps", 0.0);
  return entry;
}

std::vector<BestEntry> read_entries(const std::filesystem::path& file, const std::string& kernel) {
  std::ifstream input(file);
  if (!input) return {};
  std::stringstream contents;
  contents << input.rdbuf();
  try {
    json document = json::parse(contents.str());
    int format = document.value("format", cache_format);
    if (format > cache_format) {
      throw InputError(SourceLocation{file.string()},
                       fmt::format("format {} is newer than this tuner understands ({})", format, cache_format));
    }
    std::vector<BestEntry> entries;
    for (const json& object : document.at("entries")) entries.push_back(entry_from_json(object, kernel));
    return entries;
  } catch (const json::exception& error) {
    throw InputError(SourceLocation{file.string()},
                     fmt::format("not a best-configuration file: {}; fix or delete it", error.what()));
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

auto sort_key(const BestEntry& entry) { return std::tie(entry.arch, entry.problem); }

}  // namespace

BestCache::BestCache(std::filesystem::path directory) : directory_(std::move(directory)) {}

std::filesystem::path BestCache::file_for(const std::string& kernel) const {
  check_kernel_name(kernel);
  return directory_ / (kernel + ".json");
}

bool BestCache::update(const BestEntry& entry) {
  std::filesystem::path file = file_for(entry.kernel);
  std::filesystem::create_directories(directory_);
  std::filesystem::path lock_path = file;
  lock_path += ".lock";
  ExclusiveLock lock(lock_path);

  std::vector<BestEntry> entries = read_entries(file, entry.kernel);
  auto existing = std::find_if(entries.begin(), entries.end(), [&](const BestEntry& stored) {
    return stored.arch == entry.arch && stored.problem == entry.problem;
  });
  if (existing != entries.end()) {
    bool stale = existing->spec_hash != entry.spec_hash;
    if (!stale && !(entry.time_ms < existing->time_ms)) return false;
    *existing = entry;
  } else {
    entries.push_back(entry);
  }
  std::sort(entries.begin(), entries.end(),
            [](const BestEntry& a, const BestEntry& b) { return sort_key(a) < sort_key(b); });

  json list = json::array();
  for (const BestEntry& stored : entries) list.push_back(entry_to_json(stored));
  json document{{"format", cache_format}, {"kernel", entry.kernel}, {"entries", list}};
  write_atomically(file, document.dump(2) + "\n");
  return true;
}

std::vector<BestEntry> BestCache::entries(const std::string& kernel) const {
  // No lock: rename() makes every read see either the old or the new complete file.
  std::vector<BestEntry> entries = read_entries(file_for(kernel), kernel);
  std::sort(entries.begin(), entries.end(),
            [](const BestEntry& a, const BestEntry& b) { return sort_key(a) < sort_key(b); });
  return entries;
}

std::optional<BestEntry> BestCache::lookup(const std::string& kernel, const std::string& arch,
                                           const std::string& problem) const {
  for (BestEntry& entry : entries(kernel)) {
    if (entry.arch == arch && entry.problem == problem) return std::move(entry);
  }
  return std::nullopt;
}

}  // namespace kernlathe
