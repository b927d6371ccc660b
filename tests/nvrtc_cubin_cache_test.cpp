#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "compile_test_support.h"
#include "tuner/nvrtc/cubin_cache.h"

namespace kernlathe {
namespace {

using compile_test::read_file;
using compile_test::TemporaryDirectory;

CompileRequest sample_request() {
  CompileRequest request;
  request.source_name = "k.cu";
  request.source = "#define BLOCK 128\n__global__ void k() {}\n";
  request.name_expression = "k";
  request.options = {"--std=c++17", "--gpu-architecture=sm_90"};
  request.arch = "sm_90";
  request.headers = {{"a.h", "int a;"}, {"b.h", "int b;"}};
  return request;
}

TEST(CacheKey, Is32HexDigitsAndStable) {
  std::string key = cache_key(sample_request(), "13.0");
  ASSERT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;
  EXPECT_EQ(cache_key(sample_request(), "13.0"), key);
}

TEST(CacheKey, ChangesWhenAnyInputChanges) {
  const std::string base = cache_key(sample_request(), "13.0");
  std::vector<std::pair<std::string, std::function<void(CompileRequest&)>>> changes = {
      {"source", [](CompileRequest& r) { r.source += " "; }},
      {"header contents", [](CompileRequest& r) { r.headers[1].second = "int c;"; }},
      {"header name", [](CompileRequest& r) { r.headers[0].first = "c.h"; }},
      {"header added", [](CompileRequest& r) { r.headers.emplace_back("c.h", ""); }},
      {"option", [](CompileRequest& r) { r.options[0] = "--std=c++20"; }},
      {"option added", [](CompileRequest& r) { r.options.push_back("-lineinfo"); }},
      {"option order", [](CompileRequest& r) { std::swap(r.options[0], r.options[1]); }},
      {"arch", [](CompileRequest& r) { r.arch = "sm_90a"; }},
      {"name expression", [](CompileRequest& r) { r.name_expression = "k2"; }},
      // Moving text across a field boundary must not produce the same byte stream.
      {"text moved between options",
       [](CompileRequest& r) { r.options = {"--std=c++17--gpu-architecture=", "sm_90"}; }},
  };
  std::set<std::string> keys{base};
  for (auto& [what, change] : changes) {
    CompileRequest request = sample_request();
    change(request);
    std::string key = cache_key(request, "13.0");
    EXPECT_NE(key, base) << what;
    keys.insert(key);
  }
  EXPECT_EQ(keys.size(), changes.size() + 1) << "two different changes gave the same key";
  EXPECT_NE(cache_key(sample_request(), "13.1"), base) << "NVRTC version";
}

TEST(CubinCache, StoreThenLookup) {
  TemporaryDirectory directory;
  CubinCache cache(directory.path() / "nested" / "cubins");
  std::string key = cache_key(sample_request(), "13.0");
  EXPECT_FALSE(cache.lookup(key).has_value());
  CachedCubin stored = cache.store(key, std::string("\x7f" "ELF\0binary", 10), "_Z1kv");
  std::optional<CachedCubin> found = cache.lookup(key);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->cubin_path, directory.path() / "nested" / "cubins" / (key + ".cubin"));
  EXPECT_EQ(found->cubin_path, stored.cubin_path);
  EXPECT_EQ(found->lowered_name, "_Z1kv");
  EXPECT_EQ(read_file(found->cubin_path), std::string("\x7f" "ELF\0binary", 10));
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache.directory())) {
    EXPECT_NE(entry.path().filename().string().front(), '.') << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 2);
}

TEST(CubinCache, IncompleteEntriesAreNotReturned) {
  TemporaryDirectory directory;
  CubinCache cache(directory.path());
  // A .name without its .cubin: a writer died between the two renames.
  std::ofstream(directory.path() / "aaaa.name") << "_Z1kv";
  EXPECT_FALSE(cache.lookup("aaaa").has_value());
  // A .cubin with an empty .name cannot be used to find the kernel.
  std::ofstream(directory.path() / "bbbb.cubin") << "cubin";
  std::ofstream(directory.path() / "bbbb.name");
  EXPECT_FALSE(cache.lookup("bbbb").has_value());
  // A temporary file of an unfinished write is not an entry.
  std::ofstream(directory.path() / ".cccc.cubin.123.0.tmp") << "partial";
  EXPECT_FALSE(cache.lookup("cccc").has_value());
}

TEST(CubinCache, StoreReplacesAnExistingEntry) {
  TemporaryDirectory directory;
  CubinCache cache(directory.path());
  cache.store("dddd", "old", "_Z3oldv");
  cache.store("dddd", "new", "_Z3newv");
  std::optional<CachedCubin> found = cache.lookup("dddd");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->lowered_name, "_Z3newv");
  EXPECT_EQ(read_file(found->cubin_path), "new");
}

TEST(CubinCache, UncreatableDirectoryThrows) {
  TemporaryDirectory directory;
  std::ofstream(directory.path() / "file") << "not a directory";
  EXPECT_THROW(CubinCache(directory.path() / "file" / "cubins"), TunerError);
}

}  // namespace
}  // namespace kernlathe
