#pragma once
// Small recordings built in code or written as project records, for the tests of tuner/analysis.

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "tuner/analysis/recording.h"
#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"

namespace kernlathe::testing {

inline Parameter integer_parameter(const std::string& name, std::vector<std::int64_t> values) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::integer;
  for (std::int64_t value : values) parameter.values.emplace_back(value);
  parameter.default_value = parameter.values.front();
  return parameter;
}

inline Parameter enumeration_parameter(const std::string& name, std::vector<std::string> values) {
  Parameter parameter;
  parameter.name = name;
  parameter.type = ParameterType::enumeration;
  for (std::string& value : values) parameter.values.emplace_back(std::move(value));
  parameter.default_value = parameter.values.front();
  return parameter;
}

inline Evaluation measured(Configuration configuration, double time_ms) {
  Evaluation evaluation;
  evaluation.configuration = std::move(configuration);
  evaluation.status = Status::ok;
  evaluation.time.median_ms = evaluation.time.min_ms = evaluation.time.max_ms = time_ms;
  evaluation.time.samples = 1;
  return evaluation;
}

inline Evaluation failed(Configuration configuration, Status status, std::string message = "") {
  Evaluation evaluation;
  evaluation.configuration = std::move(configuration);
  evaluation.status = status;
  evaluation.message = std::move(message);
  return evaluation;
}

// A fresh empty folder under the system's temporary folder, removed by the destructor.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              (name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  static int& counter() {
    static int next = 0;
    return next;
  }
  std::filesystem::path path_;
};

// Writes evaluations as `tune run` records them: <folder>/evaluations.csv and run.json naming the GPU.
inline std::filesystem::path write_record(const std::filesystem::path& folder, const std::vector<Parameter>& parameters,
                                          const std::vector<Evaluation>& evaluations, const std::string& gpu,
                                          const std::string& kernel = "toy", const std::string& problem = "N=64",
                                          const std::string& hash = "feedc0de") {
  std::filesystem::create_directories(folder);
  Space space;
  space.name = kernel;
  space.parameters = parameters;
  RunMetadata metadata;
  metadata.kernel = kernel;
  metadata.spec_hash = hash;
  metadata.gpu_name = gpu;
  metadata.arch = "sm_90";
  metadata.problem = problem;
  metadata.strategy = "exhaustive";
  const std::filesystem::path csv = folder / "evaluations.csv";
  RecordWriter writer(csv, space, metadata);
  for (const Evaluation& evaluation : evaluations) writer.append(evaluation, hash);
  return csv;
}

}  // namespace kernlathe::testing
