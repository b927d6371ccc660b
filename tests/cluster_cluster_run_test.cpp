// A run over several processes without MPI or a GPU: rank 0 and three evaluator ranks as threads over an
// in-process network, measuring a replayed recording. Nothing is lost, nothing measured twice, every rank ends with
// rank 0's choice, and a rank that dies mid-run has its configuration measured by another.
#include "tuner/cluster/cluster_run.h"

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <set>

#include "cluster_test_support.h"
#include "session_test_support.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace session_test;
using cluster_test::LocalNetwork;

constexpr int result_tag = 5;  // cluster_run.cpp's tag for an evaluation sent to rank 0

ClusterOptions fast_cluster() {
  ClusterOptions options;
  options.heartbeat_seconds = 0.05;
  options.silence_seconds = 1.0;
  options.preparation_seconds = 30;
  return options;
}

struct ClusterRun {
  std::vector<TuneReport> reports;
  std::vector<std::optional<EvaluatorOutcome>> outcomes;  // by rank, its first GPU's; rank 0 has none
  std::vector<std::vector<EvaluatorOutcome>> all_outcomes;  // by rank, one per GPU
  std::vector<std::string> failures;                      // by rank: what serve_as_evaluator threw
};

// devices_of(rank): the GPUs an evaluator rank measures on (its --devices).
ClusterRun run_cluster(LocalNetwork& network, int size, const TuneOptions& options,
                       std::function<std::vector<int>(int)> devices_of = [](int) { return std::vector<int>{0}; }) {
  ClusterRun run;
  run.outcomes.resize(static_cast<std::size_t>(size));
  run.all_outcomes.resize(static_cast<std::size_t>(size));
  run.failures.resize(static_cast<std::size_t>(size));
  std::vector<std::unique_ptr<Communicator>> communicators;
  for (int rank = 0; rank < size; ++rank) communicators.push_back(network.communicator(rank));
  std::vector<std::future<void>> evaluators;
  for (int rank = 1; rank < size; ++rank) {
    evaluators.push_back(std::async(std::launch::async, [&, rank] {
      try {
        std::vector<EvaluatorOutcome> outcomes =
            serve_as_evaluator(*communicators[static_cast<std::size_t>(rank)], options, devices_of(rank), fast_cluster());
        run.outcomes[static_cast<std::size_t>(rank)] = outcomes.front();
        run.all_outcomes[static_cast<std::size_t>(rank)] = std::move(outcomes);
      } catch (const std::exception& error) {
        run.failures[static_cast<std::size_t>(rank)] = error.what();
      }
    }));
  }
  {
    ClusterCoordinator coordinator(*communicators[0], fast_cluster());
    TuneOptions rank_zero = options;
    rank_zero.device_label_prefix = "rank 0, replayed gpu ";
    rank_zero.remote_devices = [&](const KernelSpec&) { return coordinator.remote_devices(false); };
    run.reports = tune_each_model(rank_zero);
    coordinator.finish(run.reports);
  }
  for (auto& evaluator : evaluators) evaluator.get();
  return run;
}

TEST(ClusterRun, FourRanksMeasureEachConfigurationOnceAndEndWithRankZerosChoice) {
  const fs::path dir = fresh_directory("cluster");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  LocalNetwork network(4);
  const ClusterRun run = run_cluster(network, 4, replay_options(spec, recording, dir / "out"));

  ASSERT_EQ(run.reports.size(), 1u);
  const TuneReport& report = run.reports.front();
  EXPECT_EQ(report.evaluated, 90u);
  ASSERT_EQ(report.devices.size(), 4u);
  EXPECT_EQ(report.devices[1], "rank 1, replayed gpu 0");
  ASSERT_FALSE(report.best.empty());
  const Configuration chosen = report.best.front().evaluation.configuration;
  EXPECT_EQ(chosen, configuration_of(3, 2, 1));
  for (int rank = 1; rank < 4; ++rank) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(run.failures[static_cast<std::size_t>(rank)], "");
    const std::optional<EvaluatorOutcome>& outcome = run.outcomes[static_cast<std::size_t>(rank)];
    ASSERT_TRUE(outcome.has_value());
    ASSERT_TRUE(outcome->chosen.has_value());
    EXPECT_EQ(outcome->chosen->at("A").get<std::int64_t>(), 3);
    EXPECT_EQ(outcome->chosen->at("B").get<std::int64_t>(), 2);
    EXPECT_EQ(outcome->chosen->at("C").get<std::int64_t>(), 1);
    // What the rank says it measured is what rank 0 recorded from it.
    const auto recorded = report.evaluations_per_device.find(outcome->label);
    const std::uint64_t from_rank = recorded == report.evaluations_per_device.end() ? 0 : recorded->second;
    EXPECT_EQ(outcome->measured, from_rank);
    EXPECT_GE(outcome->measured, 1u);  // every lane gets a configuration at the start
  }
  EXPECT_EQ(rows_each_configuration_once(report.records, spec), 90u);
}

