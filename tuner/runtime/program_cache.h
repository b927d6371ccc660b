#pragma once
// Compiled kernels of a process, each built once: from an embedded cubin (kernlathe/embedded.h) when one matches,
// otherwise from the cubins `tune export` wrote, otherwise from the disk cubin cache shared with `tune`, otherwise by NVRTC (whose output the disk cache then
// keeps). Thread-safe: concurrent requests for the same binary wait for one compilation.

#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernlathe/runtime.h"
#include "tuner/nvrtc/compile_request.h"

namespace kernlathe {

struct ProgramBinary {
  std::vector<char> image;  // the cubin
  std::string lowered_name;
  BinarySource source = BinarySource::nvrtc;
  double compile_ms = 0;  // NVRTC time; 0 when embedded or cached
};

class ProgramCache {
 public:
  // disk_cache: the cubin cache directory; empty: compile into a private temporary directory, removed on exit.
  // exported_cubins: a directory of <embedded key>.cubin and .name files; empty: none.
  explicit ProgramCache(std::filesystem::path disk_cache, std::filesystem::path exported_cubins = {});
  ~ProgramCache();

  // Throws RuntimeError with NVRTC's log when the source does not compile.
  std::shared_ptr<const ProgramBinary> get(const CompileRequest& request, const std::string& embedded_key);

  int nvrtc_compilations() const { return nvrtc_compilations_.load(); }

 private:
  std::shared_ptr<const ProgramBinary> build(const CompileRequest& request, const std::string& embedded_key);

  std::filesystem::path disk_cache_;
  std::filesystem::path exported_cubins_;
  bool private_directory_ = false;
  std::mutex mutex_;
  std::map<std::string, std::shared_future<std::shared_ptr<const ProgramBinary>>> programs_;
  std::atomic<int> nvrtc_compilations_{0};
};

}  // namespace kernlathe
