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
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
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
    // Malformed specs and spaces: wrong types, unknown keys, duplicates, expressions, sizes, files.
    {"parameters_empty.yaml", 7, "parameters is an empty list; give at least one parameter", true},
    {"parameter_twice.yaml", 9, "parameter 'BLOCK' is declared twice (first at line 8)", true},
    {"values_not_a_list.yaml", 8, "parameter 'BLOCK' values must be a list, found '128'", true},
    {"value_wrong_type.yaml", 8, "parameter 'BLOCK' value must be an integer, found 'large'", true},
    {"value_huge.yaml", 8, "parameter 'BLOCK' value is 99999999999999999999999, past the range of a 64-bit integer",
     true},
    {"default_wrong_type.yaml", 8, "parameter 'BLOCK' default must be an integer, found 'true'", true},
    {"range_huge.yaml", 8, "parameter 'BLOCK' range gives 10000000000 values, more than the 1048576", true},
    {"problem_huge.yaml", 5, "problem symbol 'N' is 123456789012345678901234567890, past the range of a 64-bit", true},
    {"unknown_key.yaml", 12, "unknown key 'lanuch' in the kernel spec (did you mean 'launch'?)", true},
    {"unknown_parameter_key.yaml", 8, "unknown key 'valeus' in a parameter (did you mean 'values'?)", true},
    {"constraint_syntax.yaml", 9, "in expression 'BLOCK >= ': expected an operand", true},
    {"constraint_unknown_name.yaml", 9, "unknown name 'BLOKC' in 'BLOKC >= 64'; did you mean 'BLOCK'?", true},
    {"launch_unknown_name.yaml", 12, "unknown name 'THREADS' in 'THREADS'", true},
    {"constraint_divides_by_zero.yaml", 9,
     "constraint 'N % (BLOCK - 128) == 0' cannot be evaluated for BLOCK=128: integer modulo by zero", false},
    {"space_product_huge.yaml", 8, "space 'bad_input' has more than 2^64 valid configurations", false},
    {"yaml_syntax.yaml", 8, "malformed YAML", true},
    {"spec_a_list.yaml", 2, "the kernel spec must be a mapping of key: value pairs, found a list", true},
    {"spec_empty.yaml", 0, "the spec file is empty", true},
    {"name_a_list.yaml", 2, "name must be a single value, found a list", true},
    {"entry_a_number.yaml", 4, "entry '42' is not a kernel name", true},
    {"space_a_folder.yaml", 6, "space file '", true},
    {"space_empty_file.yaml", 0, "the space file is empty", true, "empty.space.yaml"},
    {"template_a_folder.yaml", 3, "template file '", true},
    {"template_missing.yaml", 3, "no_such_kernel.cu' does not exist (paths in a spec are relative to the spec file)",
     true},
};

// The folder and the file that is not there, named as such (the path in between is the corpus's).
TEST(BadInputs, FoldersWhereFilesBelongAreSaidToBeFolders) {
  for (const char* spec : {"space_a_folder.yaml", "template_a_folder.yaml"}) {
    FreshFolder folder(spec);
    const CommandResult result = run_tune_in(folder, "validate '" + (corpus / spec).string() + "'");
    EXPECT_NE(result.err.find("a_folder.d' is a folder, not a file"), std::string::npos) << result.err;
  }
}

