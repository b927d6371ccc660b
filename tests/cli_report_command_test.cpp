// `tune report` as a command: the exit code and the advice when no interpreter can draw, and an installed tune that
// finds its chart script and a Python environment outside the source tree. What the pages show is computed and
// tested in tuner/report/ (tests/report_chart_data_test.cpp, tests/report_roofline_test.cpp).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace kernlathe {
namespace {

TEST(ReportCommand, MissingMatplotlibIsExitOneWithTheFix) {
  const std::string command = std::string("cd '") + KERNLATHE_SOURCE_DIR + "' && '" + TUNE_BINARY +
                              "' report results/runs/conv3x3/sm_90/h200/W=8192_H=8192 -o /tmp/report-no-python-" +
                              std::to_string(::getpid()) + " --python /bin/false 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  EXPECT_NE(output.find("scripts/setup-python.sh"), std::string::npos) << output;
  EXPECT_FALSE(std::filesystem::exists("/tmp/report-no-python-" + std::to_string(::getpid())));  // nothing written
}

// An installed tune: <prefix>/bin/tune (linked or copied: the binary finds its share folder through
// /proc/self/exe) beside <prefix>/share/kernlathe/report/plots.py, run in a folder that is no checkout.
class InstalledTune {
 public:
  InstalledTune() : prefix_(std::filesystem::temp_directory_path() / ("installed-tune-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(prefix_);
    std::filesystem::create_directories(prefix_ / "bin");
    std::filesystem::create_directories(prefix_ / "share/kernlathe/report");
    std::filesystem::create_directories(prefix_ / "elsewhere");
    std::error_code linked;  // a hard link where the file system allows (the binary is large), else a copy
    std::filesystem::create_hard_link(TUNE_BINARY, prefix_ / "bin/tune", linked);
    if (linked) std::filesystem::copy_file(TUNE_BINARY, prefix_ / "bin/tune");
    std::ofstream(prefix_ / "share/kernlathe/report/plots.py") << "# the installed copy\n";
    // A stand-in interpreter: imports anything, and notes which script it was asked to run.
    std::ofstream(prefix_ / "python") << "#!/bin/sh\n[ \"$1\" = -c ] && exit 0\necho \"$1\" > '"
                                      << (prefix_ / "script-run").string() << "'\n";
    std::filesystem::permissions(prefix_ / "python", std::filesystem::perms::owner_all);
  }
  ~InstalledTune() { std::filesystem::remove_all(prefix_); }
  const std::filesystem::path& prefix() const { return prefix_; }

  // Runs the installed tune in <prefix>/elsewhere under `environment`; stdout and stderr together.
  std::pair<int, std::string> report(const std::string& environment) const {
    const std::string command = "cd '" + (prefix_ / "elsewhere").string() + "' && env " + environment + " '" +
                                (prefix_ / "bin/tune").string() + "' report '" + KERNLATHE_SOURCE_DIR +
                                "/results/runs/conv3x3/sm_90/h200/W=8192_H=8192' -o report --no-replay "
                                "--bootstrap 2 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    std::string output;
    char buffer[512];
    while (fgets(buffer, sizeof buffer, pipe)) output += buffer;
    const int status = pclose(pipe);
    return {WEXITSTATUS(status), output};
  }

 private:
  std::filesystem::path prefix_;
};

TEST(ReportCommand, AnInstalledTuneDrawsWithTheScriptInstalledBesideIt) {
  const InstalledTune installed;
  const auto [status, output] = installed.report("KERNLATHE_PYTHON='" + (installed.prefix() / "python").string() + "'");
  EXPECT_EQ(status, 0) << output;
  std::ifstream run(installed.prefix() / "script-run");
  std::string script;
  std::getline(run, script);
  EXPECT_EQ(script, (installed.prefix() / "share/kernlathe/report/plots.py").string());
}

TEST(ReportCommand, AnInstalledTuneFindsThePythonEnvironmentOutsideTheSourceTree) {
  const InstalledTune installed;
  std::filesystem::create_directories(installed.prefix() / "data/kernlathe/venv/bin");
  std::filesystem::copy_file(installed.prefix() / "python", installed.prefix() / "data/kernlathe/venv/bin/python");
  const auto [status, output] =
      installed.report("-u KERNLATHE_PYTHON XDG_DATA_HOME='" + (installed.prefix() / "data").string() + "'");
  EXPECT_EQ(status, 0) << output;
  EXPECT_TRUE(std::filesystem::exists(installed.prefix() / "script-run")) << output;
}

TEST(ReportCommand, NoPythonAtAllIsSaidWithHowToMakeAnEnvironment) {
  const InstalledTune installed;
  std::filesystem::create_directories(installed.prefix() / "empty");
  const auto [status, output] = installed.report("-i HOME='" + installed.prefix().string() + "' PATH='" +
                                                 (installed.prefix() / "empty").string() + "'");
  EXPECT_EQ(status, 1) << output;
  const std::string user_python = (installed.prefix() / ".local/share/kernlathe/venv/bin/python").string();
  EXPECT_NE(output.find("no Python was found (tried " + user_python), std::string::npos)
      << output;
  EXPECT_NE(output.find("python3 -m venv " + (installed.prefix() / ".local/share/kernlathe/venv").string()),
            std::string::npos)
      << output;
  EXPECT_NE(output.find((installed.prefix() / "share/kernlathe/report/requirements.txt").string()), std::string::npos)
      << output;
  EXPECT_FALSE(std::filesystem::exists(installed.prefix() / "elsewhere/report")) << "nothing written";
}

}  // namespace
}  // namespace kernlathe
