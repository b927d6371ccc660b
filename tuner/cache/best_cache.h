#pragma once
// The best configuration found per kernel, device, architecture and problem, kept as readable, diff-friendly JSON
// in the database format the runtime library reads (kernlathe/database.h; results/best/<kernel>.json:
// pretty-printed, sorted keys, entries sorted by arch, device and problem) so that it can be committed and reviewed
// like source, and exported to applications with `tune export`.
//
// Several tuning processes may share one directory: each update holds an exclusive flock() on
// <kernel>.json.lock across its read-modify-write and replaces the file by rename(), so no update is lost and
// a reader never sees half a file.

#include <filesystem>
#include <optional>
#include <string>

#include "kernlathe/database.h"

namespace kernlathe {

class BestCache {
 public:
  explicit BestCache(std::filesystem::path directory);

  // when_faster: the caller knows only the stored figure. always: the caller measured the stored configuration
  // beside the new one in the same run (a final round) and decided.
  enum class Replace { when_faster, always };

  // Stores entry, with description as the kernel's description, when the database has no entry for the entry's
  // (device, arch, problem), when entry is faster (or `replace` is always), or when the stored entry is stale
  // (another spec hash, or an entry of format 1). Returns whether it stored. Creates the directory when missing. A
  // kernel name that cannot be a file name -> InputError.
  bool update(const KernelDescription& description, const DatabaseEntry& entry, Replace replace = Replace::when_faster);

  // The kernel's database, nullopt when there is no file. A corrupt file or one of a newer format -> InputError
  // naming the file.
  std::optional<KernelDatabase> read(const std::string& kernel) const;

  std::filesystem::path file_for(const std::string& kernel) const;  // <directory>/<kernel>.json
  const std::filesystem::path& directory() const { return directory_; }

 private:
  std::filesystem::path directory_;
};

}  // namespace kernlathe