void expect_rejected(const BadInput& bad, const std::string& arguments) {
  SCOPED_TRACE(arguments);
  FreshFolder folder(bad.file);
  CommandResult result = run_tune_in(folder, arguments);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  const fs::path named = corpus / (bad.located_in ? bad.located_in : bad.file);
  // Line 0: the file as a whole (an empty file has no line to point at).
  const std::string where = "tune: " + named.string() + (bad.line > 0 ? ":" + std::to_string(bad.line) : "") + ":";
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

// ------------------------------------------------------------------ records, run.json, folders and options
// A replay of the recorded saxpy run, copied into the fresh folder so that each case can spoil one part of it.

const fs::path source_directory(KERNLATHE_SOURCE_DIR);
const fs::path saxpy_spec = source_directory / "kernels/saxpy.yaml";
const fs::path saxpy_record = source_directory / "results/runs/saxpy/sm_90/N=67108864";

std::string read_text(const fs::path& file) {
  std::ifstream input(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(input), {});
}

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

// The saxpy record copied to folder/record (evaluations.csv and run.json); returns the CSV's path.
fs::path copy_saxpy_record(const FreshFolder& folder) {
  const fs::path record = folder.path() / "record";
  fs::create_directories(record);
  fs::copy_file(saxpy_record / "evaluations.csv", record / "evaluations.csv");
  fs::copy_file(saxpy_record / "run.json", record / "run.json");
  return record / "evaluations.csv";
}

std::string replay_of(const fs::path& csv, const std::string& more = "") {
  return "run '" + saxpy_spec.string() + "' --replay '" + csv.string() + "' --out {out} " + more;
}

// Exit 2, one line that starts with "tune: <starts_with>" and holds `what`, and no record folder written.
void expect_refused(const FreshFolder& folder, const std::string& arguments, const std::string& starts_with,
                    const std::string& what) {
  SCOPED_TRACE(arguments);
  const CommandResult result = run_tune_in(folder, arguments);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err.rfind("tune: " + starts_with, 0), 0u)
      << "expected 'tune: " << starts_with << "'\n" << result.err;
  EXPECT_NE(result.err.find(what), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << "one line: " << result.err;
  EXPECT_FALSE(fs::exists(folder.path() / "out")) << "a refused command wrote its record folder";
}

TEST(BadRecords, ReplaysOfRecordsThatHoldNothingAreRefusedByName) {
  FreshFolder folder("records");
  const fs::path csv = copy_saxpy_record(folder);
  const std::string text = read_text(csv);
  const std::string header = text.substr(0, text.find('\n') + 1);

  write_text(folder.path() / "empty/evaluations.csv", "");
  expect_refused(folder, replay_of(folder.path() / "empty/evaluations.csv"),
                 (folder.path() / "empty/evaluations.csv").string() + ":1:", "the record file is empty");
  write_text(folder.path() / "header/evaluations.csv", header);
  expect_refused(folder, replay_of(folder.path() / "header/evaluations.csv"),
                 (folder.path() / "header/evaluations.csv").string() + ":2:", "header and no rows: nothing to replay");
  write_text(folder.path() / "cut/evaluations.csv", header.substr(0, 40));
  expect_refused(folder, replay_of(folder.path() / "cut/evaluations.csv"),
                 (folder.path() / "cut/evaluations.csv").string() + ":1:", "header row ends without its newline");
  expect_refused(folder, replay_of(folder.path() / "record"), "--replay " + (folder.path() / "record").string(),
                 "is a folder; name its evaluations.csv");
  expect_refused(folder, replay_of(folder.path() / "nowhere.csv"), "--replay", "no such file");
  // The replay subcommand reads records the same way.
  expect_refused(folder, "replay --csv '" + (folder.path() / "header/evaluations.csv").string() + "' --spec '" +
                             saxpy_spec.string() + "' --seeds 1 --budget 5",
                 (folder.path() / "header/evaluations.csv").string() + ":2:", "nothing to replay");
  expect_refused(folder, "replay --csv '" + (folder.path() / "record").string() + "' --spec '" + saxpy_spec.string() +
                             "' --seeds 1 --budget 5",
                 (folder.path() / "record").string() + ": is a folder", "a record file");
}

TEST(BadRecords, RunJsonWithTextForANumberNamesTheFileAndTheKey) {
  FreshFolder folder("run-json-number");
  const fs::path csv = copy_saxpy_record(folder);
  nlohmann::json run = nlohmann::json::parse(read_text(csv.parent_path() / "run.json"));
  run["runs"][0]["extra"]["copy_bandwidth_gbps"] = "fast";
  write_text(csv.parent_path() / "run.json", run.dump(2));
  expect_refused(folder, replay_of(csv), (csv.parent_path() / "run.json").string() + ":",
                 "extra.copy_bandwidth_gbps is 'fast', which is not a number");
}

TEST(BadRecords, AnUnknownArchInTheReplayedRunJsonIsTheFilesNotAnArchOption) {
  FreshFolder folder("run-json-arch");
  const fs::path csv = copy_saxpy_record(folder);
  nlohmann::json run = nlohmann::json::parse(read_text(csv.parent_path() / "run.json"));
  for (auto& entry : run["runs"]) entry["arch"] = "sm_999";
  write_text(csv.parent_path() / "run.json", run.dump(2));
  const CommandResult result = run_tune_in(folder, replay_of(csv));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err.rfind("tune: " + (csv.parent_path() / "run.json").string() + ": the recorded arch 'sm_999'", 0),
            0u) << result.err;
  EXPECT_EQ(result.err.find("--arch '"), std::string::npos) << "no --arch was given: " << result.err;
  EXPECT_FALSE(fs::exists(folder.path() / "out"));
  // With --arch the recorded arch is not read.
  EXPECT_EQ(run_tune_in(folder, replay_of(csv, "--arch sm_90 --budget 3 --json")).exit_code, 0);
}

