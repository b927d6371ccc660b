#include "tuner/record/csv_record.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tuner/common/hash.h"
#include "tuner/record/run_metadata.h"

namespace kernlathe {
namespace {

Parameter integer_parameter(const std::string& name, std::vector<std::int64_t> values) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::integer;
  for (std::int64_t value : values) parameter.values.emplace_back(value);
  parameter.default_value = parameter.values.front();
  return parameter;
}

Parameter boolean_parameter(const std::string& name) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::boolean;
  parameter.values = {Value{false}, Value{true}};
  parameter.default_value = Value{false};
  return parameter;
}

Parameter enumeration_parameter(const std::string& name, std::vector<std::string> values) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::enumeration;
  for (std::string& value : values) parameter.values.emplace_back(std::move(value));
  parameter.default_value = parameter.values.front();
  return parameter;
}

Space mixed_space() {
  Space space;
  space.name = "mixed";
  space.parameters = {integer_parameter("BLOCK", {-1, 64, 128, 256}), boolean_parameter("USE_SHMEM"),
                      enumeration_parameter("LAYOUT", {"row", "column major", "a,b"})};
  return space;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream input(path, std::ios::binary);
  std::stringstream contents;
  contents << input.rdbuf();
  return contents.str();
}

void append_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream output(path, std::ios::binary | std::ios::app);
  output << text;
}

class RecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "record_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    csv_ = directory_ / "evaluations.csv";
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  RunMetadata metadata() const {
    RunMetadata metadata;
    metadata.kernel = "saxpy";
    metadata.spec_hash = "abc123";
    metadata.gpu_name = "NVIDIA H200";
    metadata.arch = "sm_90";
    metadata.driver_version = "13.0";
    metadata.nvrtc_version = "13.0";
    metadata.project_version = "0.1.0";
    metadata.build_commit = "0123456789ab+changes";
    metadata.problem = "N=1048576";
    metadata.strategy = "random";
    metadata.started_at = "2024-05-01T12:00:00Z";
    metadata.extra["host"] = "node7";
    return metadata;
  }

  std::filesystem::path directory_;
  std::filesystem::path csv_;
};

Evaluation measured_evaluation() {
  Evaluation evaluation;
  evaluation.configuration = {Value{std::int64_t{128}}, Value{true}, Value{std::string("column major")}};
  evaluation.status = Status::ok;
  evaluation.time = {0.012345678901234, 0.0119, 0.0131, 0.0421, 37, 0.0121, 0.0126};
  evaluation.compile_ms = 412.75;
  evaluation.cubin_cached = true;
  evaluation.registers = 40;
  evaluation.static_shared_bytes = 4096;
  evaluation.dynamic_shared_bytes = std::int64_t{5} << 32;  // wider than int: must survive as int64
  evaluation.threads_per_block = 128;
  evaluation.occupancy = 0.875;
  evaluation.sm_clock_mhz = 1980;
  evaluation.throttle_reasons = 0x8000000000000004ULL;
  evaluation.power_w = 655.25;
  evaluation.temperature_c = 58;
  evaluation.energy_mj = 0.0081;
  evaluation.energy_window_ms = 200.5;
  evaluation.max_error = 3.5e-7;
  evaluation.timestamp = 1714567890.123456;
  return evaluation;
}

Evaluation failed_evaluation() {
  Evaluation evaluation;
  evaluation.configuration = {Value{std::int64_t{-1}}, Value{false}, Value{std::string("a,b")}};
  evaluation.status = Status::compile_error;
  evaluation.message = " kernel.cu(3): error: expected a \";\", got \"}\"\n1 error detected ";
  evaluation.compile_ms = 98.5;
  evaluation.timestamp = 1714567891.5;
  return evaluation;
}

