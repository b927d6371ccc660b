#include <gtest/gtest.h>

#include "compile_test_support.h"
#include "tuner/nvrtc/nvrtc_compiler.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace kernlathe {
namespace {

using compile_test::broken_request;
using compile_test::read_file;
using compile_test::scale_request;
using compile_test::TemporaryDirectory;

TEST(NvrtcCompiler, VersionIsMajorDotMinor) {
  std::string version = nvrtc_version();
  ASSERT_NE(version.find('.'), std::string::npos);
  EXPECT_GE(std::stoi(version), 12);
}

class CompileForArch : public testing::TestWithParam<std::string> {};

TEST_P(CompileForArch, TemplateKernelGivesElfCubinAndMangledName) {
  TemporaryDirectory cache;
  CompileResult result = compile_cubin(scale_request(128, true, GetParam()), cache.path());
  ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
  EXPECT_FALSE(result.cached);
  EXPECT_GT(result.compile_ms, 0);
  EXPECT_EQ(result.cubin_path, cache.path() / (result.key + ".cubin"));
  std::string cubin = read_file(result.cubin_path);
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF"));
  // Itanium mangling of scale<128, true>(float*, int, float).
  EXPECT_EQ(result.lowered_name, "_Z5scaleILi128ELb1EEvPfif");
}

INSTANTIATE_TEST_SUITE_P(RealArchitectures, CompileForArch, testing::Values("sm_80", "sm_90"));

TEST(NvrtcCompiler, DifferentTemplateArgumentsGiveDifferentLoweredNames) {
  TemporaryDirectory cache;
  CompileResult result = compile_cubin(scale_request(64, false), cache.path());
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.lowered_name, "_Z5scaleILi64ELb0EEvPfif");
}

TEST(NvrtcCompiler, SyntaxErrorKeepsTheFullLog) {
  TemporaryDirectory cache;
  CompileResult result = compile_cubin(broken_request(), cache.path());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("broken.cu(3): error"), std::string::npos) << result.log;
  // The full log, summary line included, not just the first error.
  EXPECT_NE(result.log.find("detected in the compilation of \"broken.cu\""), std::string::npos) << result.log;
  EXPECT_EQ(result.error.rfind("broken.cu(3): error", 0), 0u) << result.error;
  EXPECT_EQ(result.error.find('\n'), std::string::npos) << "one error, one line: " << result.error;
  EXPECT_TRUE(result.cubin_path.empty());
  EXPECT_TRUE(std::filesystem::is_empty(cache.path()));
}

TEST(NvrtcCompiler, InvalidOptionIsAResultNotAnException) {
  TemporaryDirectory cache;
  CompileRequest request = scale_request(64, false);
  request.options.push_back("--no-such-option");
  CompileResult result = compile_cubin(request, cache.path());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("--no-such-option"), std::string::npos) << result.error;
}

TEST(NvrtcCompiler, UnknownNameExpressionIsReported) {
  TemporaryDirectory cache;
  CompileRequest request = scale_request(64, false);
  request.name_expression = "no_such_kernel<1>";
  CompileResult result = compile_cubin(request, cache.path());
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("no_such_kernel"), std::string::npos) << result.error;
}

TEST(NvrtcCompiler, SecondCompileIsACacheHitWithTheSamePath) {
  TemporaryDirectory cache;
  CompileRequest request = scale_request(256, false);
  CompileResult first = compile_cubin(request, cache.path());
  ASSERT_TRUE(first.ok) << first.error;
  CompileResult second = compile_cubin(request, cache.path());
  ASSERT_TRUE(second.ok);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.compile_ms, 0);
  EXPECT_EQ(second.cubin_path, first.cubin_path);
  EXPECT_EQ(second.lowered_name, first.lowered_name);
  EXPECT_EQ(second.key, first.key);

  CompileResult forced = compile_cubin(request, cache.path(), /*use_cache=*/false);
  ASSERT_TRUE(forced.ok);
  EXPECT_FALSE(forced.cached);
  EXPECT_GT(forced.compile_ms, 0);
}

