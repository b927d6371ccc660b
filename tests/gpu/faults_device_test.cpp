// The planted-fault space (tests/data/faults) tuned end to end on a real GPU: every configuration is recorded, each
// planted fault with its own status, and the healthy configurations are measured and verified.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "tuner/common/error.h"
#include "tuner/record/csv_record.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"
#include "gpu_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

TEST(FaultsOnDevice, EveryPlantedFaultIsClassifiedAndNoRowIsLost) {
  const fs::path source = from_environment("KERNLATHE_SOURCE_DIR", KERNLATHE_SOURCE_DIR);
  const fs::path out = fs::temp_directory_path() / ("tune_faults_" + std::to_string(::getpid()));
  fs::remove_all(out);
  TuneOptions options;
  options.spec_file = source / "tests/data/faults/faults.yaml";
  options.strategy = "exhaustive";
  options.out_dir = out;
  options.timeout_seconds = 3;
  options.worker_executable = from_environment("TUNE_BINARY", TUNE_BINARY);
  options.cubin_cache_dir = out / "cubins";
  options.best_cache_dir = out / "best";
  options.show_progress = false;
  TuneReport report;
  try {
    report = tune(options);
  } catch (const NoGpuError& error) {
    GTEST_SKIP() << "no GPU: " << error.what();
  }
  EXPECT_EQ(report.evaluated, 12u);

  const std::map<std::int64_t, Status> planted{{0, Status::ok},           {1, Status::crashed},
                                               {2, Status::timeout},      {3, Status::resources_exceeded},
                                               {4, Status::compile_error}, {5, Status::wrong_result}};
  KernelSpec spec = load_kernel_spec(options.spec_file);
  std::vector<RecordedEvaluation> rows = read_records(report.records, spec.space);
  ASSERT_EQ(rows.size(), 12u);
  for (const RecordedEvaluation& row : rows) {
    const std::int64_t fault = std::get<std::int64_t>(row.evaluation.configuration[0]);
    EXPECT_EQ(row.evaluation.status, planted.at(fault))
        << "FAULT=" << fault << ": " << status_name(row.evaluation.status) << " " << row.evaluation.message;
    if (row.evaluation.status == Status::ok) {
      EXPECT_GT(row.evaluation.time.median_ms, 0);
      EXPECT_GE(row.evaluation.time.samples, 1);
    }
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace kernlathe
