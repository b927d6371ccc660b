// The portability matrix and portable default of small hand-written recordings against figures worked out by
// hand, and which recordings form a group.
#include "tuner/analysis/portability.h"

#include <gtest/gtest.h>

#include "analysis_test_support.h"

namespace kernlathe {
namespace {

using testing::failed;
using testing::integer_parameter;
using testing::measured;
using State = PortabilityCell::State;

Configuration at(std::int64_t p, std::int64_t q) { return {Value{p}, Value{q}}; }

Recording recording_on(const std::string& device, std::vector<Evaluation> evaluations,
                       const std::string& family = "toy N=64") {
  Recording recording;
  recording.source = device + ".csv";
  recording.kernel = "toy";
  recording.problem = "N=64";
  recording.device = device;
  recording.family = family;
  recording.parameters = {integer_parameter("P", {1, 2}), integer_parameter("Q", {1, 2, 3})};
  recording.evaluations = std::move(evaluations);
  return recording;
}

// Alpha: (1,1) 1.0  (1,2) 2.0  (2,1) 4.0  (2,2) 1.25  (1,3) 5.0              best (1,1)
// Beta:  (1,1) 2.5  (2,1) 1.0  (2,2) 1.6   (2,3) 0.8   (1,2) launch error    best (2,3)
std::vector<Recording> alpha_and_beta() {
  return {recording_on("Alpha", {measured(at(1, 1), 1.0), measured(at(1, 2), 2.0), measured(at(2, 1), 4.0),
                                 measured(at(2, 2), 1.25), measured(at(1, 3), 5.0)}),
          recording_on("Beta", {measured(at(1, 1), 2.5), measured(at(2, 1), 1.0), measured(at(2, 2), 1.6),
                                measured(at(2, 3), 0.8), failed(at(1, 2), Status::launch_error)})};
}

void expect_measured(const PortabilityCell& cell, double time_ms, double fraction, std::size_t rank) {
  EXPECT_EQ(cell.state, State::measured);
  EXPECT_DOUBLE_EQ(cell.time_ms, time_ms);
  EXPECT_DOUBLE_EQ(cell.fraction_of_optimum, fraction);
  EXPECT_EQ(cell.rank, rank);
}

TEST(Portability, MatrixOfTwoRecordingsEqualsTheHandComputedOne) {
  const std::vector<PortabilityGroup> groups = analyse_portability(alpha_and_beta());
  ASSERT_EQ(groups.size(), 1u);
  const PortabilityGroup& group = groups.front();
  EXPECT_EQ(group.kernel, "toy");
  EXPECT_EQ(group.devices, (std::vector<std::string>{"Alpha", "Beta"}));
  EXPECT_EQ(group.recordings, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(group.best, (std::vector<Configuration>{at(1, 1), at(2, 3)}));
  EXPECT_EQ(group.optimum_ms, (std::vector<double>{1.0, 0.8}));
  EXPECT_EQ(group.valid, (std::vector<std::size_t>{5, 4}));
  ASSERT_EQ(group.matrix.size(), 2u);
  ASSERT_EQ(group.matrix[0].size(), 2u);
  // Alpha's best (1,1): 1.0 on Alpha; 2.5 on Beta, whose optimum is 0.8: 0.32, slowest of Beta's four (rank 4).
  expect_measured(group.matrix[0][0], 1.0, 1.0, 1);
  expect_measured(group.matrix[0][1], 2.5, 0.32, 4);
  // Beta's best (2,3) was never run on Alpha.
  EXPECT_EQ(group.matrix[1][0].state, State::not_measured);
  expect_measured(group.matrix[1][1], 0.8, 1.0, 1);
  // Valid on both: (1,1) worst 0.32, (2,1) worst min(0.25, 0.8), (2,2) worst min(1/1.25, 0.8/1.6) = 0.5.
  EXPECT_EQ(group.valid_everywhere, 3u);
  ASSERT_TRUE(group.portable_default.has_value());
  EXPECT_EQ(group.portable_default->configuration, at(2, 2));
  EXPECT_DOUBLE_EQ(group.portable_default->worst_fraction, 0.5);
  ASSERT_EQ(group.portable_default->on.size(), 2u);
  expect_measured(group.portable_default->on[0], 1.25, 0.8, 2);
  expect_measured(group.portable_default->on[1], 1.6, 0.5, 3);
}

TEST(Portability, ABestThatFailedElsewhereSaysWithWhat) {
  std::vector<Recording> recordings = alpha_and_beta();
  recordings[1].evaluations.push_back(failed(at(1, 1), Status::wrong_result));
  recordings[1].evaluations.erase(recordings[1].evaluations.begin());  // (1,1) now only failed on Beta
  const PortabilityGroup group = analyse_portability(recordings).front();
  EXPECT_EQ(group.matrix[0][1].state, State::failed);
  EXPECT_EQ(group.matrix[0][1].status, Status::wrong_result);
  EXPECT_EQ(group.valid_everywhere, 2u);
  EXPECT_EQ(group.portable_default->configuration, at(2, 2));
}

TEST(Portability, GroupsNeedTwoGpusOfOneFamily) {
  std::vector<Recording> recordings = alpha_and_beta();
  recordings.push_back(recording_on("Alpha", {measured(at(1, 1), 0.5)}));            // a second Alpha recording
  recordings.push_back(recording_on("Gamma", {measured(at(1, 1), 0.5)}, "other"));  // alone in its family
  const std::vector<PortabilityGroup> groups = analyse_portability(recordings);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].devices, (std::vector<std::string>{"Alpha", "Beta"}));
  ASSERT_EQ(groups[0].notes.size(), 1u);
  EXPECT_NE(groups[0].notes[0].find("Alpha.csv left out"), std::string::npos) << groups[0].notes[0];
  // No configuration valid on both: no portable default.
  std::vector<Recording> apart = {recording_on("Alpha", {measured(at(1, 1), 1.0)}),
                                  recording_on("Beta", {measured(at(2, 2), 1.0)})};
  const PortabilityGroup disjoint = analyse_portability(apart).front();
  EXPECT_EQ(disjoint.valid_everywhere, 0u);
  EXPECT_FALSE(disjoint.portable_default.has_value());
  EXPECT_EQ(disjoint.matrix[0][1].state, State::not_measured);
}

}  // namespace
}  // namespace kernlathe
