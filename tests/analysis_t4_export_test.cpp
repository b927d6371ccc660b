// Records written as community T4/T1 files (tuner/analysis/t4_export.h): the documents pass the format check (as
// the community's own files do), read back through the project's T4 reader with the same configurations, statuses
// and times, and the check finds what breaks the format.
#include "tuner/analysis/t4_export.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>

#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"
#include "tuner/search/t4_dataset.h"
#include "tuner/space/space.h"
#include "tuner/spec/spec_hash.h"
#include "tuner/spec/spec_loader.h"
#include "tuner/spec/t1_reader.h"

namespace kernlathe {
namespace {

const std::filesystem::path source_directory = KERNLATHE_SOURCE_DIR;
const std::filesystem::path community_directory = source_directory / "tests/data/t4/community";

std::string printed(const Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return std::to_string(*integer);
  if (const auto* flag = std::get_if<bool>(&value)) return *flag ? "true" : "false";
  if (const auto* real = std::get_if<double>(&value)) return std::to_string(*real);
  return std::get<std::string>(value);
}

// Three parameters of the three kinds, and one configuration per outcome a record can hold.
Recording small_recording() {
  Recording recording;
  recording.source = "results/runs/blur/sm_90/W=64/evaluations.csv";
  recording.kernel = "blur";
  recording.device = "NVIDIA H200";
  recording.arch = "sm_90";
  recording.problem = "W=64";
  auto parameter = [](const char* name, ParameterType type, std::vector<Value> values) {
    Parameter declared;
    declared.name = name;
    declared.type = type;
    declared.default_value = values.front();
    declared.values = std::move(values);
    return declared;
  };
  Parameter block = parameter("BLOCK", ParameterType::integer, {std::int64_t{64}, std::int64_t{128}});
  Parameter pinned = parameter("PINNED", ParameterType::boolean, {false, true});
  Parameter layout = parameter("LAYOUT", ParameterType::enumeration, {std::string("rows"), std::string("tiles")});
  recording.parameters = {block, pinned, layout};
  auto evaluation = [](std::int64_t b, bool p, const char* l, Status status, double median) {
    Evaluation e;
    e.configuration = {b, p, std::string(l)};
    e.status = status;
    e.time = {median, median * 0.9, median * 1.2, 0.05, 10};
    e.compile_ms = 12.5;
    e.timestamp = 1795320068.25;
    if (status != Status::ok) e.message = "why it failed";
    return e;
  };
  recording.evaluations = {evaluation(64, false, "rows", Status::ok, 1.5), evaluation(128, true, "tiles", Status::ok, 0.75),
                           evaluation(64, true, "rows", Status::compile_error, 0),
                           evaluation(128, false, "rows", Status::launch_error, 0),
                           evaluation(128, false, "tiles", Status::wrong_result, 0),
                           evaluation(64, false, "tiles", Status::timeout, 0)};
  return recording;
}

class T4Export : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() / ("kernlathe-t4-export-" + std::to_string(::getpid()));
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::filesystem::path directory_;
};

TEST_F(T4Export, ReadsBackWithTheSameConfigurationsStatusesAndTimes) {
  Recording recording = small_recording();
  T4Files files = write_t4_files(recording, directory_);
  EXPECT_EQ(files.t4.filename(), "blur-NVIDIA_H200-W_64.T4.json");
  EXPECT_EQ(files.t1, default_t1_for(files.t4));
  Space space = read_t1_space(files.t1);
  ASSERT_EQ(space.parameters.size(), 3u);
  EXPECT_EQ(space.parameters[0].type, ParameterType::integer);
  std::vector<Evaluation> read = read_t4_results(files.t4, space);
  ASSERT_EQ(read.size(), recording.evaluations.size());
  const Status expected[] = {Status::ok, Status::ok, Status::compile_error, Status::launch_error, Status::wrong_result,
                             Status::timeout /* T4's "timeout" reads back as a timeout */};
  for (std::size_t index = 0; index < read.size(); ++index) {
    SCOPED_TRACE(index);
    for (std::size_t parameter = 0; parameter < 3; ++parameter)
      EXPECT_EQ(printed(read[index].configuration[parameter]), printed(recording.evaluations[index].configuration[parameter]));
    EXPECT_EQ(read[index].status, expected[index]);
    EXPECT_DOUBLE_EQ(read[index].compile_ms, 12.5);
    if (read[index].ok()) {
      EXPECT_DOUBLE_EQ(read[index].time.median_ms, recording.evaluations[index].time.median_ms);
    }
  }
  nlohmann::json t4 = nlohmann::json::parse(std::ifstream(files.t4));
  EXPECT_EQ(t4["results"][0]["timestamp"], "2026-11-22 04:01:08.250000+00:00");
  EXPECT_EQ(t4["results"][5]["invalidity"], "timeout");
  EXPECT_EQ(t4["results"][1]["correctness"], 1);
  EXPECT_EQ(t4["results"][2]["correctness"], 0);
  EXPECT_FALSE(t4["results"][0]["times"].contains("runtimes"));  // a record keeps no individual samples
}

TEST_F(T4Export, ACommittedRecordBecomesAValidT4FileThatAnalyzesAlike) {
  Recording record = load_project_record(source_directory / "results/runs/saxpy/sm_90/h200/N=67108864/evaluations.csv");
  T4Files files = write_t4_files(record, directory_);
  nlohmann::json t4 = nlohmann::json::parse(std::ifstream(files.t4));
  EXPECT_TRUE(t4_problems(t4).empty());
  Recording again = load_t4_recording(files.t4, files.t1);
  ASSERT_EQ(again.evaluations.size(), record.evaluations.size());
  auto best = [](const Recording& r) {
    double best_ms = 1e300;
    for (const Evaluation& e : r.evaluations)
      if (is_valid_measurement(e)) best_ms = std::min(best_ms, e.time.median_ms);
    return best_ms;
  };
  EXPECT_DOUBLE_EQ(best(again), best(record));
}

// Issue 36: the T1 file beside an exported record has the space's constraints and defaults. reduce_sum's space reads a
// derived value of the SM count (GRID = sm_count * BLOCKS_PER_SM), a device property (max_threads_per_sm) and a
// problem symbol (N), and its TREE default is not its first value.
TEST_F(T4Export, TheT1SpaceHasTheRecordedSpacesConstraintsAndDefaults) {
  const KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "reduce_sum.yaml");
  const DeviceProperties device = named_device_profile("NVIDIA H100 PCIe");
  Constants constants = device_property_values(device);
  for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, Value{value});
  const SpaceEnumerator space(spec.space, constants);
  ASSERT_LT(space.valid_count(), static_cast<std::uint64_t>(space.total_combinations()));  // the constraints bite

  RunMetadata metadata;
  metadata.kernel = "reduce_sum";
  metadata.spec_hash = "current";
  metadata.gpu_name = device.name;
  metadata.arch = "sm_90";
  metadata.problem = problem_text(spec);
  const std::filesystem::path csv = directory_ / "record" / "evaluations.csv";
  std::filesystem::create_directories(csv.parent_path());
  {
    RecordWriter writer(csv, spec.space, metadata);
    Evaluation measured;
    measured.configuration = space.at(0);
    measured.status = Status::ok;
    measured.time = {1.0, 0.9, 1.1, 0.01, 10};
    writer.append(measured, "current");
  }
  const T4Files files = write_t4_files(load_project_record(csv), directory_ / "t4");

  // Read back through the T1 reader: the same valid configurations, with nothing but the file.
  const Space t1 = read_t1_space(files.t1);
  const SpaceEnumerator read_back(t1, {});
  EXPECT_EQ(read_back.valid_count(), space.valid_count());
  for (std::uint64_t index = 0; index < space.valid_count(); index += 7) EXPECT_TRUE(read_back.is_valid(space.at(index)));
  ASSERT_EQ(t1.parameters.size(), spec.space.parameters.size());
  for (std::size_t index = 0; index < t1.parameters.size(); ++index)
    EXPECT_EQ(t1.parameters[index].default_value, spec.space.parameters[index].default_value) << t1.parameters[index].name;
  EXPECT_EQ(t1.parameters.back().default_value, Value{std::string("shared")});  // TREE: not its first value, shuffle

  nlohmann::json document = nlohmann::json::parse(std::ifstream(files.t1));
  EXPECT_TRUE(t1_problems(document, false).empty());
  // GRID <= 65536 reads the SM count through GRID: written out with the H100 PCIe's 114 SMs.
  bool grid_condition = false;
  for (const nlohmann::json& condition : document["ConfigurationSpace"]["Conditions"])
    grid_condition |= condition["Expression"] == "((114) * BLOCKS_PER_SM) <= 65536";
  EXPECT_TRUE(grid_condition) << document["ConfigurationSpace"]["Conditions"].dump(1);
  EXPECT_NE(document["General"]["Notes"].get<std::string>().find("NVIDIA H100 PCIe"), std::string::npos);
}

