// Workload files (tuner/spec/workload.h): sweeps expand to the product of their axes in order, tuples bind several
// symbols at once, listed problems and fixed symbols combine, and every mistake is an InputError at file:line.
#include "tuner/spec/workload.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tuner/common/error.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

class WorkloadFile : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("spec_workload_test-" + std::to_string(::getpid()));
    fs::create_directories(directory_);
    std::ofstream(directory_ / "gemm.yaml") << "name: stand-in\n";  // only its existence matters here
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path write(const std::string& text) {
    const fs::path file = directory_ / "workload.yaml";
    std::ofstream(file) << text;
    return file;
  }
  // The InputError's message for a workload text, or "" when it reads.
  std::string error_of(const std::string& text) {
    try {
      read_workload(write(text));
    } catch (const InputError& error) {
      return error.what();
    }
    return "";
  }

  fs::path directory_;
};

TEST_F(WorkloadFile, ASweepIsTheProductOfItsAxesFirstAxisSlowest) {
  const Workload workload = read_workload(write(R"(workload: llama3-8b.layer
tasks:
  - spec: gemm.yaml
    problem: {B_LAYOUT: 1}
    sweep:
      M: [16, 4096]
      N,K: [[6144, 4096], [4096, 14336], [4096, 4096]]
)"));
  EXPECT_EQ(workload.name, "llama3-8b.layer");
  ASSERT_EQ(workload.problems.size(), 6u);
  EXPECT_EQ(workload.problems[0].problem_text(), "B_LAYOUT=1,M=16,N=6144,K=4096");
  EXPECT_EQ(workload.problems[1].problem_text(), "B_LAYOUT=1,M=16,N=4096,K=14336");
  EXPECT_EQ(workload.problems[3].problem_text(), "B_LAYOUT=1,M=4096,N=6144,K=4096");
  EXPECT_EQ(workload.problems[5].problem_text(), "B_LAYOUT=1,M=4096,N=4096,K=4096");
  EXPECT_EQ(workload.problems[0].spec, directory_ / "gemm.yaml");
}

TEST_F(WorkloadFile, ListedProblemsAndTasksKeepTheirOrder) {
  const Workload workload = read_workload(write(R"(workload: rows
tasks:
  - spec: gemm.yaml
    problems:
      - {ROWS: 1000, COLS: 4096}
      - {ROWS: 16384, COLS: 4000}
  - spec: gemm.yaml
)"));
  ASSERT_EQ(workload.problems.size(), 3u);
  EXPECT_EQ(workload.problems[0].problem_text(), "ROWS=1000,COLS=4096");
  EXPECT_EQ(workload.problems[1].problem_text(), "ROWS=16384,COLS=4000");
  EXPECT_EQ(workload.problems[2].problem_text(), "");  // the spec's own problem
}

TEST_F(WorkloadFile, MistakesNameTheLineAndWhat) {
  EXPECT_NE(error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    sweep:\n      N,K: [[1, 2, 3]]\n").find("workload.yaml:5"),
            std::string::npos);
  EXPECT_NE(error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    sweep:\n      N,K: [[1, 2, 3]]\n").find("3 values for 2 symbols"),
            std::string::npos);
  EXPECT_NE(error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    problem: {M: 1}\n    sweep: {M: [2]}\n").find("both fixed"),
            std::string::npos);
  EXPECT_NE(error_of("workload: w\ntasks:\n  - spec: nowhere.yaml\n").find("nowhere.yaml"), std::string::npos);
  EXPECT_NE(error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    sweeps: {M: [2]}\n").find("sweeps"), std::string::npos);
  EXPECT_NE(error_of("workload: w\ntasks: []\n").find("no tasks"), std::string::npos);
  EXPECT_NE(error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    sweep: {M: []}\n").find("no values"), std::string::npos);
  EXPECT_NE(error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    sweep: {M: [x]}\n").find("workload.yaml:4"), std::string::npos);
  EXPECT_NE(error_of("tasks: []\n").find("workload"), std::string::npos);
  EXPECT_NE(error_of("workload: ../up\ntasks:\n  - spec: gemm.yaml\n").find("workload.yaml:1"), std::string::npos);
}

TEST_F(WorkloadFile, AWorkloadIsToldFromAKernelSpec) {
  EXPECT_TRUE(is_workload_file(write("workload: w\ntasks: []\n")));
  EXPECT_FALSE(is_workload_file(directory_ / "gemm.yaml"));
  EXPECT_FALSE(is_workload_file(directory_ / "missing.yaml"));
}

}  // namespace
}  // namespace kernlathe
