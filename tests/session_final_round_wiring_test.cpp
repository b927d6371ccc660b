// The final round's wiring into a whole run, without a GPU (issue 31). A stand-in GPU (TuneOptions::open_device)
// replays each configuration's first measurement, the search's single one, from a recording, and draws every later
// one, the final round's, from the configuration's planted distribution. The run must rank by the final round,
// keep the stored configuration when the new winner is within the noise of it, replace it when the winner is faster
// beyond the noise, and time the baseline in every round without letting it contend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "session_test_support.h"
#include "tuner/cache/best_cache.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/common/hash.h"
#include "tuner/record/csv_record.h"
#include "tuner/search/replay.h"
#include "tuner/session/tuning_session.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;
using namespace session_test;

// What a configuration (or the baseline) really takes: each measurement after the first is drawn uniformly from
// true_ms * [1 - spread, 1 + spread].
struct Planted {
  double true_ms = 0;
  double spread = 0.005;
};

// What the stand-in GPU measured, in order: a configuration's key, "baseline" or "rest" (Measurer::rest), and
// whether it was a measurement again (the final round's) rather than the configuration's first (the search's).
struct MeasuredLog {
  struct Entry {
    std::string what;
    bool again = false;
  };
  std::mutex mutex;
  std::vector<Entry> entries;

  // The final round's measurements, in order: every measurement again, and the baseline's.
  std::vector<std::string> final_round() {
    std::lock_guard lock(mutex);
    std::vector<std::string> measured;
    for (const Entry& entry : entries)
      if (entry.again && entry.what != "rest") measured.push_back(entry.what);
    return measured;
  }

  // Whether every measurement of the final round came right after a rest, and the search's measurements after none.
  bool rests_only_before_the_final_rounds_measurements() {
    std::lock_guard lock(mutex);
    for (std::size_t index = 0; index < entries.size(); ++index) {
      const bool rested = index > 0 && entries[index - 1].what == "rest";
      if (entries[index].what == "rest") {
        if (rested) return false;  // two rests in a row
      } else if (rested != entries[index].again) {
        return false;
      }
    }
    return !entries.empty() && entries.back().what != "rest";
  }
};

struct Planting {
  fs::path recording;                        // the search's measurements
  std::map<std::string, Planted> planted;    // by configuration key; the others' true time is their recorded one
  std::optional<Planted> baseline;           // none: the spec has no baseline
  std::uint64_t seed = 1;
};

class PlantedGpu final : public Measurer {
 public:
  PlantedGpu(Planting planting, std::shared_ptr<MeasuredLog> log)
      : planting_(std::move(planting)), log_(std::move(log)), device_(device_profile("sm_90")) {
    device_.name = "planted GPU";
  }

  const DeviceProperties& device() const override { return device_; }
  bool needs_compilation() const override { return false; }
  double baseline_ms() const override { return planting_.baseline ? planting_.baseline->true_ms : 0; }
  std::string baseline_library() const override { return planting_.baseline ? "planted baseline" : ""; }
  void prepare(const SpaceEnumerator& space) override { recorded_.emplace(planting_.recording, space, ""); }

  Evaluation measure(const Configuration& configuration, const CompileResult*, const SpaceEnumerator&, bool) override {
    const std::string key = configuration_key(configuration);
    std::lock_guard lock(mutex_);
    const bool again = !measured_before_.insert(key).second;
    log(key, again);
    Evaluation evaluation = recorded_->evaluate(configuration);
    if (!again || !evaluation.ok()) return evaluation;
    const auto planted = planting_.planted.find(key);
    const Planted truth = planted != planting_.planted.end() ? planted->second : Planted{evaluation.time.median_ms};
    evaluation.time.median_ms = evaluation.time.min_ms = draw(key, truth);
    return evaluation;
  }

  void rest() override {
    std::lock_guard lock(mutex_);
    log("rest", true);
  }

  // Sustained figures: 15% over a configuration's recorded time, 20% over the baseline's true one.
  std::optional<double> sustained_ms(const Configuration* configuration, const CompileResult*,
                                     const SpaceEnumerator&) override {
    std::lock_guard lock(mutex_);
    log("sustained", false);
    if (configuration == nullptr) return planting_.baseline ? std::optional(1.2 * planting_.baseline->true_ms) : std::nullopt;
    return 1.15 * recorded_->evaluate(*configuration).time.median_ms;
  }

  Evaluation measure_baseline(bool measure_energy) override {
    if (!planting_.baseline) return Measurer::measure_baseline(measure_energy);
    std::lock_guard lock(mutex_);
    log("baseline", true);
    Evaluation evaluation;
    evaluation.time.median_ms = evaluation.time.min_ms = draw("baseline", *planting_.baseline);
    evaluation.time.samples = 10;
    return evaluation;
  }

