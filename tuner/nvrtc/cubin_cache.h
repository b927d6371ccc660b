#pragma once
// Compiled cubins on disk, keyed by a hash of everything that determines the binary.
//
// Key: 32 hex digits, a 128-bit FNV-1a hash (the FNV specification's 128-bit prime and offset basis) over the
// source, every header's name and contents, every option, the name expression, the NVRTC version and the arch.
// Each field is preceded by its length, so moving text from one field to the next changes the key. FNV is not
// cryptographic; 128 bits make an accidental collision between configurations negligible, which is all a
// cache of our own compiler output needs.
//
// Layout: <directory>/<key>.cubin and <directory>/<key>.name (the lowered kernel name). Both are written to a
// temporary file in the same directory and renamed into place, the .name first, so a .cubin exists only when
// both are complete: a reader never sees a partial entry, even when a compiler process is killed mid-write.
// Such a kill may leave a hidden ".<name>.<pid>.<n>.tmp" file behind; it is never read and safe to delete.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "tuner/nvrtc/compile_request.h"

namespace kernlathe {

std::string cache_key(const CompileRequest& request, std::string_view nvrtc_version);

// The cubin cache `tune` and the runtime library share: $XDG_CACHE_HOME/kernlathe/cubins, else
// ~/.cache/kernlathe/cubins, else <temporary directory>/kernlathe-cubins.
std::filesystem::path default_cubin_cache_dir();

struct CachedCubin {
  std::filesystem::path cubin_path;
  std::string lowered_name;
};

class CubinCache {
 public:
  // Creates the directory when missing; throws TunerError when that fails.
  explicit CubinCache(std::filesystem::path directory);

  const std::filesystem::path& directory() const { return directory_; }

  std::optional<CachedCubin> lookup(const std::string& key) const;

  // Stores an entry atomically and returns where it lives. Throws TunerError on I/O failure.
  CachedCubin store(const std::string& key, std::string_view cubin, const std::string& lowered_name) const;

 private:
  std::filesystem::path directory_;
};

}  // namespace kernlathe