void expect_same(const Evaluation& expected, const Evaluation& actual) {
  EXPECT_EQ(expected.configuration, actual.configuration);
  EXPECT_EQ(expected.status, actual.status);
  EXPECT_EQ(expected.message, actual.message);
  EXPECT_EQ(expected.time.median_ms, actual.time.median_ms);
  EXPECT_EQ(expected.time.min_ms, actual.time.min_ms);
  EXPECT_EQ(expected.time.max_ms, actual.time.max_ms);
  EXPECT_EQ(expected.time.relative_spread, actual.time.relative_spread);
  EXPECT_EQ(expected.time.samples, actual.time.samples);
  EXPECT_EQ(expected.compile_ms, actual.compile_ms);
  EXPECT_EQ(expected.cubin_cached, actual.cubin_cached);
  EXPECT_EQ(expected.registers, actual.registers);
  EXPECT_EQ(expected.static_shared_bytes, actual.static_shared_bytes);
  EXPECT_EQ(expected.dynamic_shared_bytes, actual.dynamic_shared_bytes);
  EXPECT_EQ(expected.threads_per_block, actual.threads_per_block);
  EXPECT_EQ(expected.occupancy, actual.occupancy);
  EXPECT_EQ(expected.sm_clock_mhz, actual.sm_clock_mhz);
  EXPECT_EQ(expected.throttle_reasons, actual.throttle_reasons);
  EXPECT_EQ(expected.time.low_ms, actual.time.low_ms);
  EXPECT_EQ(expected.time.high_ms, actual.time.high_ms);
  EXPECT_EQ(expected.power_w, actual.power_w);
  EXPECT_EQ(expected.temperature_c, actual.temperature_c);
  EXPECT_EQ(expected.energy_mj, actual.energy_mj);
  EXPECT_EQ(expected.energy_window_ms, actual.energy_window_ms);
  EXPECT_EQ(expected.objective, actual.objective);
  EXPECT_EQ(expected.max_error, actual.max_error);
  EXPECT_EQ(expected.timestamp, actual.timestamp);
}

TEST(Status, NamesRoundTripAndUnknownNamesAreRejected) {
  for (Status status : {Status::ok, Status::compile_error, Status::resources_exceeded, Status::launch_error,
                        Status::wrong_result, Status::timeout, Status::crashed, Status::invalid}) {
    EXPECT_EQ(parse_status(status_name(status)), status) << status_name(status);
  }
  EXPECT_EQ(status_name(Status::resources_exceeded), "resources_exceeded");
  EXPECT_EQ(parse_status("OK"), std::nullopt);
  EXPECT_EQ(parse_status("compile-error"), std::nullopt);
}

TEST_F(RecordTest, RoundTripKeepsEveryFieldAndEveryParameterType) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    EXPECT_FALSE(writer.resumed());
    writer.append(measured_evaluation(), "hash-one");
    writer.append(failed_evaluation(), "hash-two");
  }
  std::vector<RecordedEvaluation> records = read_records(csv_, space);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].hash, "hash-one");
  EXPECT_EQ(records[1].hash, "hash-two");
  expect_same(measured_evaluation(), records[0].evaluation);
  expect_same(failed_evaluation(), records[1].evaluation);
  // Typed values, not text: BLOCK is an int64, USE_SHMEM a bool.
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(records[1].evaluation.configuration[0]));
  EXPECT_TRUE(std::holds_alternative<bool>(records[1].evaluation.configuration[1]));
}

TEST_F(RecordTest, FileIsAPlainTableWithOneLinePerRowAndQuotingOnlyWhereNeeded) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(measured_evaluation(), "h1");
    writer.append(failed_evaluation(), "h2");
  }
  std::string text = read_text(csv_);
  std::string header = text.substr(0, text.find('\n'));
  EXPECT_EQ(header,
            "hash,BLOCK,USE_SHMEM,LAYOUT,status,message,time_median_ms,time_min_ms,time_max_ms,relative_spread,"
            "samples,compile_ms,cubin_cached,registers,static_shared_bytes,dynamic_shared_bytes,threads_per_block,"
            "occupancy,sm_clock_mhz,throttle_reasons,max_error,timestamp,time_low_ms,time_high_ms,power_w,"
            "temperature_c,energy_mj,energy_window_ms,objective,clock_flag,device");
  EXPECT_NE(text.find("\nh1,128,true,column major,ok,,0.012345678901234,"), std::string::npos) << text;
  // The message's line break is written as \n: every row is one line.
  EXPECT_NE(text.find("\nh2,-1,false,\"a,b\",compile_error,\" kernel.cu(3): error: expected a \"\";\"\", got "
                      "\"\"}\"\"\\n1 error detected \","),
            std::string::npos)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_EQ(text.back(), '\n');
}

TEST_F(RecordTest, ARowMeasuredDuringAThermalSlowdownIsFlagged) {
  Space space = mixed_space();
  Evaluation hot = measured_evaluation();
  hot.throttle_reasons = 0x4 | 0x20;  // power cap (inside the policy) and SW thermal slowdown (outside)
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(measured_evaluation(), "h1");
    writer.append(hot, "h2");
  }
  std::string text = read_text(csv_);
  EXPECT_NE(text.find(",200.5,0,,\n"), std::string::npos) << text;         // the power-cap row: empty flag
  EXPECT_NE(text.find(",200.5,0,sw_thermal,\n"), std::string::npos) << text;
}

