// The worker's own kernels compile as one NVRTC program, for the dtypes of a spec's buffers only, and come from the
// cubin cache after the first time, so a warm run's worker opens its device without compiling (issue 18). NVRTC
// runs here; no GPU is needed.

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

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class WorkerKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = fs::temp_directory_path() / ("worker_kernels_" + std::to_string(::getpid()));
    fs::remove_all(cache_);
  }
  void TearDown() override { fs::remove_all(cache_); }
  fs::path cache_;
};

TEST_F(WorkerKernels, CompareAndFillKernelsCompileTogetherThenComeFromTheCache) {
  const BuiltinCubin first = worker_kernels_cubin(all_dtypes, 9, 0, cache_);
  EXPECT_FALSE(first.cached);
  ASSERT_GT(first.cubin.size(), 4u);
  EXPECT_EQ(std::string(first.cubin.data() + 1, 3), "ELF");
  // Every kernel the worker looks up by name is in the one module.
  for (Dtype dtype : all_dtypes) {
    EXPECT_TRUE(contains(first.cubin, compare_kernel_name(dtype))) << compare_kernel_name(dtype);
    EXPECT_TRUE(contains(first.cubin, fill_kernel_name(dtype))) << fill_kernel_name(dtype);
  }

  const BuiltinCubin second = worker_kernels_cubin(all_dtypes, 9, 0, cache_);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.cubin, first.cubin);

  // What the cache holds is what comes back: replace the entry's bytes and they are returned as they are.
  std::vector<fs::path> entries;
  for (const fs::directory_entry& entry : fs::directory_iterator(cache_))
    if (entry.path().extension() == ".cubin") entries.push_back(entry.path());
  ASSERT_EQ(entries.size(), 1u);
  std::ofstream(entries.front(), std::ios::binary | std::ios::trunc) << "stored bytes";
  const BuiltinCubin stored = worker_kernels_cubin(all_dtypes, 9, 0, cache_);
  EXPECT_TRUE(stored.cached);
  EXPECT_EQ(std::string(stored.cubin.begin(), stored.cubin.end()), "stored bytes");

  // Another arch is another entry, compiled.
  EXPECT_FALSE(worker_kernels_cubin(all_dtypes, 8, 0, cache_).cached);
}

// A spec's dtypes only: the f32 module holds f32's kernels and no other's, and each set of dtypes is its own cache
// entry.
TEST_F(WorkerKernels, OnlyTheGivenDtypesAreCompiled) {
  const std::vector<Dtype> f32_only{Dtype::f32};
  const BuiltinCubin f32 = worker_kernels_cubin(f32_only, 9, 0, cache_);
  EXPECT_FALSE(f32.cached);
  EXPECT_TRUE(contains(f32.cubin, "compare_f32"));
  EXPECT_TRUE(contains(f32.cubin, "fill_f32"));
  for (Dtype other : {Dtype::f16, Dtype::bf16, Dtype::f64, Dtype::i8, Dtype::i64}) {
    EXPECT_FALSE(contains(f32.cubin, compare_kernel_name(other))) << dtype_name(other);
    EXPECT_FALSE(contains(f32.cubin, fill_kernel_name(other))) << dtype_name(other);
  }
  EXPECT_LT(f32.cubin.size(), worker_kernels_cubin(all_dtypes, 9, 0, cache_).cubin.size() / 3);

  const std::vector<Dtype> two{Dtype::bf16, Dtype::f32};
  const BuiltinCubin both = worker_kernels_cubin(two, 9, 0, cache_);
  EXPECT_FALSE(both.cached);  // not the f32 entry
  EXPECT_TRUE(contains(both.cubin, "compare_bf16"));
  EXPECT_TRUE(contains(both.cubin, "fill_f32"));
  EXPECT_FALSE(contains(both.cubin, "compare_f16"));
  EXPECT_TRUE(worker_kernels_cubin(f32_only, 9, 0, cache_).cached);
  EXPECT_TRUE(worker_kernels_cubin(two, 9, 0, cache_).cached);
}

TEST(WorkerKernelSource, NamesEachGivenDtypeOnceAndTheRestNot) {
  const std::vector<Dtype> dtypes{Dtype::i64, Dtype::f16};
  const std::string source = worker_kernel_source(dtypes);
  EXPECT_TRUE(contains(source, "KERNLATHE_COMPARE_KERNEL(i64, long long)"));
  EXPECT_TRUE(contains(source, "KERNLATHE_COMPARE_KERNEL(f16, half_bits)"));
  EXPECT_TRUE(contains(source, "KERNLATHE_FILL_KERNEL(f16, unsigned short)"));
  EXPECT_TRUE(contains(source, "KERNLATHE_FILL_KERNEL(i64, long long)"));
  EXPECT_FALSE(contains(source, "KERNLATHE_COMPARE_KERNEL(f32"));
  EXPECT_FALSE(contains(source, "KERNLATHE_FILL_KERNEL(u8"));
  // Every dtype: the sources the host tests build.
  EXPECT_EQ(compare_kernel_source(), compare_kernel_source(all_dtypes));
  EXPECT_TRUE(contains(fill_kernel_source(), "KERNLATHE_FILL_KERNEL(u32, unsigned)\n"));
  EXPECT_TRUE(contains(compare_kernel_source(), "KERNLATHE_COMPARE_KERNEL(u32, unsigned int)\n"));
}

TEST(WorkerKernelSource, DistinctDtypesAreSortedOnceEach) {
  EXPECT_EQ(distinct_dtypes({Dtype::f32, Dtype::bf16, Dtype::f32, Dtype::i8, Dtype::bf16}),
            (std::vector<Dtype>{Dtype::bf16, Dtype::f32, Dtype::i8}));
  EXPECT_TRUE(distinct_dtypes({}).empty());
  const std::vector<Dtype> listed{Dtype::f16, Dtype::f32};
  EXPECT_EQ(dtype_list(listed), "f16,f32");
}

}  // namespace
}  // namespace kernlathe