 private:
  void log(const std::string& what, bool again) {
    std::lock_guard lock(log_->mutex);
    log_->entries.push_back({what, again});
  }

  // One engine per configuration, seeded by the planting's seed and the key: a configuration's draws do not
  // depend on the order the run measures in.
  double draw(const std::string& key, const Planted& truth) {
    auto engine = engines_.try_emplace(key, planting_.seed ^ fnv1a_64(key)).first;
    const double unit = static_cast<double>(engine->second() >> 11) * 0x1.0p-53;  // [0, 1)
    return truth.true_ms * (1 + truth.spread * (2 * unit - 1));
  }

  Planting planting_;
  std::shared_ptr<MeasuredLog> log_;
  DeviceProperties device_;
  std::optional<ReplaySource> recorded_;
  std::mutex mutex_;
  std::set<std::string> measured_before_;
  std::map<std::string, std::mt19937_64> engines_;
};

// The landscape of session_test_support.h: (3, 2, 1) at 1.0 ms is the fastest, its six neighbours take 1.1 ms.
const Configuration fastest = configuration_of(3, 2, 1);

// A whole run on the planted GPU, exhaustive over the 90 configurations of a 6 x 5 x 3 space, with a final round of
// the search's best five, the default, the stored configuration and the baseline; records under dir/name, the best
// cache under dir/best.
TuneReport run_on_planted_gpu(const fs::path& spec, const fs::path& dir, const std::string& name,
                              const Planting& planting,
                              const std::shared_ptr<MeasuredLog>& log = std::make_shared<MeasuredLog>(),
                              int final_candidates = 5) {
  TuneOptions options;
  options.spec_file = spec;
  options.out_dir = dir / name;
  options.best_cache_dir = dir / "best";
  options.strategy = "exhaustive";
  options.show_progress = false;
  options.measure_ceilings = false;
  options.use_database_prior = false;
  options.measurement.energy = EnergyMeasurement::off;
  options.final_candidates = final_candidates;
  options.open_device = [&](const KernelSpec&, int) -> std::unique_ptr<Measurer> {
    return std::make_unique<PlantedGpu>(planting, log);
  };
  return tune(options);
}

const RankedResult* ranked(const TuneReport& report, const Configuration& configuration) {
  for (const RankedResult& result : report.best)
    if (result.evaluation.configuration == configuration) return &result;
  return nullptr;
}

DatabaseEntry the_stored_entry(const fs::path& dir) {
  const std::optional<KernelDatabase> database = BestCache(dir / "best").read("synthetic");
  EXPECT_TRUE(database.has_value());
  if (!database) return {};
  EXPECT_EQ(database->entries.size(), 1u);
  return database->entries.empty() ? DatabaseEntry{} : database->entries.front();
}

ConfigurationValues values_of(const fs::path& spec, const Configuration& configuration) {
  return configuration_values(load_kernel_spec(spec).space, configuration);
}

// The search measures (4, 2, 1), which runs at 1.05 ms, once at a lucky 0.9 ms: by the search alone it wins. The
// final round measures it again beside the truly fastest (3, 2, 1) and ranks that first, separated from every other
// contender after the minimum three rounds (with a spread of 0.5%, any seed separates 1.0 from 1.05 ms in three).
TEST(FinalRoundWiring, APlantedNoisyWinnerOfTheSearchLosesTheFinalRound) {
  const fs::path dir = fresh_directory("wiring_noisy_winner");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  const Configuration lucky = configuration_of(4, 2, 1);
  Planting planting;
  planting.recording = write_recording(spec, dir, [&](Evaluation& evaluation) {
    if (evaluation.configuration == lucky) evaluation.time.median_ms = evaluation.time.min_ms = 0.9;
  });
  planting.planted[configuration_key(lucky)] = {1.05};

  const TuneReport search_alone =
      run_on_planted_gpu(spec, dir, "search_alone", planting, std::make_shared<MeasuredLog>(), 0);
  ASSERT_FALSE(search_alone.best.empty());
  EXPECT_EQ(search_alone.best.front().evaluation.configuration, lucky);
  EXPECT_EQ(search_alone.final_rounds, 0);

  const auto log = std::make_shared<MeasuredLog>();
  const TuneReport report = run_on_planted_gpu(spec, dir, "with_final_round", planting, log);
  ASSERT_GE(report.best.size(), 2u);
  const RankedResult& winner = report.best[0];
  EXPECT_EQ(winner.evaluation.configuration, fastest);
  EXPECT_DOUBLE_EQ(winner.search_median_ms, 1.0);
  ASSERT_TRUE(winner.final_round.has_value());
  EXPECT_EQ(winner.evaluation.time.median_ms, winner.final_round->mean_ms);
  EXPECT_NEAR(winner.final_round->mean_ms, 1.0, 0.005);
  const RankedResult& second = report.best[1];
  EXPECT_EQ(second.evaluation.configuration, lucky);
  EXPECT_DOUBLE_EQ(second.search_median_ms, 0.9);
  ASSERT_TRUE(second.final_round.has_value());
  EXPECT_NEAR(second.final_round->mean_ms, 1.05, 1.05 * 0.005);
  EXPECT_LT(winner.final_round->high_ms, second.final_round->low_ms);

  EXPECT_EQ(report.final_rounds, 3);
  EXPECT_EQ(report.final_round_stop, "separated");
  EXPECT_GT(report.final_round_confidence, 0.999);
  EXPECT_EQ(report.final_round_worst_regret, 0);
  // The search's five best (the lucky one, the fastest and three neighbours) and the default (1, 1, 0), three
  // rounds each.
  EXPECT_EQ(log->final_round().size(), 18u);
}

