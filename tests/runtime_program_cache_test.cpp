// ProgramCache: many threads asking for the same kernel on first use compile it once; later processes find it in
// the disk cache; embedded cubins win over both; a compile error reaches every waiting thread.
#include "tuner/runtime/program_cache.h"

#include <gtest/gtest.h>

#include <thread>

#include "compile_test_support.h"
#include "kernlathe/embedded.h"
#include "tuner/runtime/kernel_plan.h"

namespace kernlathe {
namespace {

using compile_test::broken_request;
using compile_test::scale_request;
using compile_test::TemporaryDirectory;

TEST(ProgramCache, EightThreadsOnFirstUseCompileOnce) {
  TemporaryDirectory disk;
  ProgramCache cache(disk.path());
  CompileRequest request = scale_request(128, true);
  std::vector<std::shared_ptr<const ProgramBinary>> results(8);
  std::vector<std::thread> threads;
  for (std::size_t index = 0; index < results.size(); ++index)
    threads.emplace_back([&, index] { results[index] = cache.get(request, embedded_key(request)); });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(cache.nvrtc_compilations(), 1);
  for (const auto& result : results) {
    ASSERT_NE(result, nullptr);
    EXPECT_EQ(result.get(), results[0].get());  // one binary, shared
  }
  EXPECT_EQ(results[0]->source, BinarySource::nvrtc);
  EXPECT_GT(results[0]->compile_ms, 0);
  EXPECT_EQ(results[0]->lowered_name, "_Z5scaleILi128ELb1EEvPfif");
  EXPECT_GT(results[0]->image.size(), 1000u);
  EXPECT_EQ(std::string(results[0]->image.data(), 4), "\x7f" "ELF");

  // A second process (a fresh cache object) finds the cubin on disk and compiles nothing.
  ProgramCache later(disk.path());
  auto cached = later.get(request, embedded_key(request));
  EXPECT_EQ(cached->source, BinarySource::disk_cache);
  EXPECT_EQ(cached->compile_ms, 0);
  EXPECT_EQ(later.nvrtc_compilations(), 0);
  EXPECT_EQ(cached->image, results[0]->image);
}

TEST(ProgramCache, CompileErrorReachesEveryCallerAndIsRetriedLater) {
  TemporaryDirectory disk;
  ProgramCache cache(disk.path());
  CompileRequest request = broken_request();
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int index = 0; index < 4; ++index) {
    threads.emplace_back([&] {
      try {
        cache.get(request, embedded_key(request));
      } catch (const RuntimeError& error) {
        if (std::string(error.what()).find("broken<64> (broken.cu) does not compile for sm_90") != std::string::npos) ++errors;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(errors.load(), 4);
  EXPECT_THROW(cache.get(request, embedded_key(request)), RuntimeError);
}

TEST(ProgramCache, EmbeddedCubinWinsAndNeedsNoCompiler) {
  CompileRequest request = scale_request(64, false);
  static const std::string key = embedded_key(request);
  static const unsigned char fake_cubin[] = {0x7f, 'E', 'L', 'F', 1, 2, 3};
  static const EmbeddedCubin cubins[] = {{key.c_str(), "_Z5scaleILi64ELb0EEvPfif", fake_cubin, sizeof fake_cubin}};
  static const EmbeddedKernel kernel{"scale_embedded_test", "{}", "{}", cubins, 1};
  register_embedded_kernel(kernel);
  TemporaryDirectory disk;
  ProgramCache cache(disk.path());
  auto program = cache.get(request, key);
  EXPECT_EQ(program->source, BinarySource::embedded);
  EXPECT_EQ(program->image.size(), sizeof fake_cubin);
  EXPECT_EQ(program->lowered_name, "_Z5scaleILi64ELb0EEvPfif");
  EXPECT_EQ(cache.nvrtc_compilations(), 0);
  EXPECT_TRUE(std::filesystem::is_empty(disk.path()));
}

TEST(EmbeddedKey, IgnoresIncludePathsButNothingElse) {
  CompileRequest request = scale_request(128, true);
  CompileRequest moved = request;
  moved.options.back() = "-I/opt/elsewhere/cuda/include";
  EXPECT_EQ(embedded_key(request), embedded_key(moved));
  CompileRequest other_arch = scale_request(128, true, "sm_80");
  EXPECT_NE(embedded_key(request), embedded_key(other_arch));
  CompileRequest other_header = request;
  other_header.headers[0].second += " ";
  EXPECT_NE(embedded_key(request), embedded_key(other_header));
  CompileRequest fast_math = request;
  fast_math.options.push_back("--use_fast_math");
  EXPECT_NE(embedded_key(request), embedded_key(fast_math));
}

}  // namespace
}  // namespace kernlathe
