// The bad-input corpus (tests/data/bad_inputs/): every spec there is wrong in one way. `tune` run on each exits 2
// with one line naming the file, the line and what is wrong, and writes nothing: each command runs in a fresh
// folder that is also its cubin cache (XDG_CACHE_HOME) and its --out, and the folder must stay empty.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path corpus = fs::path(KERNLATHE_SOURCE_DIR) / "tests" / "data" / "bad_inputs";

struct CommandResult {
  int exit_code = -1;
  std::string err;
};

// A folder of its own per call, removed afterwards; stderr goes to a file outside it.
class FreshFolder {
 public:
  explicit FreshFolder(const std::string& label) {
    static int counter = 0;
    path_ = fs::temp_directory_path() / ("tune_bad_inputs_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(counter++) + "_" + label);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~FreshFolder() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

  // Everything under the folder, relative paths; empty when nothing was written.
  std::vector<std::string> contents() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(path_)) found.push_back(fs::relative(entry.path(), path_));
    return found;
  }

 private:
  fs::path path_;
};

// Runs `tune arguments` with `folder` as working folder and cubin cache; "{out}" in arguments becomes folder/out.
CommandResult run_tune_in(const FreshFolder& folder, std::string arguments) {
  if (std::size_t at = arguments.find("{out}"); at != std::string::npos)
    arguments.replace(at, 5, (folder.path() / "out").string());
  const fs::path err_file = fs::temp_directory_path() / ("tune_bad_inputs_err_" + std::to_string(::getpid()));
  const std::string command = "cd '" + folder.path().string() + "' && XDG_CACHE_HOME='" + folder.path().string() +
                              "' '" + TUNE_BINARY + "' " + arguments + " >/dev/null 2>'" + err_file.string() + "'";
  CommandResult result;
  const int status = std::system(command.c_str());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_file);
  result.err.assign(std::istreambuf_iterator<char>(err), {});
  fs::remove(err_file);
  return result;
}

struct BadInput {
  const char* file;       // under tests/data/bad_inputs
  int line;               // of the problem in `located_in` (the spec unless stated)
  const char* what;       // a piece of the message that says what is wrong
  bool every_command;     // also compile-check and run (load-time checks), not only validate
  const char* located_in = nullptr;  // the file the message names, when not the spec itself
};

const BadInput cases[] = {
    {"compile_option_pch.yaml", 13, "compile option '--create-pch=kernel.pch' is not allowed", true},
    {"compile_option_time_trace.yaml", 13, "compile option '--fdevice-time-trace=trace.json' is not allowed", true},
    {"compile_option_time.yaml", 13, "compile option '-time=timing.csv' is not allowed", true},
    {"compile_option_include.yaml", 13, "compile option '-I/etc' is not allowed: include paths are not a spec's to set",
     true},
    {"name_parent.yaml", 2, "kernel name '../../escaped' contains '/'", true},
    {"name_absolute.yaml", 2, "kernel name '/tmp/escaped' contains '/'", true},
    {"name_hidden.yaml", 2, "kernel name '.hidden' starts with a dot", true},
    {"space_name_parent.yaml", 7, "space name '../space' contains '/'", true},
    {"space_name_in_file.yaml", 2, "space name '../../space' contains '/'", true, "bad_space_name.space.yaml"},
    {"reference_breaks_constraint.yaml", 14,
     "verify.reference (BLOCK=64, unnamed parameters at their defaults) breaks the constraint 'BLOCK >= 128'", false},
    {"default_breaks_constraint.yaml", 9,
     "the space's default configuration (BLOCK=128) breaks the constraint 'BLOCK != 128'", false},
    {"reference_unknown_parameter.yaml", 13,
     "verify.reference names 'BLOK', which is not a parameter of the space (did you mean 'BLOCK'?)", false},
    {"reference_unknown_value.yaml", 13, "verify.reference value of 'BLOCK' is 96, which is not one of the parameter's "
     "values", false},
    {"entry_not_in_template.yaml", 4, "entry 'scale_kernel' does not appear in the template", false},
    {"buffer_count_negative.yaml", 10, "the count of buffer 'x' ('N - 5000') is -904 with problem N=4096", false},
    {"buffer_count_overflow.yaml", 10, "more bytes than a 64-bit size holds", false},
    {"problem_negative.yaml", 5, "problem symbol 'N' is -4096; problem symbols are sizes and counts", false},
    {"block_zero.yaml", 12, "launch.block[1] '0' is 0 for the default configuration BLOCK=128", false},
    {"block_negative_default.yaml", 12, "launch.block[0] 'BLOCK - 256' is -128 for the default configuration", false},
    {"shared_memory_negative.yaml", 12,
     "launch.shared_memory '1024 - BLOCK * 16' is -1024 bytes for the default configuration BLOCK=128", false},
    {"stream_pattern_unclosed.yaml", 14,
     "stream.files '${KERNLATHE_BAD_INPUT_DATA:-/tmp/kernlathe-bad-input/items_*.npy': the '${' at character 1 has "
     "no closing '}'",
     false},
    {"scratch_without_zero_init.yaml", 12, "argument 'counters' is scratch: true, so it needs init: {constant: 0}",
     false},
    {"scratch_output.yaml", 12, "argument 'counters' is scratch: true with role: out", false},
    {"scratch_scalar.yaml", 11, "argument 'n' is a scalar (it has value:); scratch applies to buffers only", false},
};

