// Loading what `tune analyze` reads: project records with and without run.json, rows of an older spec hash and
// repeated configurations, T4 files with their T1 space, folders, and every kind of bad input.
#include "tuner/analysis/recording.h"

#include <gtest/gtest.h>

#include <fstream>

#include "analysis_test_support.h"

namespace kernlathe {
namespace {

using testing::enumeration_parameter;
using testing::failed;
using testing::integer_parameter;
using testing::measured;
using testing::TemporaryFolder;
using testing::write_record;

Parameter boolean_parameter(const std::string& name) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::boolean;
  parameter.values = {Value{false}, Value{true}};
  parameter.default_value = Value{false};
  return parameter;
}

std::vector<Parameter> toy_parameters() {
  return {integer_parameter("BLOCK", {64, 128, 256}), enumeration_parameter("LAYOUT", {"row", "col"}),
          boolean_parameter("SHMEM")};
}

Configuration toy(std::int64_t block, const std::string& layout, bool shmem) {
  return {Value{block}, Value{layout}, Value{shmem}};
}

std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  }
  return "no InputError";
}

TEST(Recording, ProjectRecordWithItsRunMetadata) {
  TemporaryFolder folder("analysis-recording");
  const auto csv = write_record(folder.path() / "toy" / "sm_90" / "N=64", toy_parameters(),
                                {measured(toy(64, "row", false), 2.0), measured(toy(128, "col", true), 1.0),
                                 failed(toy(256, "row", true), Status::launch_error, "too many threads"),
                                 measured(toy(64, "row", false), 1.5)},  // measured again: the later row counts
                                "NVIDIA H200");
  const Recording recording = load_project_record(csv);
  EXPECT_EQ(recording.kernel, "toy");
  EXPECT_EQ(recording.device, "NVIDIA H200");
  EXPECT_EQ(recording.arch, "sm_90");
  EXPECT_EQ(recording.problem, "N=64");
  EXPECT_EQ(recording.label(), "toy N=64 on NVIDIA H200");
  ASSERT_EQ(recording.parameters.size(), 3u);
  EXPECT_EQ(recording.parameters[0].type, ParameterType::integer);
  EXPECT_EQ(recording.parameters[0].values.size(), 3u);
  EXPECT_EQ(recording.parameters[1].type, ParameterType::enumeration);
  EXPECT_EQ(recording.parameters[2].type, ParameterType::boolean);
  ASSERT_EQ(recording.evaluations.size(), 3u);
  EXPECT_EQ(recording.evaluations[0].configuration, toy(64, "row", false));
  EXPECT_DOUBLE_EQ(recording.evaluations[0].time.median_ms, 1.5);
  EXPECT_EQ(recording.evaluations[2].status, Status::launch_error);
  EXPECT_EQ(recording.evaluations[2].message, "too many threads");
  ASSERT_EQ(recording.notes.size(), 1u);
  EXPECT_NE(recording.notes[0].find("1 configurations were recorded more than once"), std::string::npos);
  // Enumeration values are numbered in declared order; booleans are 0 and 1.
  EXPECT_EQ(numeric_value(recording.parameters[1], Value{std::string("col")}), 1.0);
  EXPECT_EQ(numeric_value(recording.parameters[2], Value{true}), 1.0);
  EXPECT_EQ(numeric_value(recording.parameters[0], Value{std::int64_t{128}}), 128.0);
}

TEST(Recording, RowsOfAnOlderSpecHashAreLeftOut) {
  TemporaryFolder folder("analysis-recording");
  write_record(folder.path(), toy_parameters(), {measured(toy(64, "row", false), 9.0)}, "NVIDIA H100", "toy", "N=64",
               "0ld");
  const auto csv = write_record(folder.path(), toy_parameters(),
                                {measured(toy(128, "row", false), 3.0), measured(toy(256, "col", false), 4.0)},
                                "NVIDIA H200", "toy", "N=64", "new");
  // A third run, stopped before its first evaluation, records no row: the newest run with rows counts.
  write_record(folder.path(), toy_parameters(), {}, "NVIDIA B200", "toy", "N=64", "newer");
  const Recording recording = load_project_record(csv);
  EXPECT_EQ(recording.device, "NVIDIA H200");
  ASSERT_EQ(recording.evaluations.size(), 2u);
  EXPECT_DOUBLE_EQ(recording.evaluations[0].time.median_ms, 3.0);
  ASSERT_EQ(recording.notes.size(), 1u);
  EXPECT_NE(recording.notes[0].find("1 rows recorded under another spec hash than new"), std::string::npos)
      << recording.notes[0];
}

TEST(Recording, WithoutRunMetadataTypesComeFromTheValues) {
  TemporaryFolder folder("analysis-recording");
  const auto csv = write_record(folder.path() / "toy" / "sm_80" / "N=32", toy_parameters(),
                                {measured(toy(64, "row", false), 2.0), measured(toy(128, "col", true), 1.0)}, "GPU");
  std::filesystem::remove(folder.path() / "toy" / "sm_80" / "N=32" / "run.json");
  const Recording recording = load_project_record(csv);
  EXPECT_EQ(recording.parameters[0].type, ParameterType::integer);
  EXPECT_EQ(recording.parameters[1].type, ParameterType::enumeration);
  EXPECT_EQ(recording.parameters[2].type, ParameterType::boolean);
  EXPECT_EQ(recording.evaluations[1].configuration, toy(128, "col", true));
  // The folder names what run.json would have.
  EXPECT_EQ(recording.kernel, "toy");
  EXPECT_EQ(recording.problem, "N=32");
  EXPECT_TRUE(recording.device.empty());
  EXPECT_EQ(recording.label(), "toy N=32 on an unnamed GPU");
}

