// The run loop without a GPU: a session replays recorded measurements, records every evaluation, resumes, ranks
// results and survives being killed with SIGKILL.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "tuner/record/csv_record.h"
#include "tuner/common/hash.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"
#include "session_test_support.h"
#include "tuner/search/prior.h"
#include "tuner/search/strategy.h"
#include "tuner/record/run_metadata.h"

#include <fmt/format.h>

extern char** environ;

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace session_test;

TEST(TuningSession, ReplayFindsTheRecordedOptimumAndRecordsEveryEvaluation) {
  const fs::path dir = fresh_directory("replay");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  TuneReport report = tune(replay_options(spec, recording, dir / "out"));

  EXPECT_TRUE(report.replay);
  EXPECT_EQ(report.valid_configurations, 90u);
  EXPECT_EQ(report.evaluated, 90u);
  EXPECT_EQ(report.status_counts["ok"], 72u);
  EXPECT_EQ(report.status_counts["wrong_result"], 18u);
  ASSERT_FALSE(report.best.empty());
  const Configuration best = report.best.front().evaluation.configuration;
  EXPECT_EQ(best, (Configuration{std::int64_t{3}, std::int64_t{2}, std::int64_t{1}}));
  EXPECT_DOUBLE_EQ(report.best.front().evaluation.time.median_ms, 1.0);
  // Default (1, 1, 0): 1 + 0.1 * (4 + 1 + 1) = 1.6 ms.
  ASSERT_TRUE(report.default_evaluation.has_value());
  EXPECT_NEAR(report.best.front().speedup_over_default, 1.6, 1e-9);
  // 8e6 bytes in 1 ms = 8 GB/s.
  EXPECT_NEAR(report.best.front().gbps, 8.0, 1e-9);
  EXPECT_EQ(report.stop_reason, "space exhausted");

  KernelSpec loaded = load_kernel_spec(spec);
  std::vector<RecordedEvaluation> rows = read_records(report.records, loaded.space);
  EXPECT_EQ(rows.size(), 90u);
}

// --prior: a record of the same kernel measured elsewhere (here the landscape itself, twice as slow) is tried first:
// after the default configuration, the second evaluation is the prior's best, the optimum (3, 2, 1). Exhaustive
// search without the prior meets it at the 52nd.
TEST(TuningSession, APriorFileIsTriedRightAfterTheDefault) {
  const fs::path dir = fresh_directory("prior");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  fs::create_directories(dir / "elsewhere");
  const fs::path elsewhere = write_recording(spec, dir / "elsewhere", [](Evaluation& evaluation) {
    evaluation.time.median_ms *= 2;
  });
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.stop.max_evaluations = 2;
  options.prior_files = {elsewhere};
  TuneReport report = tune(options);
  ASSERT_FALSE(report.best.empty());
  EXPECT_EQ(report.best.front().evaluation.configuration, configuration_of(3, 2, 1));
  EXPECT_EQ(report.prior_sources.size(), 1u);
  EXPECT_EQ(report.prior_transfers, PriorSettings{}.transfers);

  options.prior_files.clear();
  options.out_dir = dir / "out_without";
  TuneReport without = tune(options);
  ASSERT_FALSE(without.best.empty());
  EXPECT_NE(without.best.front().evaluation.configuration, configuration_of(3, 2, 1));
  EXPECT_TRUE(without.prior_sources.empty());

  options.prior_files = {dir / "absent.csv"};
  EXPECT_THROW(tune(options), InputError);
}

// --devices with a replay: three replayed devices share the space. Nothing is lost, nothing measured twice, every
// row names its device, and the answer is the one device's.
TEST(TuningSession, SeveralDevicesMeasureEachConfigurationOnceAndRecordTheirDevice) {
  const fs::path dir = fresh_directory("devices");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.devices = {0, 1, 2};
  TuneReport report = tune(options);
  EXPECT_EQ(report.evaluated, 90u);
  EXPECT_EQ(report.devices, (std::vector<std::string>{"0", "1", "2"}));
  std::uint64_t counted = 0;
  for (const auto& [device, count] : report.evaluations_per_device) {
    EXPECT_TRUE(device == "0" || device == "1" || device == "2") << device;
    counted += count;
  }
  EXPECT_EQ(counted, 90u);
  ASSERT_FALSE(report.best.empty());
  EXPECT_EQ(report.best.front().evaluation.configuration,
            (Configuration{std::int64_t{3}, std::int64_t{2}, std::int64_t{1}}));

  KernelSpec loaded = load_kernel_spec(spec);
  std::set<std::string> keys;
  for (const RecordedEvaluation& row : read_records(report.records, loaded.space)) {
    EXPECT_TRUE(keys.insert(configuration_key(row.evaluation.configuration)).second) << "measured twice";
    EXPECT_FALSE(row.evaluation.device.empty());
  }
  EXPECT_EQ(keys.size(), 90u);
}