TEST(NvrtcCompiler, FirstErrorLinesSkipsWarningsAndSummary) {
  std::string log =
      "k.cu(2): warning #177-D: variable \"x\" was declared but never referenced\n"
      "k.cu(5): error: expected a \";\"\n"
      "      int y = 1\n"
      "k.cu(9): error: identifier \"z\" is undefined\n"
      "\n"
      "2 errors detected in the compilation of \"k.cu\".\n";
  EXPECT_EQ(first_error_lines(log), "k.cu(5): error: expected a \";\"\nk.cu(9): error: identifier \"z\" is undefined");
  EXPECT_EQ(first_error_lines(log, 1), "k.cu(5): error: expected a \";\"");
  EXPECT_EQ(first_error_lines("\nsomething odd\n"), "something odd");
}

}  // namespace
}  // namespace kernlathe

namespace kernlathe {
namespace {

TEST(CompileBuiltinSource, GivesAnElfCubinAndNamesWhatFailed) {
  const std::vector<char> cubin = compile_builtin_source("extern \"C\" __global__ void nothing() {}", "nothing.cu", 9, 0,
                                                         "test kernel");
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(std::string(cubin.data() + 1, 3), "ELF");
  try {
    compile_builtin_source("extern \"C\" __global__ void broken() { undeclared = 1; }", "broken.cu", 9, 0, "test kernel");
    FAIL() << "a source that does not compile was accepted";
  } catch (const TunerError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("test kernel failed to compile for sm_90"), std::string::npos) << message;
    EXPECT_NE(message.find("undeclared"), std::string::npos) << message;  // the log comes along
  }
}

}  // namespace
}  // namespace kernlathe

namespace kernlathe {
namespace {

TEST(CompileBuiltinSource, ACacheThatCannotBeUsedStillGivesTheCubin) {
  // The cache path is a regular file: no directory can be made there, so the source is compiled, uncached.
  const std::filesystem::path blocker =
      std::filesystem::temp_directory_path() / ("builtin_cache_blocker_" + std::to_string(::getpid()));
  std::ofstream(blocker) << "not a directory";
  const BuiltinCubin cubin = compile_builtin_source_cached("extern \"C\" __global__ void nothing() {}", "nothing.cu",
                                                           9, 0, "test kernel", blocker / "cubins");
  EXPECT_FALSE(cubin.cached);
  ASSERT_GT(cubin.cubin.size(), 4u);
  EXPECT_EQ(std::string(cubin.cubin.data() + 1, 3), "ELF");
  std::filesystem::remove(blocker);
}

// A successful compile's log as NVRTC 13.0 gave it for the GEMM template with split-K and its accumulators zeroed on
// one path (sm_90a): a front-end warning, then ptxas's serialisation report. Only the latter is a performance
// warning, once, without ptxas's prefix.
TEST(NvrtcCompiler, PerformanceWarningsAreThePtxasSerialisationLines) {
  const std::string serialised =
      "(C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions "
      "reading accumulator registers of  a wgmma between start and end of the pipeline stage in the function 'gemm'";
  const std::string log = "gemm/wgmma.cuh(682): warning #128-D: loop is not reachable\n"
                          "        for (int slice = 0; slice < consumer_slices; ++slice) {\n"
                          "\n"
                          "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
                          "\n"
                          "ptxas info    : " + serialised + "\r\n"
                          "ptxas info    : " + serialised + "\n";
  EXPECT_EQ(performance_warnings(log), std::vector<std::string>{serialised});
  EXPECT_TRUE(performance_warnings("gemm/wgmma.cuh(682): warning #128-D: loop is not reachable\n").empty());
  EXPECT_TRUE(performance_warnings("").empty());
}

}  // namespace
}  // namespace kernlathe