// Records written before the condition columns existed are read with those fields zero, and a resumed run
// appends rows in the file's own layout, so the file stays one table.
TEST_F(RecordTest, RecordsWithoutConditionColumnsAreReadAndResumedInTheirLayout) {
  Space space;
  space.name = "saxpy";
  space.parameters = {integer_parameter("BLOCK", {64, 128, 256}), integer_parameter("VEC", {1, 2, 4}),
                      boolean_parameter("USE_SHMEM")};
  std::filesystem::copy_file(std::filesystem::path(KERNLATHE_SOURCE_DIR) / "tests/data/record/saxpy_small.csv", csv_);
  const std::string before = read_text(csv_);
  std::vector<RecordedEvaluation> records = read_records(csv_, space);
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0].evaluation.time.median_ms, 0.05);
  EXPECT_EQ(records[0].evaluation.energy_mj, 0);
  {
    RecordWriter writer(csv_, space, metadata());
    EXPECT_TRUE(writer.resumed());
    Evaluation evaluation = measured_evaluation();
    evaluation.configuration = {Value{std::int64_t{128}}, Value{std::int64_t{4}}, Value{true}};
    writer.append(evaluation, "specB");
  }
  const std::string after = read_text(csv_);
  ASSERT_EQ(after.substr(0, before.size()), before);
  const std::string appended = after.substr(before.size());
  EXPECT_EQ(std::count(appended.begin(), appended.end(), ','), 21) << appended;  // 22 legacy columns
  records = read_records(csv_, space);
  EXPECT_EQ(records.back().hash, "specB");
  EXPECT_EQ(records.back().evaluation.time.median_ms, measured_evaluation().time.median_ms);
}

// A record written before the device column (every other condition column, no `device`) is read with the device
// empty and resumed in its own layout; a current record keeps each row's device.
TEST_F(RecordTest, RecordsWithoutTheDeviceColumnAreResumedInTheirLayoutAndNewOnesKeepTheDevice) {
  Space space = mixed_space();
  std::vector<std::string> old_header = record_columns(space);
  ASSERT_EQ(old_header.back(), "device");
  old_header.pop_back();
  std::string header_line;
  for (const std::string& column : old_header) header_line += (header_line.empty() ? "" : ",") + column;
  append_text(csv_, header_line + "\n");
  append_text(csv_, "h,64,true,row,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n");
  {
    RecordWriter writer(csv_, space, metadata());
    Evaluation evaluation = measured_evaluation();
    evaluation.device = "1";
    writer.append(evaluation, "h2");
  }
  const std::string text = read_text(csv_);
  const std::string last_row = text.substr(text.rfind("\nh2,") + 1);
  EXPECT_EQ(std::count(last_row.begin(), last_row.end(), ','), static_cast<std::ptrdiff_t>(old_header.size() - 1))
      << last_row;
  std::vector<RecordedEvaluation> records = read_records(csv_, space);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].evaluation.device, "");  // the old layout has nowhere to keep it

  std::filesystem::remove(csv_);
  {
    RecordWriter writer(csv_, space, metadata());
    Evaluation evaluation = measured_evaluation();
    evaluation.device = "rank 2, gpu 0";
    writer.append(evaluation, "h3");
  }
  records = read_records(csv_, space);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].evaluation.device, "rank 2, gpu 0");
}

TEST_F(RecordTest, MetadataGoesToTheCompanionJsonAndResumesAppendARun) {
  Space space = mixed_space();
  RunMetadata first = metadata();
  RunMetadata second = metadata();
  second.started_at = "2024-05-02T08:00:00Z";
  second.driver_version = "13.1";
  { RecordWriter writer(csv_, space, first); }
  {
    RecordWriter writer(csv_, space, second);
    EXPECT_TRUE(writer.resumed());
  }
  EXPECT_TRUE(std::filesystem::exists(directory_ / "run.json"));
  std::vector<RunMetadata> runs = read_run_metadata(csv_);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0], first);
  EXPECT_EQ(runs[1], second);
  // The CSV itself holds only the header: metadata never leaks into the table.
  std::string table = read_text(csv_);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 1);
}

TEST(RunMetadata, CompanionPathIsRunJsonBesideEvaluationsOtherwiseStemRunJson) {
  EXPECT_EQ(metadata_path("out/evaluations.csv"), std::filesystem::path("out/run.json"));
  EXPECT_EQ(metadata_path("out/saxpy_h200.csv"), std::filesystem::path("out/saxpy_h200.run.json"));
}

