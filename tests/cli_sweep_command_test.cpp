// `tune sweep WORKLOAD` without a GPU: every problem is checked before anything runs (a symbol the spec lacks is
// exit 2 and writes nothing), a file that is not a workload is refused, the first problem's missing GPU is exit 3
// with the state recorded, and problems a state file marks done are skipped. Then whole sweeps in this process
// over stand-in GPUs of different speeds (RunCommand::open_device): problems tuned at once, one device each, the
// last one on every free device, each problem once, the state and the summary naming each problem's devices, and
// the priors of a problem being the problems of its spec finished when it started. Last, sweeps over four ranks as
// threads of this process (an in-process network in place of MPI): each problem tuned once by one rank, every rank
// busy at once, one state and one summary from rank 0, one exit code, and a lost rank's finished records kept.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_support.h"
#include "cluster_test_support.h"
#include "session_test_support.h"
#include "tuner/cli/sweep_command.h"
#include "tuner/record/csv_record.h"
#include "tuner/record/run_metadata.h"
#include "tuner/session/measurer.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using cli_test::run_tune;

class SweepCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("cli_sweep_command_test-" + std::to_string(::getpid()));
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path write_workload(const std::string& tasks) {
    const fs::path file = directory_ / "workload.yaml";
    std::ofstream(file) << "workload: small\ntasks:\n" << tasks;
    return file;
  }

  fs::path directory_;
};

TEST_F(SweepCommand, AProblemTheSpecCannotTakeIsBadInputBeforeAnythingRuns) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048]}\n  - spec: saxpy\n    problems: [{Q: 3}]\n");
  const fs::path out = directory_ / "out";
  const auto result = run_tune("sweep " + file.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("Q=3"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("workload.yaml"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(out));
}

// Under mpirun every rank reads and checks the same workload before MPI is started: a bad problem is exit 2 on each
// rank, with nothing written (the launcher's variables are what tune reads to know it runs under mpirun; no MPI
// is started here, or this would fail to find the launcher).
TEST_F(SweepCommand, UnderMpirunABadProblemIsBadInputBeforeMpiStartsOrAnythingIsWritten) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048]}\n  - spec: saxpy\n    problems: [{Q: 3}]\n");
  const fs::path out = directory_ / "out";
  const auto result = cli_test::run_tune_in_shell("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 ",
                                                  "sweep " + file.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("Q=3"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("MPI"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(SweepCommand, AKernelSpecIsNotAWorkload) {
  const auto result = run_tune("sweep kernels/saxpy.yaml --out " + (directory_ / "out").string());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("not a workload file"), std::string::npos) << result.err;
}

TEST_F(SweepCommand, WithoutAGpuTheFirstProblemEndsTheSweepWithExit3AndItsStateIsKept) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048]}\n");
  const fs::path out = directory_ / "out";
  const auto result = run_tune("sweep " + file.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 3) << result.err;
  std::ifstream in(out / "state.json");
  const nlohmann::json state = nlohmann::json::parse(in);
  EXPECT_EQ(state.at("workload"), "small");
  const nlohmann::json& first = state.at("problems").at("01-saxpy-N=1024");
  EXPECT_EQ(first.at("status"), "failed");
  EXPECT_EQ(first.at("exit"), 3);
  EXPECT_FALSE(state.at("problems").contains("02-saxpy-N=2048"));  // never started
}

TEST_F(SweepCommand, ProblemsDoneBeforeAreSkippedAndTheNextOneRuns) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048]}\n");
  const fs::path out = directory_ / "out";
  fs::create_directories(out);
  std::ofstream(out / "state.json")
      << R"({"workload": "small", "file": "x", "problems": {"01-saxpy-N=1024": {"status": "done", "exit": 0}}})";
  const auto result = run_tune("sweep " + file.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 3) << result.err;  // the second problem needs the GPU
  EXPECT_NE(result.err.find("01-saxpy-N=1024 done before, skipped"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("2/2 02-saxpy-N=2048"), std::string::npos) << result.err;
  const auto restarted = run_tune("sweep " + file.string() + " --out " + out.string() + " --restart");
  EXPECT_NE(restarted.err.find("1/2 01-saxpy-N=1024"), std::string::npos) << restarted.err;
  EXPECT_EQ(restarted.err.find("skipped"), std::string::npos) << restarted.err;
}

