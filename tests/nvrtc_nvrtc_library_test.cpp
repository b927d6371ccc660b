// NVRTC opened at run time (tuner/nvrtc/nvrtc_library.h): the toolkit this project builds against is found and
// every entry point resolves; nothing this project builds needs libnvrtc or libcuda at load time.
#include "tuner/nvrtc/nvrtc_library.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace kernlathe {
namespace {

TEST(NvrtcLibrary, LoadsOnceAndEveryEntryPointResolves) {
  const NvrtcLibrary& library = nvrtc();
  EXPECT_EQ(&library, &nvrtc());
  EXPECT_NE(library.path.find("libnvrtc"), std::string::npos) << library.path;
  int major = 0, minor = 0;
  ASSERT_EQ(library.nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_GE(major, 12);
  EXPECT_STREQ(library.nvrtcGetErrorString(NVRTC_SUCCESS), "NVRTC_SUCCESS");
}

TEST(NvrtcLibrary, TuneNeedsNeitherNvrtcNorTheDriverAtLoadTime) {
  // readelf lists the libraries the dynamic loader must find before main() runs.
  std::string command = std::string("readelf -d ") + TUNE_BINARY + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  ASSERT_EQ(pclose(pipe), 0) << output;
  ASSERT_NE(output.find("NEEDED"), std::string::npos) << output;
  EXPECT_EQ(output.find("libnvrtc"), std::string::npos) << output;
  EXPECT_EQ(output.find("libcuda.so"), std::string::npos) << output;
}

}  // namespace
}  // namespace kernlathe