// The challenger of the stored configuration: recorded at 1.05 ms, second in every search, so always in the final
// round.
const Configuration challenger = configuration_of(3, 2, 0);

// The best cache holds (3, 2, 1), stored by a first run on the same GPU, before a second run in which the challenger
// really runs at the time a test plants.
fs::path spec_with_the_fastest_stored(const fs::path& dir) {
  const fs::path spec = write_spec(dir, 6, 5, 3);
  Planting planting;
  planting.recording = write_recording(spec, dir, [](Evaluation& evaluation) {
    if (evaluation.configuration == challenger) evaluation.time.median_ms = evaluation.time.min_ms = 1.05;
  });
  const TuneReport first = run_on_planted_gpu(spec, dir, "first", planting);
  EXPECT_TRUE(first.best_cache_updated);
  EXPECT_EQ(first.best_cache_dir, dir / "best");  // where it was stored, as the report prints it
  EXPECT_EQ(the_stored_entry(dir).configuration, values_of(spec, fastest));
  return spec;
}

// The challenger really runs at 0.9 ms: its interval lies wholly below the stored configuration's, measured in the
// same rounds, and the entry changes hands with its figures.
TEST(FinalRoundWiring, TheStoredConfigurationIsReplacedByAWinnerFasterBeyondTheNoise) {
  const fs::path dir = fresh_directory("wiring_replaced");
  const fs::path spec = spec_with_the_fastest_stored(dir);
  Planting planting;
  planting.recording = dir / "recorded.csv";
  planting.planted[configuration_key(challenger)] = {0.9};
  const TuneReport report = run_on_planted_gpu(spec, dir, "second", planting);

  ASSERT_GE(report.best.size(), 2u);
  const RankedResult& winner = report.best[0];
  EXPECT_EQ(winner.evaluation.configuration, challenger);
  const RankedResult* stored = ranked(report, fastest);
  ASSERT_NE(stored, nullptr);
  ASSERT_TRUE(winner.final_round && stored->final_round);
  EXPECT_LT(winner.final_round->high_ms, stored->final_round->low_ms);
  EXPECT_EQ(report.best_cache_decision.rfind("replaced: ", 0), 0u) << report.best_cache_decision;
  EXPECT_TRUE(report.best_cache_updated);
  const DatabaseEntry entry = the_stored_entry(dir);
  EXPECT_EQ(entry.configuration, values_of(spec, challenger));
  EXPECT_DOUBLE_EQ(entry.time.median_ms, winner.final_round->mean_ms);
  EXPECT_EQ(entry.time.samples, report.final_rounds);
}