TEST_F(SweepCommand, ADeviceListThatCannotBeUsedIsBadInputBeforeAnythingRuns) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048]}\n");
  const fs::path out = directory_ / "out";
  const auto twice = run_tune("sweep " + file.string() + " --out " + out.string() + " --devices 0,1,0");
  EXPECT_EQ(twice.exit_code, 2) << twice.err;
  EXPECT_NE(twice.err.find("names a GPU twice"), std::string::npos) << twice.err;
  const auto not_an_index = run_tune("sweep " + file.string() + " --out " + out.string() + " --devices 0,x");
  EXPECT_EQ(not_an_index.exit_code, 2) << not_an_index.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(SweepCommand, WithoutAGpuOverTwoDevicesTheProblemsStartedFailWithExit3AndNothingMoreStarts) {
  const fs::path file = write_workload("  - spec: saxpy\n    sweep: {N: [1024, 2048, 4096]}\n");
  const fs::path out = directory_ / "out";
  const auto result = run_tune("sweep " + file.string() + " --out " + out.string() + " --devices 0,1");
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("1/3 01-saxpy-N=1024 on device 0"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("2/3 02-saxpy-N=2048 on device 1"), std::string::npos) << result.err;
  std::ifstream in(out / "state.json");
  const nlohmann::json state = nlohmann::json::parse(in);
  for (const auto& [label, device] : {std::pair{"01-saxpy-N=1024", 0}, std::pair{"02-saxpy-N=2048", 1}}) {
    const nlohmann::json& entry = state.at("problems").at(label);
    EXPECT_EQ(entry.at("status"), "failed") << label;
    EXPECT_EQ(entry.at("exit"), 3) << label;
    EXPECT_EQ(entry.at("devices"), nlohmann::json::array({device})) << label;
  }
  EXPECT_FALSE(state.at("problems").contains("03-saxpy-N=4096"));  // never started
}

using Clock = std::chrono::steady_clock;

// What the stand-in GPUs measured: each measurement's problem (its N), device, start and end.
struct DeviceLog {
  struct Entry {
    std::int64_t problem = 0;
    int device = 0;
    Clock::time_point started, ended;
  };
  std::mutex mutex;
  std::vector<Entry> entries;
  // When above 0: the first `rendezvous` devices to be prepared wait for each other there (10 s at most), which
  // they can only meet if their problems run at the same time.
  int rendezvous = 0;
  int arrived = 0;
  bool met = false;
  std::condition_variable all_arrived;

  void arrive() {
    std::unique_lock lock(mutex);
    if (++arrived > rendezvous) return;
    if (arrived == rendezvous) {
      met = true;
      all_arrived.notify_all();
    }
    all_arrived.wait_for(lock, std::chrono::seconds(10), [this] { return met; });
  }

  std::set<int> devices_of(std::int64_t problem) {
    std::lock_guard lock(mutex);
    std::set<int> devices;
    for (const Entry& entry : entries)
      if (entry.problem == problem) devices.insert(entry.device);
    return devices;
  }
  // From the start of a problem's first measurement to the end of its last.
  std::pair<Clock::time_point, Clock::time_point> span_of(std::int64_t problem) {
    std::lock_guard lock(mutex);
    std::pair<Clock::time_point, Clock::time_point> span{Clock::time_point::max(), Clock::time_point::min()};
    for (const Entry& entry : entries)
      if (entry.problem == problem) span = {std::min(span.first, entry.started), std::max(span.second, entry.ended)};
    return span;
  }
  std::vector<std::int64_t> problem_order() {
    std::lock_guard lock(mutex);
    std::vector<std::int64_t> order;
    for (const Entry& entry : entries)
      if (order.empty() || order.back() != entry.problem) order.push_back(entry.problem);
    return order;
  }
};