void expect_rejected(const BadInput& bad, const std::string& arguments) {
  SCOPED_TRACE(arguments);
  FreshFolder folder(bad.file);
  CommandResult result = run_tune_in(folder, arguments);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  const fs::path named = corpus / (bad.located_in ? bad.located_in : bad.file);
  const std::string where = "tune: " + named.string() + ":" + std::to_string(bad.line) + ":";
  EXPECT_EQ(result.err.rfind(where, 0), 0u) << "expected the message to start with " << where << "\n" << result.err;
  EXPECT_NE(result.err.find(bad.what), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << "one line: " << result.err;
  EXPECT_EQ(folder.contents(), std::vector<std::string>{}) << "written by: " << arguments;
}

TEST(BadInputs, EveryCaseIsInTheCorpusAndEveryCorpusSpecIsACase) {
  std::vector<std::string> listed;
  for (const BadInput& bad : cases) listed.push_back(bad.file);
  for (const auto& entry : fs::directory_iterator(corpus)) {
    const std::string name = entry.path().filename();
    if (entry.path().extension() != ".yaml" || name == "good.yaml" || name.ends_with(".space.yaml")) continue;
    EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end()) << name << " has no case";
  }
  for (const std::string& name : listed) EXPECT_TRUE(fs::is_regular_file(corpus / name)) << name;
}

TEST(BadInputs, ValidateRejectsEachWithFileLineAndWhat) {
  for (const BadInput& bad : cases) expect_rejected(bad, "validate '" + (corpus / bad.file).string() + "'");
}

TEST(BadInputs, CompileCheckAndRunRejectLoadTimeCases) {
  for (const BadInput& bad : cases) {
    if (!bad.every_command) continue;
    const std::string spec = "'" + (corpus / bad.file).string() + "'";
    expect_rejected(bad, "compile-check " + spec + " --arch sm_90 --sample 2 --jobs 1");
    expect_rejected(bad, "run " + spec + " --out {out} --budget 1");
  }
}

TEST(BadInputs, NegativeProblemOverrideOnTheCommandLine) {
  FreshFolder folder("override");
  CommandResult result =
      run_tune_in(folder, "space '" + (corpus / "good.yaml").string() + "' --arch sm_90 --problem N=-8");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err, "tune: --problem N=-8: N is negative; problem symbols are sizes and counts\n");
  EXPECT_EQ(folder.contents(), std::vector<std::string>{});
}

// The control: the same harness sees what a command writes. compile-check of the valid spec fills its cubin
// cache in the fresh folder, so an empty folder after a bad spec means the bad spec wrote nothing.
// --devices takes `all` or GPU indices, each once; `all` needs a GPU to count, so a replay must name indices.
TEST(BadInputs, DevicesListsThatCannotBeUsed) {
  FreshFolder folder("devices");
  const fs::path source(KERNLATHE_SOURCE_DIR);
  const std::string run = "run '" + (source / "kernels/saxpy.yaml").string() + "' --replay '" +
                          (source / "results/runs/saxpy/sm_90/N=67108864/evaluations.csv").string() + "' --out {out} ";
  for (const char* devices : {"0,x", "0,,1", "-1", "1.5", "0,0"}) {
    CommandResult result = run_tune_in(folder, run + "--devices " + devices);
    EXPECT_EQ(result.exit_code, 2) << devices << ": " << result.err;
    EXPECT_NE(result.err.find("--devices"), std::string::npos) << devices << ": " << result.err;
  }
  CommandResult all = run_tune_in(folder, run + "--devices all");
  EXPECT_EQ(all.exit_code, 2) << all.err;
  EXPECT_NE(all.err.find("with --replay give indices"), std::string::npos) << all.err;
  CommandResult both = run_tune_in(folder, run + "--devices 0,1 --device 1");
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_FALSE(fs::exists(folder.path() / "out")) << "a refused command wrote its record folder";
  CommandResult good = run_tune_in(folder, run + "--devices 0,1 --budget 20");
  EXPECT_EQ(good.exit_code, 0) << good.err;
  std::ifstream record(folder.path() / "out" / "evaluations.csv");
  std::string header;
  std::getline(record, header);
  EXPECT_EQ(header.substr(header.rfind(',') + 1), "device");
}

TEST(BadInputs, TheHarnessSeesWhatAGoodSpecWrites) {
  FreshFolder folder("control");
  CommandResult validated = run_tune_in(folder, "validate '" + (corpus / "good.yaml").string() + "'");
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
  CommandResult compiled =
      run_tune_in(folder, "compile-check '" + (corpus / "good.yaml").string() + "' --arch sm_90 --sample 2 --jobs 1");
  EXPECT_EQ(compiled.exit_code, 0) << compiled.err;
  std::vector<std::string> written = folder.contents();
  EXPECT_NE(std::find(written.begin(), written.end(), "kernlathe/cubins"), written.end())
      << "the cubin cache was expected in the fresh folder";
}

}  // namespace
