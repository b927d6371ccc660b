#pragma once
// The best configuration found per kernel, architecture and problem, kept as readable, diff-friendly JSON
// (results/best/<kernel>.json: pretty-printed, sorted keys, entries sorted by arch then problem) so that it can
// be committed and reviewed like source.
//
// Several tuning processes may share one directory: each update holds an exclusive flock() on
// <kernel>.json.lock across its read-modify-write and replaces the file by rename(), so no update is lost and
// a reader never sees half a file.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kernlathe {

struct BestEntry {
  std::string kernel;
  std::string arch;     // "sm_90"
  std::string problem;  // "N=1048576"
  std::map<std::string, std::string> configuration;  // parameter name -> value as text
  double time_ms = 0;
  std::string device_name;
  std::string date;       // ISO 8601
  std::string spec_hash;  // what the time was measured against
  double gflops = 0;      // 0 when the spec states no flop count
  double gbps = 0;

  bool operator==(const BestEntry&) const = default;
};

class BestCache {
 public:
  explicit BestCache(std::filesystem::path directory);

  // Stores entry when the cache has none for (kernel, arch, problem), when entry is faster, or when the stored
  // entry carries another spec_hash (it measured another version of the kernel and is stale). Returns whether
  // it stored. Creates the directory when missing. A kernel name that cannot be a file name -> InputError.
  bool update(const BestEntry& entry);

  // Entries of one kernel sorted by (arch, problem); empty when none. A corrupt file -> InputError.
  std::vector<BestEntry> entries(const std::string& kernel) const;
  std::optional<BestEntry> lookup(const std::string& kernel, const std::string& arch,
                                  const std::string& problem) const;

  std::filesystem::path file_for(const std::string& kernel) const;  // <directory>/<kernel>.json
  const std::filesystem::path& directory() const { return directory_; }

 private:
  std::filesystem::path directory_;
};

}  // namespace kernlathe
