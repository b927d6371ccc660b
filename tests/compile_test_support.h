#pragma once
// Helpers shared by the compile module's tests.

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tuner/nvrtc/compile_request.h"
#include "tuner/space/space.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe::compile_test {

inline std::filesystem::path data_directory() {
  return std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests" / "data" / "compile";
}

// The constants a space is enumerated with: a built-in device profile's properties and the spec's problem symbols.
inline Constants constants_for(const KernelSpec& spec, const std::string& arch) {
  Constants constants = device_property_values(device_profile(arch));
  for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, Value{value});
  return constants;
}

// Reads one binding of a configuration as an integer, a boolean or a string.
struct Lookup {
  Bindings bindings;
  std::int64_t integer(const std::string& name) const { return std::get<std::int64_t>(bindings.get(name)); }
  bool flag(const std::string& name) const { return std::get<bool>(bindings.get(name)); }
  std::string text(const std::string& name) const { return std::get<std::string>(bindings.get(name)); }
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  return buffer.str();
}

// A fresh, empty directory per call, removed by the destructor.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("tuner-compile-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// scale.cu instantiated by hand, with its headers as in-memory files.
inline CompileRequest scale_request(int block, bool negate, const std::string& arch = "sm_90") {
  CompileRequest request;
  request.source_name = "scale.cu";
  request.source = read_file(data_directory() / "scale.cu");
  request.name_expression = "scale<" + std::to_string(block) + ", " + (negate ? "true" : "false") + ">";
  request.arch = arch;
  request.options = {"--std=c++17", "--gpu-architecture=" + arch, "-I" + cuda_include_directory()};
  request.headers = {{"scale_helpers.h", read_file(data_directory() / "scale_helpers.h")},
                     {"detail/scale_sign.h", read_file(data_directory() / "detail" / "scale_sign.h")}};
  return request;
}

inline CompileRequest broken_request() {
  CompileRequest request;
  request.source_name = "broken.cu";
  request.source = read_file(data_directory() / "broken.cu");
  request.name_expression = "broken<64>";
  request.arch = "sm_90";
  request.options = {"--gpu-architecture=sm_90"};
  return request;
}

}  // namespace kernlathe::compile_test