TEST(TuningSession, SeveralDevicesStopAtTheBudgetExactly) {
  const fs::path dir = fresh_directory("devices_budget");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.devices = {0, 1, 2, 3};
  options.strategy = "random";
  options.stop.max_evaluations = 25;
  TuneReport report = tune(options);
  EXPECT_EQ(report.evaluated, 25u);
  KernelSpec loaded = load_kernel_spec(spec);
  EXPECT_EQ(read_records(report.records, loaded.space).size(), 25u);
}

// Three devices of different speeds (replays that take 1, 3 and 6 ms a measurement) under the default strategy, which
// runs on a thread of its own: the lanes wait for no proposal beyond noise, the fastest measures most, and the
// profile's lane-seconds are what the lanes measured plus what they waited for, in the report and in run.json.
TEST(TuningSession, LanesOfDifferentSpeedsDoNotWaitForTheStrategy) {
  const fs::path dir = fresh_directory("devices_speeds");
  const fs::path spec = write_spec(dir, 8, 5, 4);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.strategy = default_strategy_name();
  options.devices = {0};
  options.replay_pace_ms = 1;
  options.remote_devices = [&](const KernelSpec& loaded) {
    RemoteDevices remote;
    for (double pace : {3.0, 6.0}) {
      remote.measurers.push_back(make_replay_measurer(loaded, recording, device_profile("sm_90"), pace));
      remote.labels.push_back(fmt::format("paced {}", pace));
    }
    return remote;
  };
  const TuneReport report = tune(options);
  EXPECT_EQ(report.evaluated, 160u);
  EXPECT_EQ(rows_each_configuration_once(report.records, spec), 160u);
  const RunProfile& profile = report.profile;
  EXPECT_TRUE(profile.strategy_in_background);
  EXPECT_EQ(profile.lanes.lanes, 3u);
  EXPECT_NEAR(profile.lanes.measuring_seconds + profile.lanes.idle_total(), profile.lanes.lane_seconds, 1e-9);
  // 160 measurements take 0.16-0.96 s each lane; the strategy costs well under a millisecond a result here.
  EXPECT_LT(profile.lanes.idle(LoopActivity::strategy), 0.1 * profile.lanes.lane_seconds)
      << format_lanes_and_strategy(profile);
  EXPECT_GT(profile.lanes.measuring_seconds, 0.6 * profile.lanes.lane_seconds) << format_lanes_and_strategy(profile);
  EXPECT_GT(report.evaluations_per_device.at("0"), report.evaluations_per_device.at("paced 6"));
  EXPECT_GE(profile.strategy.proposals, 159u);  // all but the default, which the session queues itself
  const std::vector<RunMetadata> runs = read_run_metadata(report.records);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs.front().extra.at("lanes"), "3");
  EXPECT_TRUE(runs.front().extra.contains("lanes_waited_for_strategy_seconds"));
  EXPECT_TRUE(runs.front().extra.contains("strategy_model_update_seconds"));
}

// One lane: the strategy runs inline, so a seed gives one run, and its profile says so.
TEST(TuningSession, OneDeviceRunsTheStrategyInlineAndRepeatsItsSearch) {
  const fs::path dir = fresh_directory("one_lane_repeat");
  const fs::path spec = write_spec(dir, 8, 5, 4);
  const fs::path recording = write_recording(spec, dir);
  std::vector<std::vector<Configuration>> orders;
  for (int run = 0; run < 2; ++run) {
    TuneOptions options = replay_options(spec, recording, dir / ("out" + std::to_string(run)));
    options.strategy = default_strategy_name();
    options.replay_pace_ms = 0.2;  // one measurement at a time, as on a GPU
    options.stop.max_evaluations = 40;
    const TuneReport report = tune(options);
    EXPECT_FALSE(report.profile.strategy_in_background);
    EXPECT_EQ(report.profile.lanes.lanes, 1u);
    std::vector<Configuration> order;
    for (const RecordedEvaluation& row : read_records(report.records, load_kernel_spec(spec).space))
      order.push_back(row.evaluation.configuration);
    orders.push_back(std::move(order));
  }
  EXPECT_EQ(orders[0].size(), 40u);
  EXPECT_EQ(orders[0], orders[1]);
}

TEST(TuningSession, AGpuNamedTwiceInDevicesIsBadInput) {
  const fs::path dir = fresh_directory("devices_twice");
  const fs::path spec = write_spec(dir, 2, 2, 2);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.devices = {0, 1, 0};
  EXPECT_THROW(tune(options), InputError);
}