// A stand-in GPU: every configuration of the synthetic space verifies, in the synthetic landscape's time; each
// measurement takes pace_ms of wall time, so devices of different paces finish their problems at different times.
class StandInGpu final : public Measurer {
 public:
  StandInGpu(const KernelSpec& spec, int index, int pace_ms, std::shared_ptr<DeviceLog> log)
      : index_(index), pace_ms_(pace_ms), log_(std::move(log)), device_(device_profile("sm_90")) {
    device_.name = "stand-in GPU";
    for (const auto& [symbol, value] : spec.problem)
      if (symbol == "N") problem_ = value;
  }

  const DeviceProperties& device() const override { return device_; }
  bool needs_compilation() const override { return false; }
  void prepare(const SpaceEnumerator&) override { log_->arrive(); }

  Evaluation measure(const Configuration& configuration, const CompileResult*, const SpaceEnumerator&, bool) override {
    const Clock::time_point started = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(pace_ms_));
    {
      std::lock_guard lock(log_->mutex);
      log_->entries.push_back({problem_, index_, started, Clock::now()});
    }
    Evaluation evaluation;
    evaluation.configuration = configuration;
    evaluation.time.median_ms = evaluation.time.min_ms =
        session_test::synthetic_time_ms(std::get<std::int64_t>(configuration[0]), std::get<std::int64_t>(configuration[1]),
                                        std::get<std::int64_t>(configuration[2]));
    evaluation.time.samples = 10;
    return evaluation;
  }

 private:
  int index_;
  int pace_ms_;
  std::shared_ptr<DeviceLog> log_;
  DeviceProperties device_;
  std::int64_t problem_ = 0;
};

constexpr std::uint64_t budget = 8;

// A sweep of the synthetic spec's problems N = 1000, 2000, ... in this process, over stand-in GPUs whose paces
// (ms per measurement) are given by index; the summary's JSON comes back through a temporary file.
class SweepAcrossDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = session_test::fresh_directory("cli_sweep_across_devices");
    spec_ = session_test::write_spec(directory_, 6, 5, 3);
    out_ = directory_ / "out";
  }
  void TearDown() override { fs::remove_all(directory_); }

  int sweep(int problems, const std::string& devices, const std::map<int, int>& pace_ms, bool json = true) {
    std::string values;
    for (int index = 1; index <= problems; ++index) values += (index > 1 ? ", " : "") + std::to_string(1000 * index);
    const fs::path workload = directory_ / "workload.yaml";
    std::ofstream(workload) << "workload: stand-in\ntasks:\n  - spec: " << spec_.string() << "\n    sweep: {N: ["
                            << values << "]}\n";
    ::kernlathe::SweepCommand command;
    command.run.common.spec = workload.string();
    command.run.common.json = json;
    command.run.out = out_.string();
    command.run.devices = devices;
    command.run.budget = budget;
    command.run.strategy = "random";
    command.run.final_candidates = 0;
    command.run.best_dir = (directory_ / "best").string();
    command.run.ceiling_cache = (directory_ / "ceilings").string();
    command.run.open_device = [log = log_, pace_ms](const KernelSpec& spec, int index) -> std::unique_ptr<Measurer> {
      return std::make_unique<StandInGpu>(spec, index, pace_ms.at(index), log);
    };
    std::FILE* results = std::tmpfile();
    const int exit_code = command.run_sweep(results);
    const std::string text = cli_test::read_back(results);
    summary_text_ = text;
    if (json) summary_ = nlohmann::json::parse(text);
    std::ifstream in(out_ / "state.json");
    state_ = nlohmann::json::parse(in);
    return exit_code;
  }

  static std::string label(int index) { return fmt::format("{:02}-synthetic-N={}", index, 1000 * index); }
  std::set<int> state_devices(int index) const {
    const std::vector<int> devices = state_.at("problems").at(label(index)).at("devices").get<std::vector<int>>();
    return {devices.begin(), devices.end()};
  }
  // The record of a problem: its rows each configuration once, each measured on one of the state's devices.
  void expect_record_on_its_devices(int index) {
    const fs::path records = out_ / label(index) / "evaluations.csv";
    EXPECT_EQ(session_test::rows_each_configuration_once(records, spec_), budget) << label(index);
    std::set<std::string> expected;
    for (int device : state_devices(index)) expected.insert(std::to_string(device));
    std::set<std::string> recorded;
    for (const RecordedEvaluation& row : read_records(records, load_kernel_spec(spec_).space))
      recorded.insert(row.evaluation.device);
    EXPECT_EQ(recorded, expected) << label(index);
  }
  std::string prior_of(int index) const {
    const std::vector<RunMetadata> runs = read_run_metadata(out_ / label(index) / "evaluations.csv");
    if (runs.empty()) return "";
    const auto prior = runs.back().extra.find("prior");
    return prior == runs.back().extra.end() ? "" : prior->second;
  }

  fs::path directory_, spec_, out_;
  std::shared_ptr<DeviceLog> log_ = std::make_shared<DeviceLog>();
  nlohmann::json summary_, state_;
  std::string summary_text_;
};

