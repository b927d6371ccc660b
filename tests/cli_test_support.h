#pragma once
// Running the `tune` binary from a CLI test: the command in the repository root, stdout and stderr captured apart,
// and the exit code. TUNE_BINARY and KERNLATHE_SOURCE_DIR come from the test target's compile definitions.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace kernlathe::cli_test {

// Everything written to a temporary file (std::tmpfile) that a command reported into, from its start; closes it.
inline std::string read_back(std::FILE* file) {
  std::rewind(file);
  std::string contents;
  for (int c; (c = std::fgetc(file)) != EOF;) contents += static_cast<char>(c);
  std::fclose(file);
  return contents;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `tune` with arguments in the repository root, after shell_prefix (e.g. "ulimit -d 1000 && ").
inline CommandResult run_tune_in_shell(const std::string& shell_prefix, const std::string& arguments) {
  namespace fs = std::filesystem;
  const fs::path err_file = fs::temp_directory_path() / ("tune_cli_test_err_" + std::to_string(::getpid()));
  const std::string command = std::string("cd '") + KERNLATHE_SOURCE_DIR + "' && " + shell_prefix + "'" + TUNE_BINARY +
                              "' " + arguments + " 2>'" + err_file.string() + "'";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  result.err.assign(std::istreambuf_iterator<char>(err), {});
  fs::remove(err_file);
  return result;
}

inline CommandResult run_tune(const std::string& arguments) { return run_tune_in_shell("", arguments); }

}  // namespace kernlathe::cli_test
