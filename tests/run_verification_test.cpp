// Verification catches a deliberately wrong configuration, on the CPU (issue 4). tests/data/verify/verify.yaml
// plants off-by-one bugs behind a BUG parameter. The test builds, with the host compiler, the data template and
// the very comparison source that verification compiles for the GPU (compare_kernel_source()), running both on
// host threads (tests/data/verify/host_emulation.h); it then does what the evaluation worker does: outputs
// poisoned, the reference configuration's output kept, each configuration's output compared with the spec's
// tolerance. If the comparison stopped flagging wrong or unwritten elements, these tests would fail.
// (tests/gpu/faults_device_test.cpp covers the same on the GPU, end to end.)

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tuner/run/compare_kernels.h"
#include "tuner/run/element_values.h"
#include "tuner/spec/spec_loader.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

using RunOffsetCopy = void (*)(int, unsigned, unsigned, long long, const float*, float*);
using RunCompare = void (*)(unsigned, const float*, const float*, long long, double, double, unsigned long long*);

const fs::path data_directory = fs::path(TUNER_SOURCE_DIR) / "tests/data/verify";

// The host build of the template and the compare kernels, compiled once for all tests.
class HostKernels {
 public:
  HostKernels() {
    const fs::path directory = fs::temp_directory_path() / ("tuner_verification_" + std::to_string(::getpid()));
    fs::create_directories(directory);
    const fs::path source = directory / "host_kernels.cpp";
    std::ofstream(source) << "#include \"host_emulation.h\"\n"
                          << compare_kernel_source() << "\n#include \"offset_copy.cu\"\n"
                          << "#include \"host_entry_points.h\"\n";
    const fs::path library = directory / "host_kernels.so";
    const std::string command = "c++ -std=c++20 -O1 -w -shared -fPIC -pthread -I" + data_directory.string() + " " +
                                source.string() + " -o " + library.string() + " 2>" + (directory / "log").string();
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
    run_offset_copy = reinterpret_cast<RunOffsetCopy>(dlsym(handle_, "run_offset_copy"));
    run_compare = reinterpret_cast<RunCompare>(dlsym(handle_, "run_compare_f32"));
    fs::remove_all(directory);
  }
  const std::string& error() const { return error_; }

  RunOffsetCopy run_offset_copy = nullptr;
  RunCompare run_compare = nullptr;

 private:
  void* handle_ = nullptr;
  std::string error_;
};

HostKernels& host_kernels() {
  static HostKernels kernels;
  return kernels;
}

struct Comparison {
  std::uint64_t failing = 0;
  std::uint64_t first_failing = 0;
  double largest_relative_error = 0;
};

class Verification : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(host_kernels().error(), "");
    ASSERT_NE(host_kernels().run_offset_copy, nullptr);
    ASSERT_NE(host_kernels().run_compare, nullptr);
    spec_ = load_kernel_spec(data_directory / "verify.yaml");
    n_ = spec_.problem.at(0).second;
    const Argument& input_argument = spec_.arguments.at(1);
    std::vector<std::byte> contents = initial_contents(Dtype::f32, n_, input_argument.init);
    input_.resize(static_cast<std::size_t>(n_));
    std::memcpy(input_.data(), contents.data(), contents.size());
    tolerance_ = spec_.verification.tolerance_for(Dtype::f32);
    reference_ = run(0, 128);
  }

  // The output of configuration (BUG, BLOCK), written over the poison pattern as the worker does.
  std::vector<float> run(int bug, unsigned block) const {
    std::vector<float> output(static_cast<std::size_t>(n_));
    std::memset(output.data(), poison_byte, output.size() * sizeof(float));
    const unsigned grid = static_cast<unsigned>((n_ + block - 1) / block);
    host_kernels().run_offset_copy(bug, grid, block, n_, input_.data(), output.data());
    return output;
  }

  Comparison compare(const std::vector<float>& output) const {
    unsigned long long results[3] = {0, ~0ull, 0};  // the worker's initial values (compare_kernels.h)
    host_kernels().run_compare(3, output.data(), reference_.data(), n_, tolerance_.absolute, tolerance_.relative,
                               results);
    double largest = 0;
    std::memcpy(&largest, &results[2], sizeof largest);
    return {results[0], results[1], largest};
  }

  KernelSpec spec_;
  std::int64_t n_ = 0;
  std::vector<float> input_;
  std::vector<float> reference_;
  Tolerance tolerance_;
};

TEST_F(Verification, SpecDeclaresTheReferenceAndATightTolerance) {
  EXPECT_EQ(n_, 4099);
  EXPECT_DOUBLE_EQ(tolerance_.relative, 1.0e-6);
  EXPECT_DOUBLE_EQ(tolerance_.absolute, 1.0e-7);
  // The reference configuration wrote every element: no poison left.
  for (float value : reference_) ASSERT_FALSE(std::isnan(value));
  EXPECT_FLOAT_EQ(reference_[17], 3.0f * input_[17] - 1.0f);
}

TEST_F(Verification, AcceptsCorrectConfigurations) {
  for (unsigned block : {64u, 128u}) {
    const Comparison comparison = compare(run(0, block));
    EXPECT_EQ(comparison.failing, 0u) << "BLOCK=" << block;
    EXPECT_EQ(comparison.first_failing, ~0ull) << "BLOCK=" << block;
    EXPECT_EQ(comparison.largest_relative_error, 0.0) << "BLOCK=" << block;
  }
}

TEST_F(Verification, CatchesTheSkippedLastElement) {
  // BUG 1 never writes element n - 1: it stays poison (NaN), and NaN must fail, whatever the tolerance.
  const Comparison comparison = compare(run(1, 64));
  EXPECT_EQ(comparison.failing, 1u);
  EXPECT_EQ(comparison.first_failing, static_cast<std::uint64_t>(n_ - 1));
}

TEST_F(Verification, CatchesTheNeighbourRead) {
  // BUG 2 is off by one in the index: every element but the last differs from the reference (inputs are random,
  // so neighbours differ by far more than the tolerance).
  const Comparison comparison = compare(run(2, 128));
  EXPECT_EQ(comparison.failing, static_cast<std::uint64_t>(n_ - 1));
  EXPECT_EQ(comparison.first_failing, 0u);
  EXPECT_GT(comparison.largest_relative_error, 1.0e-3);
}

TEST_F(Verification, ToleranceSeparatesRoundingFromErrors) {
  // A result a few ulps off (a different summation order) passes; one off by ten times the tolerance fails.
  std::vector<float> nearly = reference_;
  nearly[100] = std::nextafter(nearly[100], 10.0f);
  EXPECT_EQ(compare(nearly).failing, 0u);
  std::vector<float> wrong = reference_;
  const double limit = tolerance_.absolute + tolerance_.relative * std::abs(wrong[2000]);
  wrong[2000] = static_cast<float>(wrong[2000] + 10 * limit);
  const Comparison comparison = compare(wrong);
  EXPECT_EQ(comparison.failing, 1u);
  EXPECT_EQ(comparison.first_failing, 2000u);
}

}  // namespace
}  // namespace tuner