TEST(RunMetadata, Iso8601NowLooksLikeUtcTimestamp) {
  std::string now = iso8601_now();
  ASSERT_EQ(now.size(), 20u) << now;
  EXPECT_EQ(now[4], '-');
  EXPECT_EQ(now[10], 'T');
  EXPECT_EQ(now.back(), 'Z');
}

TEST_F(RecordTest, HeaderMismatchIsAnInputErrorNamingTheColumns) {
  Space space = mixed_space();
  { RecordWriter writer(csv_, space, metadata()); }
  Space renamed = mixed_space();
  renamed.parameters[0].name = "BLOCK_SIZE";
  try {
    RecordWriter writer(csv_, renamed, metadata());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("evaluations.csv:1"), std::string::npos) << message;
    EXPECT_NE(message.find("BLOCK_SIZE, USE_SHMEM, LAYOUT"), std::string::npos) << message;
    EXPECT_NE(message.find("[BLOCK, USE_SHMEM, LAYOUT]"), std::string::npos) << message;
  }
  EXPECT_THROW(read_records(csv_, renamed), InputError);
  // A parameter the file has and the space no longer declares is not dropped silently.
  Space fewer = mixed_space();
  fewer.parameters.pop_back();
  EXPECT_THROW(read_records(csv_, fewer), InputError);
}

TEST_F(RecordTest, ParametersAddedAfterARecordWasWrittenReadAsTheirDefaultButAreNotAppendedTo) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(measured_evaluation(), "hash-one");
    writer.append(failed_evaluation(), "hash-two");
  }
  // The space gains a parameter at its end and one between two others, each with a default that is not its first
  // value, as a space grows (spaces/gemm.yaml's WG_STORE, spaces/attention.yaml's AT_KV_SHARE).
  Space grown = mixed_space();
  Parameter unroll = integer_parameter("UNROLL", {1, 2, 4});
  unroll.default_value = Value{std::int64_t{2}};
  Parameter store = enumeration_parameter("STORE", {"bulk", "direct"});
  store.default_value = Value{std::string("direct")};
  grown.parameters.insert(grown.parameters.begin() + 1, store);
  grown.parameters.push_back(unroll);
  std::vector<RecordedEvaluation> records = read_records(csv_, grown);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].hash, "hash-one");
  const Configuration expected = {Value{std::int64_t{128}}, Value{std::string("direct")}, Value{true},
                                  Value{std::string("column major")}, Value{std::int64_t{2}}};
  EXPECT_EQ(records[0].evaluation.configuration, expected);
  EXPECT_EQ(records[0].evaluation.time.median_ms, measured_evaluation().time.median_ms);
  EXPECT_EQ(records[1].evaluation.status, failed_evaluation().status);
  EXPECT_EQ(records[1].evaluation.configuration.size(), 5u);
  // Parameters in another order than the space's are a different layout, not an addition: readers and writers
  // refuse it, and the file is left as it was.
  Space reordered = grown;
  std::swap(reordered.parameters[0], reordered.parameters[2]);
  const std::string before = read_text(csv_);
  EXPECT_THROW(read_records(csv_, reordered), InputError);
  EXPECT_THROW(RecordWriter(csv_, reordered, metadata()), InputError);
  EXPECT_EQ(read_text(csv_), before);
  // A writer rewrites the file in the space's layout, the added columns at their defaults, and appends after it.
  {
    RecordWriter writer(csv_, grown, metadata());
    EXPECT_TRUE(writer.resumed());
    EXPECT_EQ(writer.added_columns(), (std::vector<std::string>{"STORE", "UNROLL"}));
    Evaluation more = measured_evaluation();
    more.configuration = {Value{std::int64_t{64}}, Value{std::string("bulk")}, Value{false},
                          Value{std::string("a,b")}, Value{std::int64_t{4}}};
    writer.append(more, "hash-three");
  }
  const std::string text = read_text(csv_);
  std::string grown_header;
  for (const std::string& column : record_columns(grown)) grown_header += (grown_header.empty() ? "" : ",") + column;
  EXPECT_EQ(text.substr(0, text.find('\n')), grown_header);
  EXPECT_EQ(grown_header.substr(0, 39), "hash,BLOCK,STORE,USE_SHMEM,LAYOUT,UNROL");
  std::vector<RecordedEvaluation> after = read_records(csv_, grown);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].evaluation.configuration, expected);
  Evaluation first = after[0].evaluation;
  first.configuration = measured_evaluation().configuration;  // every other field as it was written
  expect_same(measured_evaluation(), first);
  EXPECT_EQ(after[2].hash, "hash-three");
  EXPECT_EQ(after[2].evaluation.configuration[1], Value{std::string("bulk")});
  EXPECT_EQ(after[2].evaluation.configuration[4], Value{std::int64_t{4}});
  EXPECT_FALSE(std::filesystem::exists(csv_.string() + ".rewrite"));
  // Opened again in its own layout now, nothing is added.
  RecordWriter again(csv_, grown, metadata());
  EXPECT_TRUE(again.added_columns().empty());
}