TEST(Recording, T4FileWithItsT1Space) {
  const std::filesystem::path t4 = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests/data/search/convolution-excerpt.T4.json.gz";
  ASSERT_TRUE(is_t4_file_name(t4));
  const std::vector<Recording> recordings = load_recordings({t4});
  ASSERT_EQ(recordings.size(), 1u);
  const Recording& recording = recordings.front();
  EXPECT_EQ(recording.kernel, "convolution");
  EXPECT_EQ(recording.device, "excerpt");
  EXPECT_EQ(recording.evaluations.size(), 12u);
  EXPECT_EQ(recording.parameters.size(), 10u);
  EXPECT_EQ(recording.parameters[0].name, "block_size_x");
  EXPECT_EQ(recording.family.rfind("T1 ", 0), 0u);
  EXPECT_NE(recording.family.find("convolution.T1.json"), std::string::npos);
  EXPECT_EQ(std::count_if(recording.evaluations.begin(), recording.evaluations.end(), is_valid_measurement), 8);
}

TEST(Recording, AFolderStandsForEveryRecordBelowIt) {
  TemporaryFolder folder("analysis-recording");
  write_record(folder.path() / "toy" / "sm_90" / "N=64", toy_parameters(), {measured(toy(64, "row", false), 2.0)}, "B");
  write_record(folder.path() / "toy" / "sm_80" / "N=64", toy_parameters(), {measured(toy(64, "row", false), 3.0)}, "A");
  std::vector<std::filesystem::path> read;
  const std::vector<Recording> recordings =
      load_recordings({folder.path()}, [&](const std::filesystem::path& file) { read.push_back(file); });
  ASSERT_EQ(recordings.size(), 2u);
  EXPECT_EQ(read, (std::vector<std::filesystem::path>{recordings[0].source, recordings[1].source}));
  EXPECT_EQ(recordings[0].device, "A");  // sorted by path: sm_80 first
  EXPECT_EQ(recordings[1].device, "B");
  EXPECT_EQ(recordings[0].family, recordings[1].family);
}

TEST(Recording, BadInputNamesTheFileAndWhatIsWrong) {
  TemporaryFolder folder("analysis-recording");
  const auto missing = folder.path() / "nothing" / "evaluations.csv";
  EXPECT_NE(message_of([&] { load_recordings({missing}); }).find(missing.string() + ": no such file or folder"),
            std::string::npos);

  const auto empty_folder = folder.path() / "empty";
  std::filesystem::create_directories(empty_folder);
  EXPECT_NE(message_of([&] { load_recordings({empty_folder}); }).find("holds no record"), std::string::npos);

  const auto text = folder.path() / "notes.txt";
  std::ofstream(text) << "hello\n";
  EXPECT_NE(message_of([&] { load_recordings({text}); }).find("neither a record"), std::string::npos);

  const auto header_only = write_record(folder.path() / "header", toy_parameters(), {}, "GPU");
  const std::string header_message = message_of([&] { load_recordings({header_only}); });
  EXPECT_NE(header_message.find(header_only.string()), std::string::npos) << header_message;
  EXPECT_NE(header_message.find("no rows"), std::string::npos) << header_message;

  const auto all_failed = write_record(folder.path() / "failed", toy_parameters(),
                                       {failed(toy(64, "row", false), Status::compile_error),
                                        failed(toy(128, "row", false), Status::compile_error),
                                        failed(toy(256, "row", false), Status::crashed)},
                                       "GPU");
  const std::string failed_message = message_of([&] { load_recordings({all_failed}); });
  EXPECT_NE(failed_message.find(all_failed.string()), std::string::npos) << failed_message;
  EXPECT_NE(failed_message.find("no configuration in the recording ran correctly"), std::string::npos);
  EXPECT_NE(failed_message.find("2 compile_error, 1 crashed"), std::string::npos) << failed_message;

  const auto garbage = folder.path() / "garbage" / "evaluations.csv";
  std::filesystem::create_directories(garbage.parent_path());
  std::ofstream(garbage) << "time,speed\n1,2\n";
  EXPECT_NE(message_of([&] { load_recordings({garbage}); }).find("must start with 'hash'"), std::string::npos);

  const auto lone_t4 = folder.path() / "lonely-A100.T4.json";
  std::ofstream(lone_t4) << "{\"results\": []}\n";
  EXPECT_NE(message_of([&] { load_recordings({lone_t4}); }).find("lonely.T1.json does not exist"), std::string::npos);
}

TEST(Recording, T4FileWhoseObjectiveIsNotATimeIsRefused) {
  // A maximised score (tests/data/t4/score-declared.T4.json) read as times would be misread: exit 2 naming the file.
  const std::filesystem::path data = std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests/data/t4";
  const std::string message =
      message_of([&] { load_t4_recording(data / "score-declared.T4.json", data / "score.T1.json"); });
  EXPECT_NE(message.find("score-declared.T4.json"), std::string::npos) << message;
  EXPECT_NE(message.find("its objective is 'score'; tune analyze reads time objectives only"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace kernlathe
