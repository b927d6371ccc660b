#include "tuner/session/run_profile.h"

#include <gtest/gtest.h>

#include <string>

namespace kernlathe {
namespace {

RunProfile sample_profile() {
  RunProfile profile;
  profile.process_start_seconds = 0.02;
  profile.add_startup("load spec", 0.01);
  profile.add_startup("start GPU worker", 0.35);
  profile.add_startup("compile reference", 0.42);
  profile.first_result_seconds = 0.95;
  profile.evaluations = 3;
  profile.evaluate_seconds = 0.1;
  profile.worker = {1.0, 6.0, 44.0, 20.0, 3.0, 0.0};  // milliseconds
  profile.compile_wait_seconds = 0.5;
  profile.record_seconds = 0.001;
  profile.strategy_seconds = 0.002;
  profile.total_seconds = 1.8;
  return profile;
}

TEST(RunProfile, StartupSumsItsPhasesAndTheTextNamesEachInOrder) {
  const RunProfile profile = sample_profile();
  EXPECT_DOUBLE_EQ(profile.startup_seconds(), 0.78);
  const std::string text = format_profile(profile);
  // The process start counts towards start-up: 0.02 + 0.78.
  EXPECT_NE(text.find("profile  start-up 0.80 s: process start 0.02, load spec 0.01, start GPU worker 0.35, "
                      "compile reference 0.42\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("first result 0.95 s"), std::string::npos) << text;
  EXPECT_NE(text.find("3 evaluations: the worker 0.07 s (preparation 0.00, verification 0.01, warm-up 0.04, "
                      "sampling 0.02, clocks and power 0.00, energy 0.00); the loop waited 0.10 s for results and "
                      "0.50 s for compilation, and spent 0.00 s on records and 0.00 s on the strategy"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("total 1.80 s"), std::string::npos) << text;
}

TEST(RunProfile, JsonCarriesEveryFigureInSeconds) {
  const nlohmann::json document = profile_to_json(sample_profile());
  ASSERT_EQ(document.at("startup").size(), 3u);
  EXPECT_EQ(document.at("startup")[1].at("phase"), "start GPU worker");
  EXPECT_DOUBLE_EQ(document.at("startup")[1].at("seconds").get<double>(), 0.35);
  EXPECT_DOUBLE_EQ(document.at("startup_seconds").get<double>(), 0.78);
  EXPECT_DOUBLE_EQ(document.at("worker_seconds").at("warmup").get<double>(), 0.044);
  EXPECT_DOUBLE_EQ(document.at("compile_wait_seconds").get<double>(), 0.5);
  EXPECT_EQ(document.at("evaluations"), 3);
}

TEST(RunProfile, PhasesThatRanAlongsideAreShownInPlaceAndLeftOutOfTheSum) {
  RunProfile profile;
  profile.add_startup("load spec", 0.01);
  profile.add_startup("worker: fill buffers on the GPU", 0.02);
  profile.add_startup("compile reference", 0.30, /*alongside=*/true);
  profile.add_startup("worker: waited for the reference cubin", 0.25);
  profile.add_startup("strategy and compile pool", 0.05, /*alongside=*/true);
  profile.add_startup("first proposals submitted", 0.01, /*alongside=*/true);
  profile.first_request_seconds = 0.40;
  profile.first_result_seconds = 0.55;
  profile.evaluations = 1;
  profile.total_seconds = 1.0;
  // 0.01 + 0.02 + 0.25: the compile overlapped the worker's wait, the pool the whole preparation.
  EXPECT_DOUBLE_EQ(profile.startup_seconds(), 0.28);
  const std::string text = format_profile(profile);
  EXPECT_NE(text.find("profile  start-up 0.28 s: load spec 0.01, worker: fill buffers on the GPU 0.02 (alongside: "
                      "compile reference 0.30), worker: waited for the reference cubin 0.25 (alongside: strategy and "
                      "compile pool 0.05, first proposals submitted 0.01)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("first configuration sent to a GPU 0.40 s after the run started, first result 0.55 s"),
            std::string::npos)
      << text;
  const nlohmann::json document = profile_to_json(profile);
  EXPECT_TRUE(document.at("startup")[2].at("alongside").get<bool>());
  EXPECT_FALSE(document.at("startup")[1].contains("alongside"));
  EXPECT_DOUBLE_EQ(document.at("startup_seconds").get<double>(), 0.28);
  EXPECT_DOUBLE_EQ(document.at("first_request_seconds").get<double>(), 0.40);
}

TEST(RunProfile, TheLanesLineSaysWhatTheyWaitedForAndTheStrategyLineItsCost) {
  RunProfile profile = sample_profile();
  profile.lanes.lanes = 4;
  profile.lanes.lane_seconds = 40;
  profile.lanes.measuring_seconds = 33;
  profile.lanes.idle_seconds = {0.5, 4.25, 1.5, 0.25, 0.5};  // loop, strategy, compilation, records, results
  profile.strategy = {0.25, 2.0, 12, 400, {30, 1.75}};
  profile.strategy_in_background = true;
  const std::string text = format_profile(profile);
  EXPECT_NE(text.find("profile  lanes: 4 x the loop = 40.00 lane-seconds, measuring 33.00, idle 7.00 waiting for "
                      "the strategy 4.25, compilation 1.50, records 0.25, the loop 0.50, nothing left to hand out "
                      "0.50\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("profile  strategy (on its own thread): 2.25 s (tell 0.25, ask 2.00), 400 proposals in 12 asks; "
                      "30 model updates 1.75 s\n"),
            std::string::npos)
      << text;
  const nlohmann::json document = profile_to_json(profile);
  EXPECT_DOUBLE_EQ(document.at("lanes").at("idle_seconds_by_loop_activity").at("strategy").get<double>(), 4.25);
  EXPECT_DOUBLE_EQ(document.at("lanes").at("idle_seconds").get<double>(), 7.0);
  EXPECT_EQ(document.at("strategy").at("model_updates").get<int>(), 30);
  EXPECT_TRUE(document.at("strategy").at("in_background").get<bool>());
  const std::map<std::string, std::string> extra = profile_metadata(profile);
  EXPECT_EQ(extra.at("lanes_waited_for_strategy_seconds"), "4.250");
  EXPECT_EQ(extra.at("lanes_waited_for_compilation_seconds"), "1.500");
  EXPECT_EQ(extra.at("lanes_waited_otherwise_seconds"), "1.250");
  EXPECT_EQ(extra.at("strategy_seconds"), "2.250");
}

TEST(RunProfile, NoEvaluationSaysSoInsteadOfDividingNothing) {
  RunProfile profile;
  profile.add_startup("load spec", 0.25);
  profile.total_seconds = 0.5;
  const std::string text = format_profile(profile);
  EXPECT_NE(text.find("profile  start-up 0.25 s: load spec 0.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("no evaluation; total 0.50 s"), std::string::npos) << text;
}

TEST(RunProfile, ProcessStartIsReadFromTheSystem) {
  // This test process started before the test ran, and not an hour before (a test binary runs for seconds).
  const double seconds = seconds_since_process_start();
  EXPECT_GE(seconds, 0.0);
  EXPECT_LT(seconds, 3600.0);
}

TEST(RunProfile, OnlyTheProcesssFirstRunCountsTheProcesssStart) {
  // A sweep runs its problems in one process, one after another: the second problem's start-up is not the seconds
  // the first one ran. Whichever run of this test binary asked first, every later one gets -1.
  process_start_for_a_run();
  EXPECT_EQ(process_start_for_a_run(), -1.0);
  EXPECT_EQ(process_start_for_a_run(), -1.0);
  RunProfile later;
  later.process_start_seconds = process_start_for_a_run();
  later.add_startup("load spec", 0.25);
  EXPECT_EQ(format_profile(later).find("process start"), std::string::npos) << format_profile(later);
}

TEST(LapClock, LapsAreNonNegativeAndDoNotOverlap) {
  LapClock clock;
  const double first = clock.lap();
  const double second = clock.lap();
  EXPECT_GE(first, 0.0);
  EXPECT_GE(second, 0.0);
  EXPECT_LT(first + second, 1.0);
}

}  // namespace
}  // namespace kernlathe