TEST_F(RecordTest, AnEarlierLayoutWithARowThatCannotBeReadIsNotRewritten) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(measured_evaluation(), "hash-one");
  }
  append_text(csv_, "hash-two,64,true\n");  // a row cut short, not at the end of a kill (a complete line)
  const std::string before = read_text(csv_);
  Space grown = mixed_space();
  grown.parameters.push_back(integer_parameter("UNROLL", {1, 2}));
  try {
    RecordWriter writer(csv_, grown, metadata());
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("evaluations.csv:3"), std::string::npos) << error.what();
  }
  EXPECT_EQ(read_text(csv_), before);
  EXPECT_FALSE(std::filesystem::exists(csv_.string() + ".rewrite"));
}

std::vector<std::filesystem::path> side_files(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    if (entry.path().filename().string().starts_with("evaluations.csv.torn-")) found.push_back(entry.path());
  return found;
}

TEST_F(RecordTest, TornLastRowIsSkippedByReadersAndSetAsideBeforeAWriterCutsItOff) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(measured_evaluation(), "h");
    writer.append(failed_evaluation(), "h");
  }
  // A writer killed inside a quoted message: the last line has an open quote and no newline.
  const std::string torn = "h,64,true,\"a,b\",compile_error,\"error: unterminated\\nsecond li";
  append_text(csv_, torn);
  const std::string before = read_text(csv_);
  EXPECT_EQ(read_records(csv_, space).size(), 2u);
  EXPECT_EQ(read_text(csv_), before) << "a reader changed the file";
  EXPECT_TRUE(side_files(directory_).empty());

  Evaluation later = measured_evaluation();
  later.configuration[0] = Value{std::int64_t{256}};
  {
    RecordWriter writer(csv_, space, metadata());
    EXPECT_TRUE(writer.resumed());
    EXPECT_EQ(writer.torn_row_line(), 4);
    ASSERT_FALSE(writer.torn_row_file().empty());
    EXPECT_EQ(writer.torn_row_file().parent_path(), directory_);
    EXPECT_EQ(read_text(writer.torn_row_file()), torn);
    writer.append(later, "h");
  }
  ASSERT_EQ(side_files(directory_).size(), 1u);
  std::vector<RecordedEvaluation> records = read_records(csv_, space);
  ASSERT_EQ(records.size(), 3u);
  expect_same(measured_evaluation(), records[0].evaluation);
  expect_same(failed_evaluation(), records[1].evaluation);
  EXPECT_EQ(records[2].evaluation.configuration[0], Value{std::int64_t{256}});
  // Only the torn bytes went: the file is what it was before them, plus the new row.
  const std::string after = read_text(csv_);
  EXPECT_EQ(after.substr(0, before.size() - torn.size()), before.substr(0, before.size() - torn.size()));
  EXPECT_EQ(after.find("unterminated"), std::string::npos);
}

TEST_F(RecordTest, ACompleteLastRowWithoutItsNewlineIsSetAsideNotLost) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(measured_evaluation(), "h");
  }
  std::string text = read_text(csv_);
  const std::string last = "h,64,true,row,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,7";  // every field, no newline
  append_text(csv_, last);
  EXPECT_EQ(read_records(csv_, space).size(), 1u);
  RecordWriter writer(csv_, space, metadata());
  EXPECT_EQ(writer.torn_row_line(), 3);
  EXPECT_EQ(read_text(writer.torn_row_file()), last);
  EXPECT_EQ(read_text(csv_), text);
}

TEST_F(RecordTest, ATornHeaderIsSetAsideAndTheFileStartsAgain) {
  Space space = mixed_space();
  append_text(csv_, "hash,BLOCK,USE_SH");
  {
    RecordWriter writer(csv_, space, metadata());
    EXPECT_FALSE(writer.resumed());
    EXPECT_EQ(writer.torn_row_line(), 1);
    EXPECT_EQ(read_text(writer.torn_row_file()), "hash,BLOCK,USE_SH");
    writer.append(measured_evaluation(), "h");
  }
  EXPECT_EQ(read_records(csv_, space).size(), 1u);
}

