#pragma once
// Helpers shared by the spec module's tests.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "tuner/common/error.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe::spec_test {

namespace fs = std::filesystem;

// The message of the InputError that `action` throws; fails the test when it throws nothing or something else.
inline std::string input_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "expected InputError, got another exception: " << error.what();
    return "";
  }
  ADD_FAILURE() << "expected InputError, nothing was thrown";
  return "";
}

inline void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

inline std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::vector<Value> integers(std::initializer_list<std::int64_t> values) {
  return std::vector<Value>(values.begin(), values.end());
}

// A scratch directory with a template (kernel.cu, defining kernel k) beside the spec, so inline specs load.
class SpecFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 fmt::format("spec_test_{}_{}_{}", getpid(),
                             ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name(),
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    write_file(directory_ / "kernel.cu", "__global__ void k() {}\n");
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path spec_file() const { return directory_ / "spec.yaml"; }

  // A valid spec around the given space and extra top-level lines.
  // launch_line is line 7 of the spec, extra_lines start at line 8.
  KernelSpec parse_spec(const std::string& space_lines, const std::string& extra_lines = "",
                        const std::string& launch_line = "launch: {grid: [N], block: [64]}\n") {
    return parse_kernel_spec(spec_text(space_lines, extra_lines, launch_line), spec_file());
  }
  static std::string spec_text(const std::string& space_lines, const std::string& extra_lines,
                               const std::string& launch_line) {
    return "name: test\n"
           "template: kernel.cu\n"
           "entry: k\n"
           "problem: {N: 4096}\n"
           "arguments:\n"
           "  - {name: x, type: f32, count: N}\n" +
           launch_line + extra_lines + "space:\n" + space_lines;
  }

  fs::path directory_;
};

inline const std::string simple_space =
    "  parameters:\n"             // line 9 of spec_text
    "    - name: BLOCK\n"         // line 10
    "      values: [64, 128]\n";  // line 11

// Copies of kernels/saxpy.yaml and spaces/saxpy.yaml in their relative layout, with a stand-in template, so the
// test reads the real example files without depending on the template's contents.
class SaxpyCopyTest : public SpecFolderTest {
 protected:
  void SetUp() override {
    SpecFolderTest::SetUp();
    const fs::path source = KERNLATHE_SOURCE_DIR;
    write_file(directory_ / "kernels/saxpy.yaml", read_file(source / "kernels/saxpy.yaml"));
    write_file(directory_ / "spaces/saxpy.yaml", read_file(source / "spaces/saxpy.yaml"));
    write_file(directory_ / "templates/saxpy.cu", "// stand-in for the kernel saxpy\n");
  }
  fs::path saxpy() const { return directory_ / "kernels/saxpy.yaml"; }
};

}  // namespace kernlathe::spec_test
