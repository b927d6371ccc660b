#include "tuner/runtime/program_cache.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kernlathe/embedded.h"
#include "tuner/nvrtc/nvrtc_compiler.h"

namespace kernlathe {

namespace {

std::vector<char> read_binary(const std::filesystem::path& path) {
  std::ifstream input(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(input)), std::istreambuf_iterator<char>());
  if (!input.eof() && !input) throw RuntimeError(fmt::format("{}: cannot be read", path.string()));
  return bytes;
}

}  // namespace

ProgramCache::ProgramCache(std::filesystem::path disk_cache, std::filesystem::path exported_cubins)
    : disk_cache_(std::move(disk_cache)), exported_cubins_(std::move(exported_cubins)) {
  if (disk_cache_.empty()) {
    static std::atomic<int> counter{0};
    disk_cache_ = std::filesystem::temp_directory_path() /
                  fmt::format("kernlathe-runtime-{}-{}", ::getpid(), counter.fetch_add(1));
    private_directory_ = true;
  }
}

ProgramCache::~ProgramCache() {
  if (private_directory_) {
    std::error_code ignored;
    std::filesystem::remove_all(disk_cache_, ignored);
  }
}

std::shared_ptr<const ProgramBinary> ProgramCache::get(const CompileRequest& request, const std::string& embedded_key) {
  std::shared_future<std::shared_ptr<const ProgramBinary>> future;
  std::promise<std::shared_ptr<const ProgramBinary>> promise;
  bool builder = false;
  {
    std::lock_guard lock(mutex_);
    auto found = programs_.find(embedded_key);
    if (found != programs_.end()) {
      future = found->second;
    } else {
      future = promise.get_future().share();
      programs_.emplace(embedded_key, future);
      builder = true;
    }
  }
  if (builder) {
    try {
      promise.set_value(build(request, embedded_key));
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::lock_guard lock(mutex_);
      programs_.erase(embedded_key);  // a later call tries again
    }
  }
  return future.get();
}

std::shared_ptr<const ProgramBinary> ProgramCache::build(const CompileRequest& request, const std::string& embedded_key) {
  auto program = std::make_shared<ProgramBinary>();
  for (const EmbeddedKernel* kernel : embedded_kernels()) {
    for (std::size_t index = 0; index < kernel->cubin_count; ++index) {
      const EmbeddedCubin& cubin = kernel->cubins[index];
      if (embedded_key != cubin.key) continue;
      program->image.assign(reinterpret_cast<const char*>(cubin.data), reinterpret_cast<const char*>(cubin.data) + cubin.size);
      program->lowered_name = cubin.lowered_name;
      program->source = BinarySource::embedded;
      return program;
    }
  }
  if (!exported_cubins_.empty()) {
    std::error_code error;
    std::filesystem::path cubin = exported_cubins_ / (embedded_key + ".cubin");
    std::filesystem::path name = exported_cubins_ / (embedded_key + ".name");
    if (std::filesystem::is_regular_file(cubin, error) && std::filesystem::is_regular_file(name, error)) {
      program->image = read_binary(cubin);
      std::vector<char> lowered = read_binary(name);
      program->lowered_name.assign(lowered.begin(), lowered.end());
      program->source = BinarySource::exported;
      return program;
    }
  }
  CompileResult compiled = compile_cubin(request, disk_cache_, /*use_cache=*/true);
  if (!compiled.ok) {
    throw RuntimeError(fmt::format("{} ({}) does not compile for {}: {}\n{}", request.name_expression,
                                   request.source_name, request.arch, compiled.error, compiled.log));
  }
  if (!compiled.cached) nvrtc_compilations_.fetch_add(1);
  program->image = read_binary(compiled.cubin_path);
  program->lowered_name = compiled.lowered_name;
  program->source = compiled.cached ? BinarySource::disk_cache : BinarySource::nvrtc;
  program->compile_ms = compiled.compile_ms;
  return program;
}

}  // namespace kernlathe