// A configuration whose worker died is measured again on another device: a killed worker or a failing GPU is not
// the configuration's fault. The record holds one row for it, saying what happened; here the replay crashes both
// times, so the row stays `crashed`.
TEST(TuningSession, ACrashedConfigurationIsMeasuredAgainOnAnotherDeviceAndRecordedOnce) {
  const fs::path dir = fresh_directory("devices_crash");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const Configuration crashing = configuration_of(0, 0, 0);
  const fs::path recording = write_recording(spec, dir, [&](Evaluation& evaluation) {
    if (evaluation.configuration != crashing) return;
    evaluation.status = Status::crashed;
    evaluation.message = "the worker died: killed by signal 9";
  });
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.devices = {0, 1};
  TuneReport report = tune(options);
  EXPECT_EQ(report.evaluated, 90u);
  EXPECT_EQ(report.status_counts["crashed"], 1u);
  KernelSpec loaded = load_kernel_spec(spec);
  int rows_of_crashing = 0;
  for (const RecordedEvaluation& row : read_records(report.records, loaded.space)) {
    if (row.evaluation.configuration != crashing) continue;
    ++rows_of_crashing;
    EXPECT_NE(row.evaluation.message.find("measured again: the worker on device "), std::string::npos)
        << row.evaluation.message;
  }
  EXPECT_EQ(rows_of_crashing, 1);
}

TEST(TuningSession, BudgetThenResumeMeasuresEachConfigurationOnce) {
  const fs::path dir = fresh_directory("resume");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions first = replay_options(spec, recording, dir / "out");
  first.strategy = "random";
  first.stop.max_evaluations = 25;
  TuneReport partial = tune(first);
  EXPECT_EQ(partial.evaluated, 25u);

  TuneOptions second = first;
  second.stop.max_evaluations.reset();
  second.resume = true;
  TuneReport rest = tune(second);
  EXPECT_EQ(rest.skipped_by_resume, 25u);
  EXPECT_EQ(rest.evaluated, 65u);

  KernelSpec loaded = load_kernel_spec(spec);
  std::set<std::string> keys;
  for (const RecordedEvaluation& row : read_records(rest.records, loaded.space))
    EXPECT_TRUE(keys.insert(configuration_key(row.evaluation.configuration)).second) << "measured twice";
  EXPECT_EQ(keys.size(), 90u);
}

// Issue item 4: a resumed run ranked only what it measured itself. The first run measures the optimum (3, 2, 1)
// at 1.0 ms; the resumed one measures 10 slower configurations and must still report the recorded optimum.
TEST(TuningSession, ResumeRanksEveryRecordedEvaluationOfTheSameSpecHash) {
  const fs::path dir = fresh_directory("resume_rank");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions first = replay_options(spec, recording, dir / "out");
  first.stop.max_evaluations = 60;  // the default (index 18), then indices 0-59 in order: 52 is (3, 2, 1)
  TuneReport partial = tune(first);
  ASSERT_EQ(partial.evaluated, 60u);
  ASSERT_FALSE(partial.best.empty());
  EXPECT_EQ(partial.best.front().evaluation.configuration, configuration_of(3, 2, 1));

  TuneOptions second = first;
  second.resume = true;
  second.stop.max_evaluations = 10;  // indices 60-69: A = 4, at best 1.1 ms
  TuneReport resumed = tune(second);
  EXPECT_EQ(resumed.evaluated, 10u);
  EXPECT_EQ(resumed.skipped_by_resume, 60u);
  EXPECT_EQ(resumed.other_hash_rows, 0u);
  ASSERT_FALSE(resumed.best.empty());
  EXPECT_EQ(resumed.best.front().evaluation.configuration, configuration_of(3, 2, 1));
  EXPECT_DOUBLE_EQ(resumed.best.front().evaluation.time.median_ms, 1.0);
  // The recorded default (1, 1, 0) at 1.6 ms still anchors the speed-up.
  ASSERT_TRUE(resumed.default_evaluation.has_value());
  EXPECT_DOUBLE_EQ(resumed.default_evaluation->time.median_ms, 1.6);
  EXPECT_NEAR(resumed.best.front().speedup_over_default, 1.6, 1e-9);
  // Ranked over the 58 verified of the 70 recorded (B == 4 fails): 5 best, the second is 1.1 ms.
  ASSERT_EQ(resumed.best.size(), 5u);
  EXPECT_DOUBLE_EQ(resumed.best[1].evaluation.time.median_ms, 1.1);
  EXPECT_EQ(resumed.status_counts["ok"], 10u);  // this run's own: indices 60-69, B from 0 to 3
}

