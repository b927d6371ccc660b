#pragma once
// A synthetic spec and a recording of its whole space, for tests that run the session loop without a GPU
// (session_tuning_test.cpp, cluster_cluster_run_test.cpp).

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <gtest/gtest.h>
#include <string>

#include "tuner/record/csv_record.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace session_test {

namespace fs = std::filesystem;

inline fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tune_session_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A spec over a three-parameter space of a x b x c configurations; the template only has to exist.
inline fs::path write_spec(const fs::path& dir, int a_values, int b_values, int c_values) {
  const fs::path spec = dir / "synthetic.yaml";
  std::ofstream(spec) << "name: synthetic\n"
                      << "template: " << KERNLATHE_SOURCE_DIR << "/templates/saxpy.cu\n"
                      << "entry: saxpy\n"
                      << "space:\n"
                      << "  parameters:\n"
                      << "    - {name: A, range: {from: 0, to: " << a_values - 1 << ", step: 1}, default: 1}\n"
                      << "    - {name: B, range: {from: 0, to: " << b_values - 1 << ", step: 1}, default: 1}\n"
                      << "    - {name: C, range: {from: 0, to: " << c_values - 1 << ", step: 1}, default: 0}\n"
                      << "problem: {N: 1000000}\n"
                      << "arguments: []\n"
                      << "launch: {grid: [1], block: [32]}\n"
                      << "metrics: {bytes: 8 * N}\n";
  return spec;
}

// The synthetic landscape: time grows with the distance from (A, B, C) = (3, 2, 1); B == 4 fails verification.
inline double synthetic_time_ms(std::int64_t a, std::int64_t b, std::int64_t c) {
  return 1.0 + 0.1 * static_cast<double>((a - 3) * (a - 3) + (b - 2) * (b - 2) + (c - 1) * (c - 1));
}

// adjust (when given) changes each evaluation before it is recorded.
inline fs::path write_recording(const fs::path& spec_file, const fs::path& dir,
                         const std::function<void(Evaluation&)>& adjust = {}) {
  KernelSpec spec = load_kernel_spec(spec_file);
  SpaceEnumerator space(spec.space, run_constants(spec, device_profile("sm_90")));
  const fs::path csv = dir / "recorded.csv";
  RunMetadata metadata;
  metadata.kernel = spec.name;
  metadata.arch = "sm_90";
  metadata.gpu_name = "synthetic";
  RecordWriter writer(csv, spec.space, metadata);
  for (std::uint64_t i = 0; i < space.valid_count(); ++i) {
    Evaluation evaluation;
    evaluation.configuration = space.at(i);
    const auto a = std::get<std::int64_t>(evaluation.configuration[0]);
    const auto b = std::get<std::int64_t>(evaluation.configuration[1]);
    const auto c = std::get<std::int64_t>(evaluation.configuration[2]);
    if (b == 4) {
      evaluation.status = Status::wrong_result;
      evaluation.message = "1 of 10 elements differ";
    } else {
      evaluation.time.median_ms = synthetic_time_ms(a, b, c);
      evaluation.time.min_ms = evaluation.time.median_ms;
      evaluation.time.samples = 10;
    }
    if (adjust) adjust(evaluation);
    writer.append(evaluation, "recorded");
  }
  return csv;
}

inline TuneOptions replay_options(const fs::path& spec, const fs::path& recording, const fs::path& out) {
  TuneOptions options;
  options.spec_file = spec;
  options.replay_csv = recording;
  options.replay_arch = "sm_90";
  options.out_dir = out;
  options.strategy = "exhaustive";
  options.show_progress = false;
  options.update_best_cache = false;
  return options;
}

inline Configuration configuration_of(std::int64_t a, std::int64_t b, std::int64_t c) {
  return Configuration{Value{a}, Value{b}, Value{c}};
}

// The rows of a record, checked to hold no configuration twice (each repeat fails the calling test).
inline std::size_t rows_each_configuration_once(const fs::path& records, const fs::path& spec_file) {
  const KernelSpec spec = load_kernel_spec(spec_file);
  std::set<std::string> keys;
  std::size_t rows = 0;
  for (const RecordedEvaluation& row : read_records(records, spec.space)) {
    ++rows;
    EXPECT_TRUE(keys.insert(configuration_key(row.evaluation.configuration)).second)
        << "measured twice: " << to_string(spec.space, row.evaluation.configuration);
  }
  return rows;
}

}  // namespace session_test
}  // namespace kernlathe