TEST_F(SweepAcrossDevices, ProblemsOutnumberingTheDevicesRunAtOnceOneDeviceEachAndEachOnce) {
  // Device 1 takes 40 ms a measurement, device 0 one: device 0 tunes problem 1 and then, while device 1 is still
  // on problem 2, the next ones. Problems 1 and 2 meet at the rendezvous: they were tuned at the same time.
  log_->rendezvous = 2;
  ASSERT_EQ(sweep(4, "0,1", {{0, 1}, {1, 40}}), 0);
  EXPECT_TRUE(log_->met);
  for (int index = 1; index <= 4; ++index) {
    const nlohmann::json& entry = state_.at("problems").at(label(index));
    EXPECT_EQ(entry.at("status"), "done") << label(index);
    EXPECT_EQ(entry.at("exit"), 0) << label(index);
    ASSERT_EQ(state_devices(index).size(), 1u) << label(index) << ": problems outnumber devices, one each";
    EXPECT_EQ(log_->devices_of(1000 * index), state_devices(index)) << label(index);
    expect_record_on_its_devices(index);
  }
  EXPECT_EQ(state_devices(1), std::set<int>{0});
  EXPECT_EQ(state_devices(2), std::set<int>{1});
  // Problem 2 started beside problem 1, which had not finished: no prior. Problem 3 started once a device was free,
  // with the records of the problem that had finished, and not those of one still measuring.
  EXPECT_EQ(prior_of(2).find("01-synthetic"), std::string::npos) << prior_of(2);
  const bool two_still_measuring = log_->span_of(2000).second > log_->span_of(3000).first;
  EXPECT_TRUE(prior_of(3).find("01-synthetic") != std::string::npos || !two_still_measuring) << prior_of(3);
  if (two_still_measuring) {
    EXPECT_EQ(prior_of(3).find("02-synthetic"), std::string::npos) << prior_of(3);
  }
  // The summary: one row per problem in workload order, with its devices.
  ASSERT_EQ(summary_.at("problems").size(), 4u);
  for (int index = 1; index <= 4; ++index) {
    const nlohmann::json& row = summary_.at("problems").at(index - 1);
    EXPECT_EQ(row.at("problem"), label(index));
    EXPECT_EQ(row.at("devices"), state_.at("problems").at(label(index)).at("devices"));
    EXPECT_EQ(row.at("evaluated"), budget);
  }
}

