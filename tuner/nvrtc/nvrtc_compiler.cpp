#include "tuner/nvrtc/nvrtc_compiler.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/nvrtc/cubin_cache.h"
#include "tuner/nvrtc/nvrtc_library.h"

namespace kernlathe {

namespace {

// Throws TunerError naming the call as written and where it was made.
#define KERNLATHE_NVRTC_CHECK(call)                                                                               \
  do {                                                                                                        \
    nvrtcResult tuner_nvrtc_result = (call);                                                                  \
    if (tuner_nvrtc_result != NVRTC_SUCCESS) {                                                                \
      throw TunerError(fmt::format("{}:{}: {} failed: {}", __FILE__, __LINE__, #call,                         \
                                   nvrtc().nvrtcGetErrorString(tuner_nvrtc_result)));                                 \
    }                                                                                                         \
  } while (false)

struct ProgramDeleter {
  void operator()(nvrtcProgram program) const { nvrtc().nvrtcDestroyProgram(&program); }
};
using ProgramHandle = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  KERNLATHE_NVRTC_CHECK(nvrtc().nvrtcGetProgramLogSize(program, &size));
  std::string log(size, '\0');
  KERNLATHE_NVRTC_CHECK(nvrtc().nvrtcGetProgramLog(program, log.data()));
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

void compile_into(const CompileRequest& request, const CubinCache& cache, CompileResult& result) {
  std::vector<const char*> header_contents;
  std::vector<const char*> header_names;
  for (const auto& [name, contents] : request.headers) {
    header_names.push_back(name.c_str());
    header_contents.push_back(contents.c_str());
  }
  nvrtcProgram raw_program = nullptr;
  KERNLATHE_NVRTC_CHECK(nvrtc().nvrtcCreateProgram(&raw_program, request.source.c_str(), request.source_name.c_str(),
                                       static_cast<int>(header_names.size()), header_contents.data(),
                                       header_names.data()));
  ProgramHandle program(raw_program);
  KERNLATHE_NVRTC_CHECK(nvrtc().nvrtcAddNameExpression(raw_program, request.name_expression.c_str()));

  std::vector<const char*> options;
  for (const std::string& option : request.options) options.push_back(option.c_str());
  nvrtcResult compiled = nvrtc().nvrtcCompileProgram(raw_program, static_cast<int>(options.size()), options.data());
  result.log = program_log(raw_program);
  if (compiled != NVRTC_SUCCESS) {
    // NVRTC_ERROR_INVALID_OPTION and friends come with an empty log; say which failure it was.
    result.error = result.log.empty() ? fmt::format("nvrtcCompileProgram failed: {}", nvrtc().nvrtcGetErrorString(compiled))
                                      : first_error_lines(result.log);
    return;
  }

  const char* lowered_name = nullptr;
  KERNLATHE_NVRTC_CHECK(nvrtc().nvrtcGetLoweredName(raw_program, request.name_expression.c_str(), &lowered_name));
  std::size_t cubin_size = 0;
  KERNLATHE_NVRTC_CHECK(nvrtc().nvrtcGetCUBINSize(raw_program, &cubin_size));
  if (cubin_size == 0) {
    result.error = fmt::format("NVRTC produced no cubin; is {} a real architecture (sm_XX, not compute_XX)?",
                               request.arch);
    return;
  }
  std::string cubin(cubin_size, '\0');
  KERNLATHE_NVRTC_CHECK(nvrtc().nvrtcGetCUBIN(raw_program, cubin.data()));

  CachedCubin entry = cache.store(result.key, cubin, lowered_name);
  result.lowered_name = entry.lowered_name;
  result.cubin_path = entry.cubin_path;
  result.ok = true;
}

}  // namespace

std::string nvrtc_version() {
  int major = 0;
  int minor = 0;
  KERNLATHE_NVRTC_CHECK(nvrtc().nvrtcVersion(&major, &minor));
  return fmt::format("{}.{}", major, minor);
}

std::string first_error_lines(const std::string& log, int max_lines) {
  std::istringstream lines(log);
  std::string line;
  std::string first_non_empty;
  std::vector<std::string> error_lines;
  while (std::getline(lines, line) && static_cast<int>(error_lines.size()) < max_lines) {
    if (first_non_empty.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first_non_empty = line;
    // "saxpy.cu(12): error: ..." and "catastrophic error: ...", but not the "1 error detected" summary.
    if (line.find("error:") != std::string::npos) error_lines.push_back(line);
  }
  if (error_lines.empty()) return first_non_empty;
  std::string joined;
  for (const std::string& error_line : error_lines) joined += (joined.empty() ? "" : "\n") + error_line;
  return joined;
}

std::vector<std::string> performance_warnings(const std::string& log) {
  std::istringstream lines(log);
  std::string line;
  std::vector<std::string> warnings;
  while (std::getline(lines, line)) {
    if (line.find("Potential Performance Loss") == std::string::npos) continue;
    if (const auto code = line.find("(C75"); code != std::string::npos) line = line.substr(code);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (std::find(warnings.begin(), warnings.end(), line) == warnings.end()) warnings.push_back(line);
  }
  return warnings;
}

CompileResult compile_cubin(const CompileRequest& request, const std::filesystem::path& cache_dir, bool use_cache) {
  CompileResult result;
  try {
    CubinCache cache(cache_dir);
    result.key = cache_key(request, nvrtc_version());
    if (use_cache) {
      if (std::optional<CachedCubin> entry = cache.lookup(result.key)) {
        result.ok = true;
        result.cached = true;
        result.cubin_path = entry->cubin_path;
        result.lowered_name = entry->lowered_name;
        return result;
      }
    }
    auto start = std::chrono::steady_clock::now();
    compile_into(request, cache, result);
    result.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  } catch (const std::exception& failure) {
    result.ok = false;
    result.error = failure.what();
  }
  return result;
}

namespace {

std::vector<std::string> builtin_options(int arch_major, int arch_minor) {
  return {fmt::format("--gpu-architecture=sm_{}{}", arch_major, arch_minor), "--std=c++17"};
}

}  // namespace

std::vector<char> compile_builtin_source(const std::string& source, const std::string& file_name, int arch_major,
                                         int arch_minor, const std::string& what) {
  const NvrtcLibrary& library = nvrtc();
  auto check = [&](nvrtcResult result, const char* call) {
    if (result != NVRTC_SUCCESS) throw TunerError(fmt::format("{}: {} failed: {}", what, call, library.nvrtcGetErrorString(result)));
  };
  nvrtcProgram program = nullptr;
  check(library.nvrtcCreateProgram(&program, source.c_str(), file_name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  // Destroyed on every way out, a throw included.
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> owner(&program, [](nvrtcProgram* held) { nvrtc().nvrtcDestroyProgram(held); });
  const std::vector<std::string> option_texts = builtin_options(arch_major, arch_minor);
  const char* options[] = {option_texts[0].c_str(), option_texts[1].c_str()};
  const nvrtcResult compiled = library.nvrtcCompileProgram(program, 2, options);
  if (compiled != NVRTC_SUCCESS) {
    std::size_t log_size = 0;
    library.nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    library.nvrtcGetProgramLog(program, log.data());
    throw TunerError(fmt::format("{} failed to compile for sm_{}{}: {}\n{}", what, arch_major, arch_minor,
                                 library.nvrtcGetErrorString(compiled), log));
  }
  std::size_t cubin_size = 0;
  check(library.nvrtcGetCUBINSize(program, &cubin_size), "nvrtcGetCUBINSize");
  std::vector<char> cubin(cubin_size);
  check(library.nvrtcGetCUBIN(program, cubin.data()), "nvrtcGetCUBIN");
  return cubin;
}

BuiltinCubin compile_builtin_source_cached(const std::string& source, const std::string& file_name, int arch_major,
                                           int arch_minor, const std::string& what,
                                           const std::filesystem::path& cache_dir) {
  CompileRequest request;
  request.source_name = file_name;
  request.source = source;
  request.options = builtin_options(arch_major, arch_minor);
  request.arch = fmt::format("sm_{}{}", arch_major, arch_minor);
  std::optional<CubinCache> cache;
  std::string key;
  try {
    cache.emplace(cache_dir);
    key = cache_key(request, nvrtc_version());
    if (std::optional<CachedCubin> entry = cache->lookup(key)) {
      std::ifstream file(entry->cubin_path, std::ios::binary);
      BuiltinCubin found{std::vector<char>(std::istreambuf_iterator<char>(file), {}), true};
      if (!found.cubin.empty() && !file.bad()) return found;
    }
  } catch (const TunerError&) {
    cache.reset();  // no usable cache: compile
  }
  BuiltinCubin compiled{compile_builtin_source(source, file_name, arch_major, arch_minor, what), false};
  if (cache) {
    try {
      // The entry's name file holds the source's file name: these sources name their kernels extern "C".
      cache->store(key, std::string_view(compiled.cubin.data(), compiled.cubin.size()), file_name);
    } catch (const TunerError&) {
      // A cache that cannot be written costs the next run a compile, nothing more.
    }
  }
  return compiled;
}

}  // namespace kernlathe