TEST(BadRecords, OutThatIsAFileOrLiesUnderOne) {
  FreshFolder folder("out-file");
  const fs::path csv = copy_saxpy_record(folder);
  write_text(folder.path() / "plain", "not a folder\n");
  const std::string plain = (folder.path() / "plain").string();
  const std::string run = "run '" + saxpy_spec.string() + "' --replay '" + csv.string() + "' --out '";
  expect_refused(folder, run + plain + "'", "--out " + plain + ": is a file, not a folder", "--out names the folder");
  expect_refused(folder, run + plain + "/deeper/still'", "--out " + plain + "/deeper/still: " + plain + " is a file",
                 "no folder can be made under it");
  EXPECT_EQ(read_text(folder.path() / "plain"), "not a folder\n");
}

TEST(BadRecords, ACorruptRunJsonInOutIsReportedBeforeTheRecordIsTouched) {
  FreshFolder folder("out-run-json");
  const fs::path csv = copy_saxpy_record(folder);
  for (const std::string& corrupt : {std::string("{\"runs\": [oops"), std::string("[1, 2]"),
                                     std::string("{\"runs\": {\"kernel\": \"saxpy\"}}")}) {
    const fs::path out = folder.path() / "spoilt";
    fs::remove_all(out);
    write_text(out / "run.json", corrupt);
    const std::string replay_into =
        "run '" + saxpy_spec.string() + "' --replay '" + csv.string() + "' --out '" + out.string() + "' --budget 3";
    const CommandResult fresh = run_tune_in(folder, replay_into);
    EXPECT_EQ(fresh.exit_code, 2) << corrupt << ": " << fresh.err;
    EXPECT_EQ(fresh.err.rfind("tune: " + (out / "run.json").string() + ": ", 0), 0u) << fresh.err;
    EXPECT_FALSE(fs::exists(out / "evaluations.csv")) << corrupt << ": the record was opened for writing";
    EXPECT_EQ(read_text(out / "run.json"), corrupt) << "run.json was replaced";
    // Beside a record already there: the record stays byte for byte.
    fs::copy_file(csv, out / "evaluations.csv");
    const CommandResult resumed = run_tune_in(folder, replay_into + " --resume");
    EXPECT_EQ(resumed.exit_code, 2) << resumed.err;
    EXPECT_EQ(read_text(out / "evaluations.csv"), read_text(csv));
  }
}

TEST(BadOptions, CountsAndDurationsOutOfRangeAreRefusedByOption) {
  FreshFolder folder("options");
  const fs::path csv = copy_saxpy_record(folder);
  for (const auto& [option, named] : std::vector<std::pair<std::string, std::string>>{
           {"--jobs -1", "--jobs"}, {"--timeout -1", "--timeout"}, {"--timeout 0", "--timeout"},
           {"--budget 0", "--budget"}, {"--budget -3", "--budget"}, {"--time 0s", "--time"},
           {"--final -1", "--final"}}) {
    SCOPED_TRACE(option);
    const CommandResult result = run_tune_in(folder, replay_of(csv, option));
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(named), std::string::npos) << result.err;
    EXPECT_FALSE(fs::exists(folder.path() / "out"));
  }
  const CommandResult compile =
      run_tune_in(folder, "compile-check '" + (corpus / "good.yaml").string() + "' --jobs -1");
  EXPECT_EQ(compile.exit_code, 2) << compile.err;
  EXPECT_NE(compile.err.find("--jobs"), std::string::npos) << compile.err;
  EXPECT_FALSE(fs::exists(folder.path() / "kernlathe")) << "the refused compile-check filled its cubin cache";
}

TEST(BadOptions, AnUnknownCommandIsNamedAndTheCommandsListed) {
  FreshFolder folder("command");
  const CommandResult result = run_tune_in(folder, "frob spec.yaml");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.err.rfind("tune: unknown command 'frob'", 0), 0u) << result.err;
  for (const char* command : {"space", "validate", "compile-check", "run", "best", "export", "replay", "analyze",
                              "report"})
    EXPECT_NE(result.err.find(command), std::string::npos) << command << " is not listed: " << result.err;
  const CommandResult close = run_tune_in(folder, "rnu spec.yaml");
  EXPECT_NE(close.err.find("did you mean run?"), std::string::npos) << close.err;
  EXPECT_EQ(folder.contents(), std::vector<std::string>{});
}

TEST(BadOptions, ASpecThatIsAFolderOrMissing) {
  FreshFolder folder("spec-folder");
  const CommandResult directory = run_tune_in(folder, "validate '" + corpus.string() + "'");
  EXPECT_EQ(directory.exit_code, 2) << directory.err;
  EXPECT_NE(directory.err.find(corpus.string()), std::string::npos) << directory.err;
  const CommandResult missing = run_tune_in(folder, "validate no_such_spec.yaml");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("no_such_spec"), std::string::npos) << missing.err;
  EXPECT_EQ(folder.contents(), std::vector<std::string>{});
}

