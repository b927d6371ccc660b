#pragma once
// Builds C++ source text with the host compiler into a shared library and opens it, for tests that run device code
// on host threads (run_verification_test.cpp, compile_templates_on_host_test.cpp). A failed build or open leaves
// error() set, with the command and the compiler's log, and every symbol null.

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace kernlathe::testing {

class HostLibrary {
 public:
  HostLibrary(const std::string& name, const std::string& source_text,
              const std::vector<std::filesystem::path>& include_directories) {
    namespace fs = std::filesystem;
    const fs::path directory = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
    fs::create_directories(directory);
    const fs::path source = directory / (name + ".cpp");
    const fs::path library = directory / (name + ".so");
    std::ofstream(source) << source_text;
    // No fused multiply-add the device source did not ask for: GPU code spells its roundings out (__dmul_rn).
    std::string command = "c++ -std=c++20 -O1 -w -shared -fPIC -pthread -ffp-contract=off";
    for (const fs::path& include : include_directories) command += " -I" + include.string();
    command += " " + source.string() + " -o " + library.string() + " 2>" + (directory / "log").string();
    if (std::system(command.c_str()) != 0) {
      std::ifstream log(directory / "log");
      error_ = "host build failed: " + command + "\n" + std::string(std::istreambuf_iterator<char>(log), {});
      return;
    }
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      error_ = dlerror();
      return;
    }
    fs::remove_all(directory);  // the library stays open
  }

  const std::string& error() const { return error_; }

  // The named function, or null when the library did not build or lacks it.
  template <typename Function>
  Function symbol(const char* name) const {
    return handle_ == nullptr ? nullptr : reinterpret_cast<Function>(dlsym(handle_, name));
  }

 private:
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace kernlathe::testing