TEST_F(RecordTest, PartialLastLineWithoutQuotesIsIgnored) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(measured_evaluation(), "h");
  }
  append_text(csv_, "h,64,tr");
  EXPECT_EQ(read_records(csv_, space).size(), 1u);
}

TEST_F(RecordTest, MalformedRowInTheMiddleNamesItsLineAndIsNeverAppendedTo) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(failed_evaluation(), "h");  // line 2 (its message's line break is written as \n)
  }
  append_text(csv_, "h,64,true,row,ok\n");  // line 3: too few fields
  const std::string before = read_text(csv_);
  try {
    read_records(csv_, space);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("evaluations.csv:3"), std::string::npos) << message;
    EXPECT_NE(message.find("expected 31 fields, found 5"), std::string::npos) << message;
  }
  EXPECT_THROW(RecordWriter(csv_, space, metadata()), InputError);
  EXPECT_EQ(read_text(csv_), before);
}

// Issue item 3: a stray double quote made the reader take the rest of the file for one torn row, and the writer
// cut 841 rows down to 14. Wherever the quote is, the row's line is named and the file is left alone.
TEST_F(RecordTest, AStrayQuoteMidFileIsAnErrorNamingItsLineAndNothingIsCut) {
  Space space = mixed_space();
  const std::string good = "h,64,true,row,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n";
  struct Case {
    std::string bad_row;
    std::string expected;
  };
  const std::vector<Case> cases{
      {"\"" + good, "double quote opens field 1 ('hash')"},                           // the case
      {"h,64,true,ro\"w,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n", "inside the unquoted field 4 ('LAYOUT')"},
      {"h,64,true,\"row,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n", "double quote opens field 4 ('LAYOUT')"},
      {"h,64,true,row,ok,\"oops,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n", "never closed: lines 5 to 9"},
      {"h,64,true,\"row\"x,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\n", "unexpected 'x' after the closing double quote"},
  };
  for (const Case& bad : cases) {
    std::filesystem::remove(csv_);
    {
      RecordWriter writer(csv_, space, metadata());
      writer.append(measured_evaluation(), "h");  // lines 2-4
      writer.append(failed_evaluation(), "h");
      writer.append(measured_evaluation(), "h");
    }
    append_text(csv_, bad.bad_row);  // line 5
    for (int row = 0; row < 4; ++row) append_text(csv_, good);  // lines 6-9
    const std::string before = read_text(csv_);
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        if (attempt == 0) read_records(csv_, space);
        if (attempt == 1) RecordWriter(csv_, space, metadata());
        ADD_FAILURE() << "expected InputError for " << bad.bad_row;
      } catch (const InputError& error) {
        std::string message = error.what();
        EXPECT_NE(message.find("evaluations.csv:5: "), std::string::npos) << message;
        EXPECT_NE(message.find(bad.expected), std::string::npos) << message;
      }
    }
    EXPECT_EQ(read_text(csv_), before) << bad.bad_row;
    EXPECT_TRUE(side_files(directory_).empty());
  }
}

// Quotes, commas, line breaks, backslashes and blanks in any field come back as they went in.
TEST_F(RecordTest, HostileFieldTextRoundTrips) {
  const std::vector<std::string> hostile{
      "",
      "\"",
      "\"\"",
      "a,b",
      "\"quoted\", and, commas",
      "line one\nline two\r\nline three\n",
      "\n",
      "\r",
      "back\\slash",
      "literal \\n is not a line break",
      "ends with a backslash\\",
      "  leading and trailing blanks\t",
      "\",\"\"\n,\\\"",
      "tab\there, \xe2\x82\xac and \xff bytes",
  };
  Space space = mixed_space();  // the reader takes enumeration text as it is; the space is not consulted
  std::vector<Evaluation> written;
  {
    RecordWriter writer(csv_, space, metadata());
    for (std::size_t i = 0; i < hostile.size(); ++i) {
      Evaluation evaluation = failed_evaluation();
      evaluation.configuration[2] = Value{hostile[i]};
      evaluation.message = hostile[(i + 5) % hostile.size()] + hostile[i];
      writer.append(evaluation, hostile[i]);  // an empty first field too (found by fuzz/record_reader_fuzz.cpp)
      written.push_back(evaluation);
    }
  }
  const std::string text = read_text(csv_);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), static_cast<std::ptrdiff_t>(hostile.size() + 1));
  std::vector<RecordedEvaluation> records = read_records(csv_, space);
  ASSERT_EQ(records.size(), hostile.size());
  for (std::size_t i = 0; i < hostile.size(); ++i) {
    EXPECT_EQ(records[i].hash, hostile[i]) << i;
    expect_same(written[i], records[i].evaluation);
  }
  // A writer opening the file again finds nothing torn and nothing wrong.
  RecordWriter again(csv_, space, metadata());
  EXPECT_TRUE(again.torn_row_file().empty());
}