// CLI11's own refusals (a value that does not convert, an option no command has, a number out of range) get the
// same one line as every bad input: "tune: ", the command, what is wrong and where the options are listed.
TEST(BadOptions, OptionsTheParserRefusesGetOneLineThatNamesTheCommand) {
  FreshFolder folder("parser");
  for (const auto& [arguments, expected] : std::vector<std::pair<std::string, std::string>>{
           {"run '" + saxpy_spec.string() + "' --seed abc", "tune: run: "},
           {"run '" + saxpy_spec.string() + "' --frobnicate", "tune: run: "},
           {"cover saxpy --max-configs 0", "tune: cover: "},
           {"compile-check '" + saxpy_spec.string() + "' --sample 0", "tune: compile-check: "},
           {"compile-check '" + saxpy_spec.string() + "' --sample -3", "tune: compile-check: "},
           {"", "tune: a command is required; the commands are space, validate"}}) {
    SCOPED_TRACE(arguments);
    const CommandResult result = run_tune_in(folder, arguments);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(result.err.rfind(expected, 0), 0u) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
  EXPECT_EQ(folder.contents(), std::vector<std::string>{});
}

// What `tune run` can refuse without the problem's device is refused before a GPU is looked for: on a machine
// without one these are exit 2 (bad input), not exit 3 (no GPU).
TEST(BadOptions, AStrategyOrAConfigurationThatCannotBeIsRefusedBeforeTheGpu) {
  FreshFolder folder("before-gpu");
  const std::string run = "run '" + saxpy_spec.string() + "' --out {out} ";
  for (const auto& [option, named] : std::vector<std::pair<std::string, std::string>>{
           {"--strategy frob", "unknown search strategy 'frob'"},
           {"--strategy portfolio:frob=1", "'frob=1' is not a setting of the portfolio"},
           {"--strategy random:x=1", "only the portfolio takes settings"},
           {"--config ===", "--config ===: '===' is not NAME=VALUE"},
           {"--config BLOCK=7", "--config BLOCK=7: 7 is not one of the values of 'BLOCK'"},
           {"--config BLOK=128", "'BLOK' is not a parameter of the space (did you mean 'BLOCK'?)"}}) {
    SCOPED_TRACE(option);
    const CommandResult result = run_tune_in(folder, run + option);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(named), std::string::npos) << result.err;
  }
  EXPECT_EQ(folder.contents(), std::vector<std::string>{});
}

// Every output folder option, not only tune run's --out: a file there is exit 2 by option and path, written to
// nothing. A kernel nobody stored or specified is a mistyped name (exit 2), as in tune export.
TEST(BadOptions, OutputFoldersThatAreFilesAndKernelsThatDoNotExist) {
  FreshFolder folder("output-folders");
  const fs::path csv = copy_saxpy_record(folder);
  write_text(folder.path() / "plain", "not a folder\n");
  const std::string plain = (folder.path() / "plain").string();
  const std::string best_dir = (fs::path(KERNLATHE_SOURCE_DIR) / "results" / "best").string();
  write_text(folder.path() / "workload.yaml",
             "workload: w\ntasks:\n  - spec: " + saxpy_spec.string() + "\n    problems: [{N: 1024}]\n");
  for (const auto& [arguments, expected] : std::vector<std::pair<std::string, std::string>>{
           {"sweep '" + (folder.path() / "workload.yaml").string() + "' --out '" + plain + "'",
            "tune: --out " + plain + ": is a file"},
           {"export saxpy --dir '" + best_dir + "' -o '" + plain + "'", "tune: -o " + plain + ": is a file"},
           {"t4 '" + csv.string() + "' -o '" + plain + "'", "tune: -o " + plain + ": is a file"},
           {"report '" + csv.string() + "' -o '" + plain + "'", "tune: -o " + plain + ": is a file"},
           {"cover '" + saxpy_spec.string() + "' --best-dir '" + plain + "/db'", "tune: --best-dir " + plain + "/db: " + plain + " is a file"},
           {"best frobkernel --dir '" + best_dir + "'", "tune: no kernel 'frobkernel': nothing stored under"},
           {"best saxpy --dir '" + best_dir + "' --problem N=a", "tune: --problem: "},
           {"best saxpy --dir '" + best_dir + "' --problem Q=4", "tune: --problem Q=4: kernel saxpy has no symbol Q"}}) {
    SCOPED_TRACE(arguments);
    const CommandResult result = run_tune_in(folder, arguments);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(result.err.rfind(expected, 0), 0u) << result.err;
  }
  EXPECT_EQ(read_text(folder.path() / "plain"), "not a folder\n");
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