TEST_F(SweepAcrossDevices, TheLastProblemTakesEveryFreeDevice) {
  fs::create_directories(out_);
  std::ofstream(out_ / "state.json") << R"({"workload": "stand-in", "file": "x", "problems": {)"
                                     << R"("01-synthetic-N=1000": {"status": "done", "exit": 0, "devices": [2]},)"
                                     << R"("02-synthetic-N=2000": {"status": "done", "exit": 0, "devices": [0]}}})";
  ASSERT_EQ(sweep(3, "0,1,2", {{0, 1}, {1, 3}, {2, 1}}), 0);
  EXPECT_EQ(state_devices(3), (std::set<int>{0, 1, 2}));
  EXPECT_EQ(log_->devices_of(3000), (std::set<int>{0, 1, 2}));
  expect_record_on_its_devices(3);
  EXPECT_TRUE(log_->devices_of(1000).empty());  // done before: skipped
  EXPECT_EQ(summary_.at("problems").at(0).at("devices"), nlohmann::json::array({2}));
  EXPECT_EQ(summary_.at("problems").at(2).at("devices"), nlohmann::json::array({0, 1, 2}));
  // Again: everything is done, nothing runs, and the table names each problem's devices.
  ASSERT_EQ(sweep(3, "0,1,2", {{0, 1}, {1, 3}, {2, 1}}, false), 0);
  EXPECT_NE(summary_text_.find("devices\n"), std::string::npos) << summary_text_;
  EXPECT_NE(summary_text_.find("  2\n"), std::string::npos) << summary_text_;
  EXPECT_NE(summary_text_.find("  0,1,2\n"), std::string::npos) << summary_text_;
  EXPECT_EQ(log_->devices_of(3000), (std::set<int>{0, 1, 2}));  // not measured again
}

TEST_F(SweepAcrossDevices, OneDeviceTunesTheProblemsOneAfterTheOtherWithTheEarlierOnesAsPriors) {
  ASSERT_EQ(sweep(3, "", {{0, 1}}), 0);
  EXPECT_EQ(log_->problem_order(), (std::vector<std::int64_t>{1000, 2000, 3000}));
  for (int index = 1; index <= 3; ++index) {
    EXPECT_EQ(state_devices(index), std::set<int>{0});
    expect_record_on_its_devices(index);
  }
  EXPECT_NE(prior_of(2).find("01-synthetic"), std::string::npos) << prior_of(2);
  EXPECT_NE(prior_of(3).find("02-synthetic"), std::string::npos) << prior_of(3);
}

// Four ranks as threads over an in-process network (cluster_test::LocalNetwork, in place of MPI), each with stand-in
// GPUs of its own: rank 1 has two, the others one; device d of rank r is logged as 10 r + d. The problems are the
// synthetic spec's N = 1000, 2000, ...; each rank's summary (stdout) and exit code come back.
class SweepOverRanks : public ::testing::Test {
 protected:
  static constexpr int ranks = 4;
  static constexpr int finished_tag = 43;  // sweep_command.cpp's message of a finished problem, to rank 0

  struct RankOutcome {
    int exit_code = -1;
    std::string results;
    std::string error;
  };