// Records written before line breaks were escaped may hold them raw inside a quoted message.
TEST_F(RecordTest, LegacyLineBreaksInAQuotedMessageAreStillRead) {
  Space space = mixed_space();
  { RecordWriter writer(csv_, space, metadata()); }
  append_text(csv_, "h,64,true,row,compile_error,\"error: first\nsecond \"\"line\"\"\",1,1,1,0,1,0,false,0,0,0,0,0,0,"
                    "0,0,0,0,0,0,0,0,0,0,,\r\n");                             // lines 2-3, CRLF
  append_text(csv_, "h,12x,true,row,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n");  // line 4
  try {
    read_records(csv_, space);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("evaluations.csv:4: column 'BLOCK'"), std::string::npos) << error.what();
  }
  std::string text = read_text(csv_);
  text.erase(text.rfind("h,12x"));
  std::ofstream(csv_, std::ios::binary | std::ios::trunc) << text;
  std::vector<RecordedEvaluation> records = read_records(csv_, space);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].evaluation.message, "error: first\nsecond \"line\"");
  EXPECT_EQ(records[0].evaluation.timestamp, 0.0);
}

// libcsv's defaults would trim blanks off unquoted fields and end a row at a lone carriage return; the reader
// takes text as written and ends rows at line feeds only, so line numbers stay those of the file.
TEST_F(RecordTest, HandWrittenBlanksAndCarriageReturnsAreTextAndOnlyLineFeedsEndRows) {
  Space space = mixed_space();
  { RecordWriter writer(csv_, space, metadata()); }
  append_text(csv_, "h, a\tb ,true,ro\rw,ok, spaced message ,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n");  // line 2
  append_text(csv_, "\r\n\n");                                                                       // lines 3-4
  append_text(csv_, "\"h2\"\r,64,true,\"x\",ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\r\n");            // line 5
  append_text(csv_, "h, 64,true,row,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n");                    // line 6
  try {
    read_records(csv_, space);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("evaluations.csv:2: column 'BLOCK': ' a\tb ' is not an integer"),
              std::string::npos)
        << error.what();
  }
  std::string text = read_text(csv_);
  text.replace(text.find(" a\tb "), 5, "128");
  text.erase(text.rfind("h, 64"));
  std::ofstream(csv_, std::ios::binary | std::ios::trunc) << text;
  std::vector<RecordedEvaluation> records = read_records(csv_, space);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].evaluation.configuration[2], Value{std::string("ro\rw")});
  EXPECT_EQ(records[0].evaluation.message, " spaced message ");
  EXPECT_EQ(records[1].hash, "h2");  // the carriage return after a closing quote is a CRLF-style blank
  EXPECT_EQ(records[1].evaluation.configuration[2], Value{std::string("x")});
  append_text(csv_, "h, 64,true,row,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n");  // line 6 again
  try {
    read_records(csv_, space);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("evaluations.csv:6: column 'BLOCK': ' 64' is not an integer"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(RecordTest, BadParameterTextNamesTheColumn) {
  Space space = mixed_space();
  { RecordWriter writer(csv_, space, metadata()); }
  append_text(csv_, "h,12x,true,row,ok,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n");
  try {
    read_records(csv_, space);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("evaluations.csv:2"), std::string::npos) << message;
    EXPECT_NE(message.find("column 'BLOCK': '12x' is not an integer"), std::string::npos) << message;
  }
}

TEST_F(RecordTest, UnknownStatusIsAnInputError) {
  Space space = mixed_space();
  { RecordWriter writer(csv_, space, metadata()); }
  append_text(csv_, "h,64,true,row,exploded,,1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n");
  EXPECT_THROW(read_records(csv_, space), InputError);
}

// A time that is not a number of milliseconds on an ok row is a corrupt row (it would rank first, or poison every
// mean), named by line and column; a failed row's times are not read as times.
TEST_F(RecordTest, ATimeThatIsNoTimeOnAnOkRowIsRefusedByLineAndColumn) {
  Space space = mixed_space();
  { RecordWriter writer(csv_, space, metadata()); }
  const std::string ok_row = "h,64,true,row,ok,,nan,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n";
  append_text(csv_, ok_row);
  try {
    read_records(csv_, space);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("evaluations.csv:2"), std::string::npos) << message;
    EXPECT_NE(message.find("column 'time_median_ms': 'nan' is not a time in milliseconds"), std::string::npos)
        << message;
  }
  std::filesystem::remove(csv_);  // the corrupt row is never appended to: start again
  { RecordWriter writer(csv_, space, metadata()); }
  append_text(csv_, "h,64,true,row,ok,,-1,1,1,0,1,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n");
  EXPECT_THROW(read_records(csv_, space), InputError);
  std::filesystem::remove(csv_);
  { RecordWriter writer(csv_, space, metadata()); }
  append_text(csv_, "h,64,true,row,crashed,,nan,nan,nan,0,0,0,false,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,,\n");
  EXPECT_EQ(read_records(csv_, space).size(), 1u);
}