std::string gunzip(const std::filesystem::path& file) {
  gzFile handle = gzopen(file.c_str(), "rb");
  if (handle == nullptr) return "";
  std::string text;
  char buffer[1 << 16];
  int read = 0;
  while ((read = gzread(handle, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(read));
  gzclose(handle);
  return text;
}

TEST(T4Check, TheCommunityFilesPass) {
  const std::filesystem::path file = community_directory / "convolution-A4000.T4.json.gz";
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  nlohmann::json document = nlohmann::json::parse(gunzip(file));
  std::vector<std::string> problems = t4_problems(document);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST(T4Check, FindsWhatBreaksTheFormat) {
  nlohmann::json document = nlohmann::json::parse(t4_document(small_recording()).dump());
  ASSERT_TRUE(t4_problems(document).empty());
  auto expect_problem = [](nlohmann::json broken, const std::string& expected) {
    std::vector<std::string> problems = t4_problems(broken);
    EXPECT_TRUE(std::any_of(problems.begin(), problems.end(), [&](const std::string& p) { return p.find(expected) != std::string::npos; }))
        << "expected: " << expected << (problems.empty() ? " (no problem found)" : ", first found: " + problems.front());
  };
  nlohmann::json broken = document;
  broken["schema_version"] = "1.0";
  expect_problem(broken, "schema_version: '1.0' is not major.minor.patch");
  broken = document;
  broken["results"][2].erase("invalidity");
  expect_problem(broken, "results[2]: no \"invalidity\"");
  broken = document;
  broken["results"][1]["invalidity"] = "slow";
  expect_problem(broken, "results[1].invalidity: \"slow\" is none of");
  broken = document;
  broken["results"][0]["times"]["compilation"] = "12 ms";
  expect_problem(broken, "results[0].times.compilation: not a number");
  broken = document;
  broken["results"][0]["measurements"][0]["value"] = "fast";
  expect_problem(broken, "results[0].measurements[0].value: not a number");
  broken = document;
  broken.erase("results");
  expect_problem(broken, "results: missing or not an array");
}

}  // namespace
}  // namespace kernlathe