  void SetUp() override {
    directory_ = session_test::fresh_directory("cli_sweep_over_ranks");
    spec_ = session_test::write_spec(directory_, 6, 5, 3);
    out_ = directory_ / "out";
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::vector<RankOutcome> sweep(cluster_test::LocalNetwork& network, int problems, double rank_timeout) {
    std::string values;
    for (int index = 1; index <= problems; ++index) values += (index > 1 ? ", " : "") + std::to_string(1000 * index);
    const fs::path workload = directory_ / "workload.yaml";
    std::ofstream(workload) << "workload: stand-in\ntasks:\n  - spec: " << spec_.string() << "\n    sweep: {N: ["
                            << values << "]}\n";
    std::vector<RankOutcome> outcomes(ranks);
    std::vector<std::unique_ptr<Communicator>> communicators;
    for (int rank = 0; rank < ranks; ++rank) communicators.push_back(network.communicator(rank));
    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; ++rank)
      threads.emplace_back([&, rank] {
        ::kernlathe::SweepCommand command;
        command.run.common.spec = workload.string();
        command.run.common.json = true;
        command.run.out = out_.string();
        command.run.devices = rank == 1 ? "0,1" : "0";
        command.run.budget = budget;
        command.run.strategy = "random";
        command.run.final_candidates = 0;
        command.run.rank_timeout = rank_timeout;
        command.run.best_dir = (directory_ / "best").string();
        command.run.ceiling_cache = (directory_ / "ceilings").string();
        const int pace_ms = rank == 2 ? 20 : 2;
        command.run.open_device = [log = log_, rank, pace_ms](const KernelSpec& spec, int index) -> std::unique_ptr<Measurer> {
          return std::make_unique<StandInGpu>(spec, 10 * rank + index, pace_ms, log);
        };
        command.ranks = communicators[static_cast<std::size_t>(rank)].get();
        std::FILE* results = std::tmpfile();
        try {
          outcomes[static_cast<std::size_t>(rank)].exit_code = command.run_sweep(results);
        } catch (const std::exception& error) {
          outcomes[static_cast<std::size_t>(rank)].error = error.what();
        }
        outcomes[static_cast<std::size_t>(rank)].results = cli_test::read_back(results);
      });
    for (std::thread& thread : threads) thread.join();
    std::ifstream in(out_ / "state.json");
    state_ = nlohmann::json::parse(in);
    return outcomes;
  }

  static std::string label(int index) { return fmt::format("{:02}-synthetic-N={}", index, 1000 * index); }
  const nlohmann::json& entry(int index) const { return state_.at("problems").at(label(index)); }
  // The ranks whose stand-in GPUs measured the problem, from the log, and their devices.
  std::set<int> ranks_that_measured(int index) {
    std::set<int> measured;
    for (int device : log_->devices_of(1000 * index)) measured.insert(device / 10);
    return measured;
  }
  std::set<int> devices_that_measured(int index) {
    std::set<int> measured;
    for (int device : log_->devices_of(1000 * index)) measured.insert(device % 10);
    return measured;
  }

  fs::path directory_, spec_, out_;
  std::shared_ptr<DeviceLog> log_ = std::make_shared<DeviceLog>();
  nlohmann::json state_;
};

TEST_F(SweepOverRanks, EachProblemIsTunedOnceByOneRankAndRankZeroSumsUpForAll) {
  // Five devices over four ranks: the first five devices to be prepared wait for each other, so every rank tunes a
  // problem at the same time as the others (rank 1 two, or one over both of its devices).
  log_->rendezvous = 5;
  cluster_test::LocalNetwork network(ranks);
  const std::vector<RankOutcome> outcomes = sweep(network, 8, 30);
  for (int rank = 0; rank < ranks; ++rank) {
    EXPECT_EQ(outcomes[rank].exit_code, 0) << "rank " << rank << ": " << outcomes[rank].error;
    if (rank > 0) {
      EXPECT_EQ(outcomes[rank].results, "") << "rank " << rank << " printed a summary";
    }
  }
  EXPECT_TRUE(log_->met);
  std::set<int> ranks_that_tuned;
  for (int index = 1; index <= 8; ++index) {
    EXPECT_EQ(entry(index).at("status"), "done") << label(index);
    const int rank = entry(index).at("rank").get<int>();
    ranks_that_tuned.insert(rank);
    EXPECT_EQ(ranks_that_measured(index), std::set<int>{rank}) << label(index) << ": tuned by one rank, the state's";
    const std::vector<int> devices = entry(index).at("devices").get<std::vector<int>>();
    EXPECT_EQ(devices_that_measured(index), std::set<int>(devices.begin(), devices.end())) << label(index);
    EXPECT_EQ(session_test::rows_each_configuration_once(out_ / label(index) / "evaluations.csv", spec_), budget)
        << label(index);
  }
  EXPECT_EQ(ranks_that_tuned, (std::set<int>{0, 1, 2, 3}));
  const nlohmann::json summary = nlohmann::json::parse(outcomes[0].results);
  ASSERT_EQ(summary.at("problems").size(), 8u);
  for (int index = 1; index <= 8; ++index) {
    const nlohmann::json& row = summary.at("problems").at(index - 1);
    EXPECT_EQ(row.at("problem"), label(index));
    EXPECT_EQ(row.at("evaluated"), budget) << label(index);
    EXPECT_EQ(row.at("rank"), entry(index).at("rank")) << label(index);
    EXPECT_EQ(row.at("devices"), entry(index).at("devices")) << label(index);
  }
  // Again: every problem is done, nothing is measured, and rank 0 still sums up all eight.
  const std::size_t measured = log_->entries.size();
  cluster_test::LocalNetwork again(ranks);
  const std::vector<RankOutcome> resumed = sweep(again, 8, 30);
  for (int rank = 0; rank < ranks; ++rank) EXPECT_EQ(resumed[rank].exit_code, 0) << "rank " << rank;
  EXPECT_EQ(log_->entries.size(), measured);
  EXPECT_EQ(nlohmann::json::parse(resumed[0].results).at("problems").size(), 8u);
}

