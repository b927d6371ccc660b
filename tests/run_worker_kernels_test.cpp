// The worker's own kernels compile as one NVRTC program and come from the cubin cache after the first time, so a
// warm run's worker opens its device without compiling (issue 18). NVRTC runs here; no GPU is needed.

#include "tuner/run/worker_kernels.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tuner/run/compare_kernels.h"
#include "tuner/run/fill_kernels.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

bool contains(const std::vector<char>& bytes, const std::string& text) {
  return std::search(bytes.begin(), bytes.end(), text.begin(), text.end()) != bytes.end();
}

TEST(WorkerKernels, CompareAndFillKernelsCompileTogetherThenComeFromTheCache) {
  const fs::path cache = fs::temp_directory_path() / ("worker_kernels_" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const BuiltinCubin first = worker_kernels_cubin(9, 0, cache);
  EXPECT_FALSE(first.cached);
  ASSERT_GT(first.cubin.size(), 4u);
  EXPECT_EQ(std::string(first.cubin.data() + 1, 3), "ELF");
  // Every kernel the worker looks up by name is in the one module.
  for (Dtype dtype : {Dtype::f16, Dtype::bf16, Dtype::f32, Dtype::i64}) {
    EXPECT_TRUE(contains(first.cubin, compare_kernel_name(dtype))) << compare_kernel_name(dtype);
    EXPECT_TRUE(contains(first.cubin, fill_kernel_name(dtype))) << fill_kernel_name(dtype);
  }

  const BuiltinCubin second = worker_kernels_cubin(9, 0, cache);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.cubin, first.cubin);

  // What the cache holds is what comes back: replace the entry's bytes and they are returned as they are.
  std::vector<fs::path> entries;
  for (const fs::directory_entry& entry : fs::directory_iterator(cache))
    if (entry.path().extension() == ".cubin") entries.push_back(entry.path());
  ASSERT_EQ(entries.size(), 1u);
  std::ofstream(entries.front(), std::ios::binary | std::ios::trunc) << "stored bytes";
  const BuiltinCubin stored = worker_kernels_cubin(9, 0, cache);
  EXPECT_TRUE(stored.cached);
  EXPECT_EQ(std::string(stored.cubin.begin(), stored.cubin.end()), "stored bytes");

  // Another arch is another entry, compiled.
  EXPECT_FALSE(worker_kernels_cubin(8, 0, cache).cached);
  fs::remove_all(cache);
}

}  // namespace
}  // namespace kernlathe
