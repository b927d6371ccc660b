// The commit named by records and `tune --version` is the checkout the binaries were built from.
#include "tuner/record/build_commit.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <regex>
#include <string>

namespace kernlathe {
namespace {

// Runs a shell command in the source tree: its exit status and stdout.
std::pair<int, std::string> run_in_source(const std::string& command) {
  FILE* pipe = popen(("cd '" KERNLATHE_SOURCE_DIR "' && " + command + " 2>/dev/null").c_str(), "r");
  std::string out;
  std::array<char, 256> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Built from a git checkout (the project's and CI's case): a commit of this checkout that HEAD contains (HEAD may
// have moved on since the build), in the form records use. Outside a checkout: empty.
TEST(BuildCommit, NamesACommitOfTheCheckoutItWasBuiltFrom) {
  const std::string commit = build_commit();
  if (run_in_source("git rev-parse --is-inside-work-tree").first != 0) {
    EXPECT_EQ(commit, "");
    return;
  }
  std::smatch match;
  ASSERT_TRUE(std::regex_match(commit, match, std::regex("([0-9a-f]{12})(\\+changes)?"))) << commit;
  const std::string hash = match[1];
  EXPECT_EQ(run_in_source("git cat-file -e " + hash + "^{commit}").first, 0) << hash << " is not a commit here";
  EXPECT_EQ(run_in_source("git merge-base --is-ancestor " + hash + " HEAD").first, 0)
      << hash << " is not HEAD or one of its ancestors";
}

TEST(BuildCommit, VersionTextIsTheVersionWithTheCommit) {
  const std::string commit = build_commit();
  const std::string expected =
      commit.empty() ? std::string(KERNLATHE_VERSION) : std::string(KERNLATHE_VERSION) + " (commit " + commit + ")";
  EXPECT_EQ(version_text(), expected);
  EXPECT_EQ(version_text().rfind(KERNLATHE_VERSION, 0), 0u);
}

}  // namespace
}  // namespace kernlathe
