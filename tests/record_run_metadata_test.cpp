// run.json beside a record: what cannot be read is an InputError naming the file (and the key), before a record is
// opened for writing, and a file that cannot be read is never replaced.
#include "tuner/record/run_metadata.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "tuner/record/csv_record.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

class RunMetadataFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("run_metadata_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    space_.name = "toy";
    Parameter block;
    block.name = "BLOCK";
    block.values = {Value{std::int64_t{64}}, Value{std::int64_t{128}}};
    block.default_value = block.values.front();
    space_.parameters = {block};
  }
  void TearDown() override { fs::remove_all(folder_); }

  fs::path csv() const { return folder_ / "evaluations.csv"; }
  fs::path run_json() const { return folder_ / "run.json"; }
  void write_run_json(const std::string& text) const { std::ofstream(run_json()) << text; }
  std::string run_json_text() const {
    std::ifstream input(run_json());
    return std::string(std::istreambuf_iterator<char>(input), {});
  }
  std::string error_of(const std::function<void()>& action) const {
    try {
      action();
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  }

  fs::path folder_;
  Space space_;
};

TEST_F(RunMetadataFiles, FieldsAddedAtTheEndGoToTheLastRunOnly) {
  RunMetadata first;
  first.kernel = "toy";
  first.extra["objective"] = "time";
  append_run_metadata(csv(), space_, first);
  RunMetadata second = first;
  second.started_at = "later";
  append_run_metadata(csv(), space_, second);
  add_to_last_run(csv(), {{"lanes", "4"}, {"lanes_waited_for_strategy_seconds", "0.250"}});
  const std::vector<RunMetadata> runs = read_run_metadata(csv());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].extra.contains("lanes"));
  EXPECT_EQ(runs[1].extra.at("lanes"), "4");
  EXPECT_EQ(runs[1].extra.at("lanes_waited_for_strategy_seconds"), "0.250");
  EXPECT_EQ(runs[1].extra.at("objective"), "time");  // kept
  EXPECT_EQ(runs[1].started_at, "later");
}

TEST_F(RunMetadataFiles, AddingToAFileWithoutARunIsAnError) {
  EXPECT_THROW(add_to_last_run(csv(), {{"lanes", "1"}}), TunerError);
}

TEST_F(RunMetadataFiles, ExtraNumbersAreReadAndTextIsNamedWithItsKey) {
  RunMetadata run;
  run.extra["copy_bandwidth_gbps"] = "1450.5";
  run.extra["baseline_ms"] = "fast";
  run.extra["empty"] = "";
  EXPECT_EQ(extra_number(run, "copy_bandwidth_gbps", csv()), 1450.5);
  EXPECT_EQ(extra_number(run, "absent", csv()), std::nullopt);
  EXPECT_EQ(error_of([&] { extra_number(run, "baseline_ms", csv()); }),
            run_json().string() + ": extra.baseline_ms is 'fast', which is not a number");
  EXPECT_EQ(error_of([&] { extra_number(run, "empty", csv()); }),
            run_json().string() + ": extra.empty is '', which is not a number");
}

TEST_F(RunMetadataFiles, LayoutsThatAreNotRunsAreRefusedByName) {
  write_run_json("[1, 2]");
  EXPECT_EQ(error_of([&] { read_run_metadata(csv()); }), run_json().string() + ": expected a JSON object, found array");
  write_run_json("{\"runs\": {\"kernel\": \"toy\"}}");
  EXPECT_EQ(error_of([&] { read_run_metadata(csv()); }),
            run_json().string() + ": \"runs\" is object, expected an array of runs");
  write_run_json("{\"runs\": [{\"arch\": 90}]}");
  const std::string wrong_type = error_of([&] { read_run_metadata(csv()); });
  EXPECT_EQ(wrong_type.rfind(run_json().string() + ": unexpected run metadata layout", 0), 0u) << wrong_type;
}

TEST_F(RunMetadataFiles, AFileThatCannotBeReadIsNeverReplaced) {
  write_run_json("[1, 2]");
  EXPECT_NE(error_of([&] { append_run_metadata(csv(), space_, RunMetadata{}); }), "no error");
  EXPECT_EQ(run_json_text(), "[1, 2]");
}

TEST_F(RunMetadataFiles, ARecordWriterStopsOnItBeforeTheRecordIsOpened) {
  write_run_json("{\"runs\": [oops");
  const std::string message = error_of([&] { RecordWriter writer(csv(), space_, RunMetadata{}); });
  EXPECT_EQ(message.rfind(run_json().string() + ": not valid JSON", 0), 0u) << message;
  EXPECT_FALSE(fs::exists(csv())) << "the record was created before run.json was read";
  EXPECT_EQ(run_json_text(), "{\"runs\": [oops");
}

TEST_F(RunMetadataFiles, RecordsThatHoldNothingAreRefusedByName) {
  EXPECT_EQ(error_of([&] { read_records(folder_, space_); }),
            folder_.string() + ": is a folder; a record file (such as evaluations.csv) was expected");
  std::ofstream(csv()).close();
  EXPECT_EQ(error_of([&] { read_records(csv(), space_); }),
            csv().string() + ":1: the record file is empty: not even a header row");
  std::ofstream(csv()) << "hash,BLOCK,sta";
  EXPECT_EQ(error_of([&] { read_records(csv(), space_); }),
            csv().string() + ":1: the header row ends without its newline: the file was cut off");
  // An empty file is a record whose header was never written: a resumed run starts it afresh.
  std::ofstream(csv()).close();
  EXPECT_EQ(load_resume_state(csv(), space_, "hash").count(), 0u);
}

}  // namespace
}  // namespace kernlathe
