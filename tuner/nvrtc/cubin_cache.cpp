#include "tuner/nvrtc/cubin_cache.h"

#include <cstdlib>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "tuner/common/error.h"

namespace kernlathe {

namespace {

class Fnv1a128 {
 public:
  void add_bytes(std::string_view bytes) {
    for (unsigned char byte : bytes) {
      state_ ^= byte;
      state_ *= prime;
    }
  }

  // Length first, so ("ab", "c") and ("a", "bc") hash differently.
  void add_field(std::string_view text) {
    std::uint64_t length = text.size();
    char length_bytes[8];
    for (int index = 0; index < 8; ++index) length_bytes[index] = static_cast<char>((length >> (8 * index)) & 0xff);
    add_bytes(std::string_view(length_bytes, 8));
    add_bytes(text);
  }

  std::string hex() const {
    return fmt::format("{:016x}{:016x}", static_cast<std::uint64_t>(state_ >> 64), static_cast<std::uint64_t>(state_));
  }

 private:
  // 2^88 + 2^8 + 0x3b and the offset basis, from the FNV specification.
  static constexpr unsigned __int128 prime = (static_cast<unsigned __int128>(1) << 88) + 0x13b;
  unsigned __int128 state_ = (static_cast<unsigned __int128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
};

std::string read_whole_file(const std::filesystem::path& path, bool& ok) {
  std::ifstream stream(path, std::ios::binary);
  ok = static_cast<bool>(stream);
  if (!ok) return {};
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  ok = !stream.bad();
  return buffer.str();
}

void write_all(int descriptor, std::string_view bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    ssize_t written = ::write(descriptor, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      throw TunerError(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
}

// Temporary names are unique across processes (pid) and threads (counter), and start with '.' so they can never
// be mistaken for an entry.
void write_atomically(const std::filesystem::path& destination, std::string_view bytes) {
  static std::atomic<std::uint64_t> counter{0};
  std::filesystem::path temporary =
      destination.parent_path() /
      fmt::format(".{}.{}.{}.tmp", destination.filename().string(), ::getpid(), counter.fetch_add(1));
  int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (descriptor < 0) throw TunerError(fmt::format("cannot create {}: {}", temporary.string(), std::strerror(errno)));
  try {
    write_all(descriptor, bytes, temporary);
  } catch (...) {
    ::close(descriptor);
    ::unlink(temporary.c_str());
    throw;
  }
  if (::close(descriptor) != 0 || ::rename(temporary.c_str(), destination.c_str()) != 0) {
    int saved_errno = errno;
    ::unlink(temporary.c_str());
    throw TunerError(fmt::format("cannot store {}: {}", destination.string(), std::strerror(saved_errno)));
  }
}

}  // namespace

std::string cache_key(const CompileRequest& request, std::string_view nvrtc_version) {
  Fnv1a128 hash;
  // A format tag: bump it when the meaning of the fields changes so old entries are not reused.
  hash.add_field("tuner-cubin-v1");
  hash.add_field(request.source);
  hash.add_field(std::to_string(request.headers.size()));
  for (const auto& [name, contents] : request.headers) {
    hash.add_field(name);
    hash.add_field(contents);
  }
  hash.add_field(std::to_string(request.options.size()));
  for (const std::string& option : request.options) hash.add_field(option);
  hash.add_field(request.name_expression);
  hash.add_field(nvrtc_version);
  hash.add_field(request.arch);
  return hash.hex();
}

CubinCache::CubinCache(std::filesystem::path directory) : directory_(std::move(directory)) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) {
    throw TunerError(fmt::format("cannot create the cubin cache directory {}: {}", directory_.string(),
                                 error.message()));
  }
}

std::optional<CachedCubin> CubinCache::lookup(const std::string& key) const {
  CachedCubin entry{directory_ / (key + ".cubin"), {}};
  std::error_code error;
  // The .cubin is renamed into place after the .name, so its presence means the entry is complete.
  if (!std::filesystem::is_regular_file(entry.cubin_path, error)) return std::nullopt;
  bool ok = false;
  entry.lowered_name = read_whole_file(directory_ / (key + ".name"), ok);
  if (!ok || entry.lowered_name.empty()) return std::nullopt;
  return entry;
}

CachedCubin CubinCache::store(const std::string& key, std::string_view cubin, const std::string& lowered_name) const {
  CachedCubin entry{directory_ / (key + ".cubin"), lowered_name};
  write_atomically(directory_ / (key + ".name"), lowered_name);
  write_atomically(entry.cubin_path, cubin);
  return entry;
}

std::filesystem::path default_cubin_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "kernlathe" / "cubins";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "kernlathe" / "cubins";
  return std::filesystem::temp_directory_path() / "kernlathe-cubins";
}

}  // namespace kernlathe