// A CSV saved by a spreadsheet program starts with a UTF-8 byte order mark: read as if it had none.
TEST_F(RecordTest, AByteOrderMarkBeforeTheHeaderIsNotPartOfIt) {
  Space space = mixed_space();
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(measured_evaluation(), "h");
  }
  const std::string text = read_text(csv_);
  std::ofstream(csv_, std::ios::binary | std::ios::trunc) << "\xEF\xBB\xBF" << text;
  const std::vector<RecordedEvaluation> records = read_records(csv_, space);
  ASSERT_EQ(records.size(), 1u);
  expect_same(measured_evaluation(), records.front().evaluation);
}

TEST_F(RecordTest, ConfigurationOfWrongSizeIsRefused) {
  Space space = mixed_space();
  RecordWriter writer(csv_, space, metadata());
  Evaluation evaluation = measured_evaluation();
  evaluation.configuration.pop_back();
  EXPECT_THROW(writer.append(evaluation, "h"), TunerError);
}

TEST_F(RecordTest, ResumeStateHonoursTheHash) {
  Space space = mixed_space();
  Evaluation first = measured_evaluation();
  Evaluation second = failed_evaluation();
  Evaluation third = measured_evaluation();
  third.configuration[2] = Value{std::string("row")};
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(first, "current");
    writer.append(second, "current");
    writer.append(third, "previous");
  }
  ResumeState current = load_resume_state(csv_, space, "current");
  EXPECT_EQ(current.count(), 2u);
  EXPECT_TRUE(current.contains(first.configuration));
  EXPECT_TRUE(current.contains(second.configuration));
  EXPECT_FALSE(current.contains(third.configuration));
  EXPECT_EQ(current.other_hash_rows(), 1u);
  ASSERT_EQ(current.evaluations().size(), 2u);
  expect_same(first, current.evaluations()[0]);
  expect_same(second, current.evaluations()[1]);

  ResumeState previous = load_resume_state(csv_, space, "previous");
  EXPECT_EQ(previous.count(), 1u);
  EXPECT_TRUE(previous.contains(third.configuration));
  EXPECT_EQ(previous.other_hash_rows(), 2u);

  // A configuration measured again: the later row is what a resumed run ranks.
  Evaluation remeasured = first;
  remeasured.time.median_ms = 0.5;
  {
    RecordWriter writer(csv_, space, metadata());
    writer.append(remeasured, "current");
  }
  ResumeState again = load_resume_state(csv_, space, "current");
  EXPECT_EQ(again.count(), 2u);
  EXPECT_EQ(again.evaluations()[0].time.median_ms, 0.5);

  EXPECT_EQ(load_resume_state(directory_ / "missing.csv", space, "current").count(), 0u);
}

TEST(ConfigurationKey, DistinguishesTypesAndValues) {
  EXPECT_NE(configuration_key({Value{std::int64_t{1}}}), configuration_key({Value{true}}));
  EXPECT_NE(configuration_key({Value{std::int64_t{1}}}), configuration_key({Value{std::string("1")}}));
  EXPECT_NE(configuration_key({Value{std::int64_t{12}}, Value{std::int64_t{3}}}),
            configuration_key({Value{std::int64_t{1}}, Value{std::int64_t{23}}}));
  EXPECT_EQ(configuration_key({Value{std::int64_t{7}}, Value{false}}),
            configuration_key({Value{std::int64_t{7}}, Value{false}}));
}

}  // namespace
}  // namespace kernlathe
