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

// A workload is tuned problem by problem: more than 10,000 is a mistake, refused at the axis that passes the limit
// before the product is built (100 axes of 10 values would not fit in memory); the same problem twice, in any
// symbol order and from any task, would be tuned twice into one record.
TEST_F(WorkloadFile, TooManyProblemsAndTheSameProblemTwiceAreRefusedByLine) {
  std::string axes;
  for (int axis = 0; axis < 100; ++axis) axes += "      S" + std::to_string(axis) + ": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  const std::string huge = error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    sweep:\n" + axes);
  EXPECT_NE(huge.find("workload.yaml:9"), std::string::npos) << huge;  // S4: 10^4 still fits, 10^5 not
  EXPECT_NE(huge.find("the axes up to 'S4' give 100000 problems, more than a workload's 10000"), std::string::npos)
      << huge;
  std::string listed;
  for (int index = 0; index < 6000; ++index) listed += "      - {M: " + std::to_string(index + 1) + "}\n";
  const std::string many = error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    problems:\n" + listed +
                                    "  - spec: gemm.yaml\n    problems:\n" +
                                    listed.substr(0, listed.size()) );
  EXPECT_NE(many.find("already in task 1"), std::string::npos) << many.substr(0, 300);
  const std::string twice = error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    sweep: {M: [1, 2], N: [3]}\n"
                                     "  - spec: gemm.yaml\n    problem: {N: 3}\n    problems: [{M: 2}]\n");
  EXPECT_NE(twice.find("workload.yaml:5"), std::string::npos) << twice;
  EXPECT_NE(twice.find("task 2: "), std::string::npos) << twice;
  EXPECT_NE(twice.find("at N=3,M=2 is already in task 1"), std::string::npos) << twice;
  std::string more;
  for (int index = 0; index < 6000; ++index) more += "      - {K: " + std::to_string(index + 1) + "}\n";
  const std::string total = error_of("workload: w\ntasks:\n  - spec: gemm.yaml\n    problems:\n" + listed +
                                     "  - spec: gemm.yaml\n    problems:\n" + more);
  EXPECT_NE(total.find("the workload now holds 12000 problems, more than 10000"), std::string::npos)
      << total.substr(0, 300);
}

TEST_F(WorkloadFile, AWorkloadIsToldFromAKernelSpec) {
  EXPECT_TRUE(is_workload_file(write("workload: w\ntasks: []\n")));
  EXPECT_FALSE(is_workload_file(directory_ / "gemm.yaml"));
  EXPECT_FALSE(is_workload_file(directory_ / "missing.yaml"));
}

}  // namespace
}  // namespace kernlathe