// Several GPUs per rank (--devices inside a rank, as two hosts of two GPUs each would run): every GPU of every rank
// is a lane of its own, measures, and ends with rank 0's choice; nothing is measured twice.
TEST(ClusterRun, RanksOfSeveralGpusMeasureOnEachAndEveryGpuEndsWithTheChoice) {
  const fs::path dir = fresh_directory("cluster_slots");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  LocalNetwork network(3);
  TuneOptions options = replay_options(spec, recording, dir / "out");
  options.devices = {0, 1};  // rank 0's own two
  const ClusterRun run = run_cluster(network, 3, options, [](int rank) {
    return rank == 1 ? std::vector<int>{0, 1} : std::vector<int>{0, 1, 2};
  });

  ASSERT_EQ(run.reports.size(), 1u);
  const TuneReport& report = run.reports.front();
  EXPECT_EQ(report.evaluated, 90u);
  EXPECT_EQ(report.devices, (std::vector<std::string>{"rank 0, replayed gpu 0", "rank 0, replayed gpu 1",
                                                      "rank 1, replayed gpu 0", "rank 1, replayed gpu 1",
                                                      "rank 2, replayed gpu 0", "rank 2, replayed gpu 1",
                                                      "rank 2, replayed gpu 2"}));
  ASSERT_FALSE(report.best.empty());
  EXPECT_EQ(report.best.front().evaluation.configuration, configuration_of(3, 2, 1));
  for (int rank : {1, 2}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(run.failures[static_cast<std::size_t>(rank)], "");
    const std::vector<EvaluatorOutcome>& outcomes = run.all_outcomes[static_cast<std::size_t>(rank)];
    ASSERT_EQ(outcomes.size(), rank == 1 ? 2u : 3u);
    for (const EvaluatorOutcome& outcome : outcomes) {
      SCOPED_TRACE(outcome.label);
      ASSERT_TRUE(outcome.chosen.has_value()) << outcome.failure;
      EXPECT_EQ(outcome.chosen->at("A").get<std::int64_t>(), 3);
      const auto recorded = report.evaluations_per_device.find(outcome.label);
      ASSERT_NE(recorded, report.evaluations_per_device.end());
      EXPECT_EQ(outcome.measured, recorded->second);
      EXPECT_GE(outcome.measured, 1u);
    }
  }
  EXPECT_EQ(rows_each_configuration_once(report.records, spec), 90u);
}

TEST(ClusterRun, ARankThatDiesIsReportedAndItsConfigurationMeasuredByAnother) {
  const fs::path dir = fresh_directory("cluster_death");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const fs::path recording = write_recording(spec, dir);
  LocalNetwork network(4);
  // Every lane gets a configuration at the start, so rank 2 has one when it dies, before its first result.
  network.die_after_results(2, 0, result_tag);
  const ClusterRun run = run_cluster(network, 4, replay_options(spec, recording, dir / "out"));

  ASSERT_EQ(run.reports.size(), 1u);
  const TuneReport& report = run.reports.front();
  EXPECT_TRUE(network.dead(2));
  ASSERT_EQ(report.lost_devices.size(), 1u);
  EXPECT_NE(report.lost_devices[0].find("rank 2, replayed gpu 0: rank 2 stopped answering"), std::string::npos)
      << report.lost_devices[0];
  EXPECT_EQ(report.evaluated, 90u);
  EXPECT_EQ(report.evaluations_per_device.count("rank 2, replayed gpu 0"), 0u);
  EXPECT_EQ(rows_each_configuration_once(report.records, spec), 90u);
  // The dead rank stops hearing rank 0 and ends with an error; the others end with the choice.
  EXPECT_NE(run.failures[2].find("rank 0 stopped answering"), std::string::npos) << run.failures[2];
  for (int rank : {1, 3}) {
    ASSERT_TRUE(run.outcomes[static_cast<std::size_t>(rank)].has_value()) << run.failures[static_cast<std::size_t>(rank)];
    EXPECT_TRUE(run.outcomes[static_cast<std::size_t>(rank)]->chosen.has_value());
  }
}

TEST(ClusterRun, LaunchedByMpirunReadsTheLaunchersVariables) {
  ::unsetenv("PMIX_SIZE");
  ::unsetenv("PMI_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_FALSE(launched_by_mpirun().has_value());
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  std::optional<LaunchedRank> launched = launched_by_mpirun();
  ASSERT_TRUE(launched.has_value());
  EXPECT_EQ(launched->size, 4);
  EXPECT_EQ(launched->rank, 2);
  EXPECT_EQ(launched->local_rank, 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "four", 1);  // not a number: not launched
  EXPECT_FALSE(launched_by_mpirun().has_value());
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}) ::unsetenv(name);
}

}  // namespace
}  // namespace kernlathe