TEST_F(SweepOverRanks, ALostRankKeepsItsFinishedRecordsAndEveryRankExitsOne) {
  // Rank 2 dies as it says its first problem finished: that record is whole, the state still says "started", and
  // the next sweep resumes it (from its records) and tunes nothing else.
  cluster_test::LocalNetwork network(ranks);
  network.die_after_results(2, 0, finished_tag);
  const std::vector<RankOutcome> outcomes = sweep(network, 6, 2);
  for (int rank = 0; rank < ranks; ++rank)
    EXPECT_EQ(outcomes[rank].exit_code, 1) << "rank " << rank << ": " << outcomes[rank].error;
  ASSERT_TRUE(network.dead(2));
  int lost = 0;
  int lost_index = 0;
  for (int index = 1; index <= 6; ++index) {
    if (entry(index).value("rank", -1) != 2) {
      EXPECT_EQ(entry(index).at("status"), "done") << label(index);
      continue;
    }
    ++lost;
    lost_index = index;
    EXPECT_EQ(entry(index).at("status"), "started") << label(index);
    EXPECT_EQ(session_test::rows_each_configuration_once(out_ / label(index) / "evaluations.csv", spec_), budget)
        << label(index) << ": the lost rank's finished record";
    const nlohmann::json summary = nlohmann::json::parse(outcomes[0].results);
    ASSERT_EQ(summary.at("problems").size(), 6u) << outcomes[0].results;
    const nlohmann::json& row = summary.at("problems").at(index - 1);
    EXPECT_EQ(row.at("exit"), 1) << label(index);
    EXPECT_EQ(row.at("lost"), true) << label(index);
  }
  ASSERT_EQ(lost, 1);
  const std::size_t measured = log_->entries.size();
  cluster_test::LocalNetwork again(ranks);
  const std::vector<RankOutcome> resumed = sweep(again, 6, 30);
  for (int rank = 0; rank < ranks; ++rank) EXPECT_EQ(resumed[rank].exit_code, 0) << "rank " << rank;
  for (int index = 1; index <= 6; ++index) EXPECT_EQ(entry(index).at("status"), "done") << label(index);
  // Only the lost problem was tuned again, resumed: its record keeps the first run's rows and adds the budget's.
  ASSERT_GT(log_->entries.size(), measured);
  for (std::size_t entry_index = measured; entry_index < log_->entries.size(); ++entry_index)
    EXPECT_EQ(log_->entries[entry_index].problem, 1000 * lost_index);
  EXPECT_EQ(session_test::rows_each_configuration_once(out_ / label(lost_index) / "evaluations.csv", spec_), 2 * budget);
}

}  // namespace
}  // namespace kernlathe
