// Streamed workloads on a real GPU (issue 7): the pipeline runs end to end in the evaluation worker, every batch is
// checked against the naive reference pass, planted faults come back as wrong_result naming the batch, the stage
// breakdown is recorded, and the pinned host-to-device ceiling is measured in the same run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tuner/common/error.h"
#include "tuner/loader/dataset.h"
#include "tuner/record/csv_record.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"

namespace tuner {
namespace {

namespace fs = std::filesystem;

std::string from_environment(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

TuneOptions options_for(const fs::path& spec, const fs::path& out) {
  TuneOptions options;
  options.spec_file = spec;
  options.strategy = "exhaustive";
  options.out_dir = out;
  options.timeout_seconds = 10;
  options.worker_executable = from_environment("TUNE_BINARY", TUNE_BINARY);
  options.cubin_cache_dir = out / "cubins";
  options.best_cache_dir = out / "best";
  options.update_best_cache = false;
  options.show_progress = false;
  return options;
}

TEST(LoaderOnDevice, StreamedFaultsAreClassifiedAndStagesRecorded) {
  const fs::path source = from_environment("TUNER_SOURCE_DIR", TUNER_SOURCE_DIR);
  const fs::path out = fs::temp_directory_path() / ("tune_stream_faults_" + std::to_string(::getpid()));
  fs::remove_all(out);
  TuneOptions options = options_for(source / "tests/data/loader/stream_faults.yaml", out);
  TuneReport report;
  try {
    report = tune(options);
  } catch (const NoGpuError& error) {
    GTEST_SKIP() << "no GPU: " << error.what();
  }
  EXPECT_TRUE(report.streamed);
  EXPECT_GT(report.pinned_copy_in_gbps, 5.0) << "a pinned host-to-device copy below 5 GB/s: PCIe misconfigured?";
  EXPECT_EQ(report.evaluated, 36u);

  KernelSpec spec = load_kernel_spec(options.spec_file);
  std::vector<RecordedEvaluation> rows = read_records(report.records, spec.space);
  ASSERT_EQ(rows.size(), 36u);
  for (const RecordedEvaluation& row : rows) {
    const Evaluation& evaluation = row.evaluation;
    const std::int64_t fault = std::get<std::int64_t>(evaluation.configuration[0]);
    const std::string where = to_string(spec.space, evaluation.configuration) + ": " + evaluation.message;
    if (fault == 0) {
      ASSERT_EQ(evaluation.status, Status::ok) << where;
      EXPECT_GT(evaluation.stream.end_to_end_ms, 0) << where;
      EXPECT_GT(evaluation.stream.copy_in_ms, 0) << where;
      EXPECT_GT(evaluation.stream.kernel_ms, 0) << where;
      EXPECT_GT(evaluation.stream.copy_out_ms, 0) << where;
      EXPECT_NEAR(evaluation.stream.items_per_second * evaluation.stream.end_to_end_ms / 1000, 64, 1) << where;
      EXPECT_DOUBLE_EQ(evaluation.time.median_ms > 0, true);
    } else {
      ASSERT_EQ(evaluation.status, Status::wrong_result) << where;
      const std::string item = fault == 1 ? "item 5" : "item 9";
      EXPECT_NE(evaluation.message.find("batch"), std::string::npos) << where;
      EXPECT_NE(evaluation.message.find(item), std::string::npos) << where;
    }
  }
  fs::remove_all(out);
}

// A dataset file shorter than its header says stops the run before any configuration, naming the file.
TEST(LoaderOnDevice, ShortDatasetFileIsAnInputErrorNamingTheFile) {
  const fs::path source = from_environment("TUNER_SOURCE_DIR", TUNER_SOURCE_DIR);
  const fs::path out = fs::temp_directory_path() / ("tune_stream_short_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out / "data");
  std::vector<float> values(8 * 1024, 1.0f);
  loader::write_npy(out / "data" / "part_0.npy", Dtype::f32, {8, 1024}, std::as_bytes(std::span(values)));
  loader::write_npy(out / "data" / "part_1.npy", Dtype::f32, {8, 1024}, std::as_bytes(std::span(values)));
  fs::resize_file(out / "data" / "part_1.npy", fs::file_size(out / "data" / "part_1.npy") - 100);

  std::string text;
  {
    std::ifstream stream(source / "tests/data/loader/stream_faults.yaml");
    text.assign(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>());
  }
  const std::string generated = "  generate: {sequence: {start: 0, step: 1}}";
  text.replace(text.find(generated), generated.size(), "  files: " + (out / "data" / "part_*.npy").string());
  text.replace(text.find("ITEMS: 64"), 9, "ITEMS: 16");
  text.replace(text.find("template: stream_faults.cu"), 26, "template: " + (source / "tests/data/loader/stream_faults.cu").string());
  fs::path spec = out / "short.yaml";
  std::ofstream(spec) << text;

  TuneOptions options = options_for(spec, out / "run");
  try {
    tune(options);
    FAIL() << "expected InputError";
  } catch (const NoGpuError& error) {
    GTEST_SKIP() << "no GPU: " << error.what();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("part_1.npy"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("short file"), std::string::npos) << error.what();
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace tuner
