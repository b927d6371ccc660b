// The allow-list of NVRTC options a spec may pass: what the shipped specs use passes, options that write files or
// widen includes are refused with the reason.
#include "tuner/spec/nvrtc_options.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace kernlathe {
namespace {

std::string problem_of(const std::string& option) { return compile_option_problem(option).value_or("allowed"); }

TEST(NvrtcOptions, AllowedOptionsInBothSpellings) {
  for (const char* option :
       {"-std=c++17", "--std=c++20", "-std=c++11", "-DGEMM_INPUT_F16", "-DBLOCK=256", "-DTEXT=a b", "-DEMPTY=",
        "--define-macro=X=1", "-UNDEBUG", "--undefine-macro=X", "-use_fast_math", "--use_fast_math", "-lineinfo",
        "--generate-line-info", "-maxrregcount=64", "--maxrregcount=255", "-ftz=true", "--ftz=false",
        "-prec-div=false", "--prec-sqrt=true", "-fmad=false", "-extra-device-vectorization",
        "--extra-device-vectorization", "-default-device", "--device-as-default-execution-space"}) {
    EXPECT_EQ(compile_option_problem(option), std::nullopt) << option;
  }
}

TEST(NvrtcOptions, OptionsThatWriteFilesAreRefused) {
  for (const char* option : {"--pch", "-pch", "--create-pch=kernel.pch", "--pch-dir=/tmp", "-time=timing.csv",
                             "--fdevice-time-trace=trace.json", "-dlto", "--dlink-time-opt", "-rdc=true",
                             "--device-debug", "-G", "--optimization-info=inline"}) {
    EXPECT_EQ(problem_of(option), "it is not on the list of options a spec may pass (some NVRTC options write files)")
        << option;
  }
}

TEST(NvrtcOptions, IncludePathsAndArchitectureAreTheToolsToSet) {
  EXPECT_EQ(problem_of("-I/etc").rfind("include paths are not a spec's to set", 0), 0u);
  EXPECT_EQ(problem_of("--include-path=/etc").rfind("include paths are not a spec's to set", 0), 0u);
  EXPECT_EQ(problem_of("--gpu-architecture=sm_80").rfind("the architecture comes from the GPU or --arch", 0), 0u);
  EXPECT_EQ(problem_of("-arch=sm_80").rfind("the architecture comes from the GPU or --arch", 0), 0u);
}

TEST(NvrtcOptions, AllowedOptionsWithBadValues) {
  EXPECT_EQ(problem_of("-std=c++98"), "-std takes c++11, c++14, c++17 or c++20, not 'c++98'");
  EXPECT_EQ(problem_of("-std"), "it is not on the list of options a spec may pass (some NVRTC options write files)");
  EXPECT_EQ(problem_of("--ftz=yes"), "-ftz takes true or false, not 'yes'");
  EXPECT_EQ(problem_of("-maxrregcount=0"), "-maxrregcount takes a register count from 1 to 255, not '0'");
  EXPECT_EQ(problem_of("-maxrregcount=256"), "-maxrregcount takes a register count from 1 to 255, not '256'");
  EXPECT_EQ(problem_of("-D2X"), "'2X' is not a macro name (letters, digits and _, not starting with a digit)");
  EXPECT_EQ(problem_of("-D"), "'' is not a macro name (letters, digits and _, not starting with a digit)");
  EXPECT_EQ(problem_of("-UX=1"), "-U takes a macro name only");
  EXPECT_EQ(problem_of("-DX=1\n#include </etc/passwd>"), "it contains a control character");
}

TEST(NvrtcOptions, SummaryNamesEveryAllowedOption) {
  const std::string summary = allowed_compile_options_summary();
  for (const char* name : {"-std=", "-D<name>", "-U<name>", "-use_fast_math", "-lineinfo", "-maxrregcount=",
                           "-ftz=", "-prec-div=", "-prec-sqrt=", "-fmad=", "-extra-device-vectorization",
                           "-default-device"}) {
    EXPECT_NE(summary.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace kernlathe