TEST(TuningSession, ResumeWithNothingLeftReportsTheRecordedBest) {
  const fs::path dir = fresh_directory("resume_nothing_left");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.strategy = "surrogate";
  TuneReport complete = tune(options);
  ASSERT_EQ(complete.evaluated, 90u);

  options.resume = true;
  TuneReport resumed = tune(options);
  EXPECT_EQ(resumed.evaluated, 0u);
  EXPECT_EQ(resumed.skipped_by_resume, 90u);
  EXPECT_EQ(resumed.stop_reason, "space exhausted");
  ASSERT_FALSE(resumed.best.empty());
  EXPECT_EQ(resumed.best.front().evaluation.configuration, configuration_of(3, 2, 1));
  EXPECT_DOUBLE_EQ(resumed.best.front().evaluation.time.median_ms, 1.0);
  EXPECT_DOUBLE_EQ(resumed.median_time_ms, complete.median_time_ms);
  KernelSpec loaded = load_kernel_spec(spec);
  EXPECT_EQ(read_records(resumed.records, loaded.space).size(), 90u);
}

// Rows of another spec hash measured another version of the kernel: neither skipped nor ranked, but counted.
TEST(TuningSession, ResumeIgnoresRowsOfAnotherSpecHashAndCountsThem) {
  const fs::path dir = fresh_directory("resume_other_hash");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.stop.max_evaluations = 30;
  TuneReport partial = tune(options);
  ASSERT_EQ(partial.evaluated, 30u);
  {
    KernelSpec loaded = load_kernel_spec(spec);
    RecordWriter writer(partial.records, loaded.space, RunMetadata{});
    for (const Configuration& configuration : {configuration_of(3, 2, 1), configuration_of(0, 0, 0)}) {
      Evaluation old_version;
      old_version.configuration = configuration;
      old_version.time.median_ms = 0.5;  // faster than anything of this version
      writer.append(old_version, "0123456789abcdef");
    }
  }
  options.resume = true;
  options.stop.max_evaluations.reset();
  TuneReport resumed = tune(options);
  EXPECT_EQ(resumed.other_hash_rows, 2u);
  EXPECT_EQ(resumed.skipped_by_resume, 30u);
  EXPECT_EQ(resumed.evaluated, 60u);  // (3, 2, 1) measured again under this hash; (0, 0, 0) was in the first 30
  ASSERT_FALSE(resumed.best.empty());
  EXPECT_EQ(resumed.best.front().evaluation.configuration, configuration_of(3, 2, 1));
  EXPECT_DOUBLE_EQ(resumed.best.front().evaluation.time.median_ms, 1.0);
}

TEST(TuningSession, UnknownStrategyIsBadInput) {
  const fs::path dir = fresh_directory("strategy");
  const fs::path spec = write_spec(dir, 2, 2, 2);
  const fs::path recording = write_recording(spec, dir);
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.strategy = "randon";
  try {
    tune(options);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("random"), std::string::npos) << error.what();
  }
}

std::size_t count_lines(const fs::path& file) {
  std::ifstream stream(file);
  return static_cast<std::size_t>(std::count(std::istreambuf_iterator<char>(stream), {}, '\n'));
}

// A run killed with SIGKILL mid-way and started again with --resume loses at most the evaluation in flight and
// measures nothing twice.
TEST(TuningSession, SigkillThenResumeLosesNothingRecordedAndRepeatsNothing) {
  const fs::path dir = fresh_directory("sigkill");
  const fs::path spec = write_spec(dir, 60, 50, 20);  // 60,000 configurations: long enough to be killed mid-way
  const fs::path recording = write_recording(spec, dir);
  const fs::path out = dir / "out";
  const fs::path csv = out / "evaluations.csv";

  const std::string binary = TUNE_BINARY;
  std::vector<std::string> arguments{binary, "run", spec.string(), "--replay", recording.string(), "--arch", "sm_90",
                                     "--strategy", "random", "--out", out.string()};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t child = 0;
  ASSERT_EQ(posix_spawn(&child, binary.c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  // Kill once a few thousand rows are on disk.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up && (!fs::exists(csv) || count_lines(csv) < 3000))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed; make the space larger";

  KernelSpec loaded = load_kernel_spec(spec);
  const std::size_t recorded_before = read_records(csv, loaded.space).size();
  EXPECT_GE(recorded_before, 2999u);
  EXPECT_LT(recorded_before, 60000u);

  TuneOptions resume = replay_options(spec, recording, out);
  resume.strategy = "random";
  resume.resume = true;
  TuneReport report = tune(resume);
  EXPECT_EQ(report.skipped_by_resume, recorded_before);
  EXPECT_EQ(report.evaluated, 60000u - recorded_before);

  std::set<std::string> keys;
  std::size_t rows = 0;
  for (const RecordedEvaluation& row : read_records(csv, loaded.space)) {
    ++rows;
    EXPECT_TRUE(keys.insert(configuration_key(row.evaluation.configuration)).second) << "measured twice";
  }
  EXPECT_EQ(rows, 60000u);
  EXPECT_EQ(keys.size(), 60000u);
}

}  // namespace
}  // namespace kernlathe
