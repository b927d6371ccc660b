#include "tuner/run/gpu_evaluator.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kernlathe {
namespace {

bool driver_library_present() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library != nullptr) dlclose(library);
  return library != nullptr;
}

GpuEvaluatorOptions options_for(const std::filesystem::path& worker) {
  GpuEvaluatorOptions options;
  options.worker_executable = worker;
  return options;
}

std::filesystem::path write_script(const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  std::ofstream(path) << text;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

TEST(GpuEvaluator, MissingWorkerExecutableIsAClearError) {
  GpuEvaluator evaluator(options_for("/nonexistent/tune"));
  try {
    evaluator.device_properties();
    FAIL() << "no exception";
  } catch (const NoGpuError& error) {
    FAIL() << "a missing executable is not a missing GPU: " << error.what();
  } catch (const TunerError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("cannot start the evaluation worker '/nonexistent/tune'"), std::string::npos) << message;
    EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  }
  EXPECT_EQ(evaluator.worker_starts(), 0);
}

TEST(GpuEvaluator, WorkerThatDiesReportsExitCodeAndLastStderrLine) {
  std::filesystem::path script = write_script("dying-worker", "#!/bin/sh\necho 'first line' >&2\necho 'cannot map device memory' >&2\nexit 7\n");
  GpuEvaluator evaluator(options_for(script));
  try {
    evaluator.device_properties();
    FAIL() << "no exception";
  } catch (const TunerError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("exited with code 7"), std::string::npos) << message;
    EXPECT_NE(message.find("last stderr line: cannot map device memory"), std::string::npos) << message;
  }
  EXPECT_EQ(evaluator.worker_starts(), 1);
  std::filesystem::remove(script);
}

TEST(GpuEvaluator, EvaluateBeforeSetupThrows) {
  GpuEvaluator evaluator(options_for("/nonexistent/tune"));
  EXPECT_THROW(evaluator.evaluate({}), TunerError);
}

TEST(GpuEvaluator, RealWorkerWithoutDriverReportsNoGpu) {
  if (driver_library_present()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  GpuEvaluator evaluator(options_for(TUNE_BINARY));
  try {
    evaluator.device_properties();
    FAIL() << "no exception";
  } catch (const NoGpuError& error) {
    EXPECT_NE(std::string(error.what()).find("no NVIDIA driver"), std::string::npos) << error.what();
  }
}

TEST(GpuEvaluator, DeadlineCoversTimeoutWarmupAndSamplingCap) {
  GpuEvaluatorOptions options = options_for("/nonexistent/tune");
  options.timeout_seconds = 4;
  options.measurement.warmup_ms = 500;
  options.measurement.max_seconds = 2;
  GpuEvaluator evaluator(options);
  EvaluationRequest request;
  double default_deadline = evaluator.reply_deadline_seconds(request);
  request.timeout_seconds = 1;
  double short_deadline = evaluator.reply_deadline_seconds(request);
  EXPECT_DOUBLE_EQ(default_deadline - short_deadline, 3.0);  // the request's own timeout replaces the default
  EXPECT_GE(short_deadline, 1 + 0.5 + 2);
  EXPECT_LE(short_deadline, 1 + 0.5 + 2 + 10);
}

}  // namespace
}  // namespace kernlathe
