// The public entry points of the spec loader: every shipped spec loads, empty and missing files, --problem text and
// finding a spec by name.
#include "tuner/spec/spec_loader.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "spec_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace spec_test;

class SpecLoaderTest : public spec_test::SpecFolderTest {};

TEST(ShippedSpecs, EveryKernelSpecInTheRepositoryLoads) {
  const fs::path kernels = fs::path(KERNLATHE_SOURCE_DIR) / "kernels";
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(kernels)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_kernel_spec(entry.path()));
    ++loaded;
  }
  EXPECT_GE(loaded, 1);
}

TEST_F(SpecLoaderTest, EmptyInputIsAnError) {
  EXPECT_NE(input_error_of([&] { parse_space("", "s.yaml"); }).find("s.yaml: the space file is empty"),
            std::string::npos);
  EXPECT_NE(input_error_of([&] { parse_space("[1, 2]", "s.yaml"); }).find("s.yaml:1:1: the space must be a mapping"),
            std::string::npos);
}

TEST_F(SpecLoaderTest, MissingFiles) {
  EXPECT_NE(input_error_of([&] { load_space(directory_ / "none.yaml"); }).find("space file does not exist"),
            std::string::npos);
  EXPECT_NE(input_error_of([&] { load_kernel_spec(directory_ / "none.yaml"); }).find("spec file does not exist"),
            std::string::npos);
}

TEST(ProblemOverrides, ParsesNameValuePairs) {
  EXPECT_EQ(parse_problem_overrides("M=1024,N=2048"), (ProblemOverrides{{"M", 1024}, {"N", 2048}}));
  EXPECT_EQ(parse_problem_overrides(" M = 1024 , N=-3 "), (ProblemOverrides{{"M", 1024}, {"N", -3}}));
  EXPECT_TRUE(parse_problem_overrides("").empty());
}

TEST(ProblemOverrides, RejectsBadText) {
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N=1.5"); }).find("the value of N is '1.5', not an integer"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N"); }).find("'N' is not NAME=VALUE"), std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N=1,"); }).find("'' is not NAME=VALUE"), std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("2N=1"); }).find("'2N' is not a symbol name"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N=1,N=2"); }).find("N is given twice"), std::string::npos);
  EXPECT_NE(input_error_of([] { parse_problem_overrides("N=99999999999999999999"); }).find("not an integer"),
            std::string::npos);
}

TEST_F(SpecLoaderTest, FindSpecLooksUnderKernels) {
  write_file(directory_ / "kernels/gemm.yaml", "name: gemm\n");
  const fs::path previous = fs::current_path();
  fs::current_path(directory_);
  fs::path found = find_spec("gemm");
  fs::path direct = find_spec("kernels/gemm.yaml");
  std::string message = input_error_of([] { find_spec("gem"); });
  fs::current_path(previous);
  EXPECT_EQ(found, fs::path("kernels/gemm.yaml"));
  EXPECT_EQ(direct, fs::path("kernels/gemm.yaml"));
  EXPECT_NE(message.find("no kernel spec 'gem': tried 'gem' and 'kernels/gem.yaml'"), std::string::npos) << message;
  EXPECT_NE(message.find("specs in ./kernels: gemm"), std::string::npos) << message;
}

}  // namespace
}  // namespace kernlathe