// The challenger really runs at 0.99 ms against the stored configuration's 1.0, each round's figure within 3%: it ranks
// first, but its interval overlaps the stored one's, so the stored configuration stays, with this round's figures.
TEST(FinalRoundWiring, TheStoredConfigurationIsKeptWhenTheNewWinnerIsWithinTheNoise) {
  const fs::path dir = fresh_directory("wiring_kept");
  const fs::path spec = spec_with_the_fastest_stored(dir);
  Planting planting;
  planting.recording = dir / "recorded.csv";
  planting.planted[configuration_key(challenger)] = {0.99, 0.03};
  planting.planted[configuration_key(fastest)] = {1.0, 0.03};
  const TuneReport report = run_on_planted_gpu(spec, dir, "second", planting);

  ASSERT_GE(report.best.size(), 2u);
  const RankedResult& winner = report.best[0];
  // The planting does what this test is about: the new configuration leads, within the noise of the stored one.
  ASSERT_EQ(winner.evaluation.configuration, challenger);
  const RankedResult* stored = ranked(report, fastest);
  ASSERT_NE(stored, nullptr);
  ASSERT_TRUE(winner.final_round && stored->final_round);
  ASSERT_GE(winner.final_round->high_ms, stored->final_round->low_ms);

  EXPECT_EQ(report.best_cache_decision.rfind("kept the stored configuration: ", 0), 0u) << report.best_cache_decision;
  EXPECT_TRUE(report.best_cache_updated);
  const DatabaseEntry entry = the_stored_entry(dir);
  EXPECT_EQ(entry.configuration, values_of(spec, fastest));
  EXPECT_DOUBLE_EQ(entry.time.median_ms, stored->final_round->mean_ms);
  EXPECT_EQ(entry.time.samples, report.final_rounds);
  const FinalFigures& figures = *stored->final_round;
  EXPECT_NEAR(entry.time.spread, (figures.high_ms - figures.low_ms) / figures.mean_ms, 1e-12);
}

// The baseline, as fast as the winner and ten times noisier, is timed once in every round at a place that moves
// from round to round, and never contends: were it a contender, the leader would not separate from it in three
// rounds. Its final-round mean becomes the figure the winner is compared with.
TEST(FinalRoundWiring, TheBaselineIsInterleavedInEveryRoundButNeverContends) {
  const fs::path dir = fresh_directory("wiring_baseline");
  const fs::path spec = write_spec(dir, 6, 5, 3);
  Planting planting;
  planting.recording = write_recording(spec, dir);
  planting.baseline = Planted{1.0, 0.05};
  const auto log = std::make_shared<MeasuredLog>();
  const TuneReport report = run_on_planted_gpu(spec, dir, "run", planting, log);

  ASSERT_FALSE(report.best.empty());
  EXPECT_EQ(report.best.front().evaluation.configuration, fastest);
  EXPECT_EQ(report.final_rounds, 3);
  EXPECT_EQ(report.final_round_stop, "separated");
  ASSERT_TRUE(report.baseline_final_round.has_value());
  EXPECT_EQ(report.baseline_final_round->round_ms.size(), 3u);
  EXPECT_DOUBLE_EQ(report.baseline_search_ms, 1.0);
  EXPECT_DOUBLE_EQ(report.baseline_ms, report.baseline_final_round->mean_ms);
  EXPECT_DOUBLE_EQ(report.best.front().fraction_of_baseline,
                   report.baseline_ms / report.best.front().final_round->mean_ms);

  // The search's five best and the default, then the baseline: seven measurements a round, each once.
  const std::vector<std::string> measured = log->final_round();
  ASSERT_EQ(measured.size(), 21u);
  std::set<std::size_t> baseline_places;
  for (std::size_t round = 0; round < 3; ++round) {
    const std::vector<std::string> in_round(measured.begin() + 7 * round, measured.begin() + 7 * (round + 1));
    EXPECT_EQ(std::set<std::string>(in_round.begin(), in_round.end()).size(), 7u) << "round " << round + 1;
    const auto baseline = std::find(in_round.begin(), in_round.end(), "baseline");
    ASSERT_NE(baseline, in_round.end()) << "round " << round + 1;
    baseline_places.insert(static_cast<std::size_t>(baseline - in_round.begin()));
  }
  EXPECT_EQ(baseline_places.size(), 3u);
  EXPECT_EQ(std::count(measured.begin(), measured.end(), "baseline"), 3);
  // Every figure of the final round is a burst figure: the GPU rested before each, and before none of the search's.
  EXPECT_TRUE(log->rests_only_before_the_final_rounds_measurements());
  // Then the winner's and the baseline's sustained figures, once each, reported beside the burst figures.
  ASSERT_TRUE(report.sustained_ms.has_value());
  EXPECT_DOUBLE_EQ(*report.sustained_ms, 1.15 * 1.0);
  ASSERT_TRUE(report.baseline_sustained_ms.has_value());
  EXPECT_DOUBLE_EQ(*report.baseline_sustained_ms, 1.2);
  std::lock_guard lock(log->mutex);
  EXPECT_EQ(std::count_if(log->entries.begin(), log->entries.end(), [](const auto& entry) { return entry.what == "sustained"; }), 2);
  EXPECT_EQ(log->entries.back().what, "sustained");
}

}  // namespace
}  // namespace kernlathe
