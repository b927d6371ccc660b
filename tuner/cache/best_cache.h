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
#include <vector>

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

  // Replaces the stored description with `description` (the kernel's spec as it is now) and keeps every entry as it
  // is: what a change that alters no configuration and no measurement needs (problem defaults, whose block the spec
  // hash leaves out), without tuning again. Returns the database as it was. InputError, nothing written, when there is
  // no database, or when an entry current under the stored description would be stale under the new one (the spec,
  // its space or the template changed since it was measured: that needs a run, not a refresh).
  KernelDatabase refresh_description(const KernelDescription& description);

  // The kernel's database, nullopt when there is no file. A corrupt file or one of a newer format -> InputError
  // naming the file.
  std::optional<KernelDatabase> read(const std::string& kernel) const;

  std::filesystem::path file_for(const std::string& kernel) const;  // <directory>/<kernel>.json
  const std::filesystem::path& directory() const { return directory_; }

 private:
  std::filesystem::path directory_;
};

// A time measured side by side with others (a final round): its mean and 95% interval.
struct SideBySideTime {
  double mean_ms = 0;
  double low_ms = 0;
  double high_ms = 0;
};

// What a run stores for its device and problem, and why.
struct KeepOrReplace {
  enum class Store { winner, stored_configuration };
  Store store = Store::winner;
  BestCache::Replace replace = BestCache::Replace::when_faster;
  std::string reason;  // empty when nothing was measured side by side
};

// The keep-or-replace rule: where the stored configuration and the run's winner were measured side by side (both
// figures given), the entry changes hands only when the winner's interval lies wholly below the stored one's;
// otherwise the stored configuration stays, with the figures of this round (Replace::always either way: the caller
// measured both). Without side-by-side figures the stored figure alone is compared (Replace::when_faster).
// winner_is_stored: the winner is the stored configuration itself (its figures are refreshed).
KeepOrReplace decide_keep_or_replace(const std::optional<SideBySideTime>& winner,
                                     const std::optional<SideBySideTime>& stored, bool winner_is_stored);

}  // namespace kernlathe
