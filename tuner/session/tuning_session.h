#pragma once
// The one place that wires every stage together for `tune run`:
//   spec -> device (GPU worker or replay) -> space -> strategy -> compile pool -> measure -> record -> best cache.
// Every other module takes values and returns values; this one owns the loop, the ordering and the bookkeeping.

#include <cstdint>
#include <filesystem>

#include "tuner/nvrtc/cubin_cache.h"  // default_cubin_cache_dir
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuner/record/evaluation.h"
#include "tuner/measure/ceilings.h"
#include "tuner/measure/measurement.h"
#include "tuner/search/strategy.h"
#include "tuner/search/stop_condition.h"
#include "tuner/session/final_round.h"
#include "tuner/session/measurer.h"
#include "tuner/session/run_profile.h"
#include "tuner/space/space.h"
#include "tuner/spec/model.h"
#include "tuner/spec/spec_hash.h"  // problem_text, spec_hash
#include "tuner/spec/spec_loader.h"
#include "tuner/common/current_executable.h"

namespace kernlathe {

// Measurers for devices that live in other processes, with their labels (Evaluation::device).
struct RemoteDevices {
  std::vector<std::unique_ptr<Measurer>> measurers;
  std::vector<std::string> labels;
};

struct TuneOptions {
  std::filesystem::path spec_file;
  ProblemOverrides problem;
  std::string strategy = default_strategy_name();  // chosen by cross-validation (README "Search strategies")
  std::uint64_t seed = 1;
  StopCondition stop;
  std::filesystem::path out_dir;  // empty: results/runs/<kernel>/<arch>/<problem>
  bool resume = false;
  int device = 0;
  // Several GPUs of this host (`--devices`): one evaluation worker on each, fed by one compile pool and one
  // strategy, rows recorded with their device. Empty: `device` alone. GPUs of one model share a session; each
  // other model gets a session of its own (tune_each_model). With replay_csv, each index is a replayed device.
  std::vector<int> devices;
  // Set by tune_each_model when the devices are of several models: the folder, named after the GPU, that this
  // model's records go to under the default record directory.
  std::string device_folder;
  // Devices in other processes (a run under mpirun, tuner/cluster/cluster_run.h): called once this process's own
  // devices are open; what it returns joins them as further lanes, and is grouped by model like them.
  std::function<RemoteDevices(const KernelSpec& spec)> remote_devices;
  // Put before each local device's index in its label ("rank 0, gpu " under mpirun).
  std::string device_label_prefix;
  // Whether the strategy runs on a thread of its own (tuner/search/strategy_runner.h); unset: with several devices.
  std::optional<bool> strategy_in_background;
  // Opens this process's device `index` in place of an evaluation worker: a stand-in GPU, so that tests go through
  // a whole run on any machine (tests/session_final_round_wiring_test.cpp). The run treats it as a GPU: it measures
  // the stored configuration, runs the final round and updates the best cache. Unset: a worker. A replay ignores it.
  std::function<std::unique_ptr<Measurer>(const KernelSpec& spec, int index)> open_device;
  int jobs = 0;  // compile processes; 0: one per core
  std::filesystem::path cubin_cache_dir;  // empty: $XDG_CACHE_HOME or ~/.cache, /kernlathe/cubins
  bool use_cubin_cache = true;
  std::filesystem::path best_cache_dir = "results/best";
  bool update_best_cache = true;
  double timeout_seconds = 10;  // per configuration, on top of the measurement cap
  MeasurementOverrides measurement;  // on top of the defaults of the spec's kind (measurement_settings_for)
  // Replay: measurements come from a recorded CSV instead of the GPU; replay_arch names the device profile
  // whose properties the space's expressions see (the recorded run's arch when its run.json says).
  std::filesystem::path replay_csv;
  std::string replay_arch;
  double replay_pace_ms = 0;  // each replayed measurement takes this long (the lanes' waiting as on a GPU)
  std::filesystem::path worker_executable;  // the `tune` binary, for compile and evaluation workers
  bool show_progress = true;                 // a progress line on stderr
  // Put before each note the run prints on stderr ("tune: ..."): `tune sweep` names the problem and its GPUs there
  // when several problems are tuned at once.
  std::string message_prefix;
  // The final round (tuner/session/final_round.h): the best `final_candidates` configurations of the search, the
  // default and the best cache's configuration measured again `final_rounds` times, round-robin. 0: no final round.
  int final_candidates = 5;
  int final_rounds = 3;
  int final_max_rounds = 15;  // the final round adds rounds up to this many while its leader is undecided
  // The ceilings of tuner/measure/ceilings.h at the start: from the ceiling cache (ceiling_cache.h; empty: its
  // default folder) when this GPU model and driver were measured within a week, else measured (about a second)
  // and cached; refresh_ceilings measures them whatever the cache holds.
  bool measure_ceilings = true;
  bool refresh_ceilings = false;
  std::filesystem::path ceiling_cache_dir;
  Objective objective = Objective::time;  // energy and edp measure energy on every row; the best cache is left alone
  // The prior (tuner/search/prior.h): records of this kernel measured elsewhere, whose best configurations valid here
  // are tried first. prior_files: record CSVs (run.json beside) or T4 files, given with --prior; an unreadable one is
  // bad input. use_database_prior: also every record under prior_database_dir/<kernel>/ but this run's own (other
  // problem sizes, other GPUs; one that does not read in this space is skipped with a note). Replays use only
  // prior_files, so a replay's default stays the strategy alone.
  std::vector<std::filesystem::path> prior_files;
  bool use_database_prior = true;
  std::filesystem::path prior_database_dir = "results/runs";
  // `--config K=V,...`, one per configuration: these are measured (verified, recorded, ranked) and nothing else:
  // neither the default nor the stored best, nor any the strategy proposes. Checked against the space (exit 2).
  std::vector<std::string> given_configurations;
};

// The measurement settings a run uses for this spec: the defaults of its kind (kernels, or streamed passes)
// with the command line's overrides. Throws InputError when they contradict each other.
MeasurementSettings measurement_settings_for(const KernelSpec& spec, const MeasurementOverrides& overrides);

struct RankedResult {
  // With a final round, evaluation.time.median_ms is the final round's mean (and every figure below is taken from
  // it); search_median_ms keeps what the search measured.
  Evaluation evaluation;
  double search_median_ms = 0;
  std::optional<FinalFigures> final_round;  // set for configurations of the final round
  double gflops = 0;          // 0 when the spec states no flops
  double gbps = 0;            // 0 when the spec states no bytes
  double speedup_over_default = 0;
  double speedup_over_median = 0;
  double fraction_of_ceiling = 0;  // of the measured copy bandwidth (bytes) or 0 when unknown
  double fraction_of_baseline = 0; // baseline time / this time (1.0 = as fast as cuBLAS), 0 without a baseline
};

struct TuneReport {
  std::string kernel;
  std::vector<std::string> parameter_names;  // in configuration order
  std::string problem;
  std::string device_name;
  std::string arch;
  bool replay = false;
  std::uint64_t valid_configurations = 0;
  std::uint64_t evaluated = 0;         // in this run
  // --resume: configurations recorded under the same spec hash before this run. They are not measured again,
  // the strategy is told their results, and they are ranked (best, median, default) with this run's.
  std::uint64_t skipped_by_resume = 0;
  std::uint64_t other_hash_rows = 0;   // --resume: rows of the record measured under another spec hash, ignored
  std::filesystem::path torn_row_file; // a torn last row found in the record, set aside there (csv_record.h)
  // Parameters added to the space after the record was written: the record gained their columns, at their defaults.
  std::vector<std::string> record_added_columns;
  std::map<std::string, std::uint64_t> status_counts;  // of this run's evaluations
  double seconds = 0;
  double evaluations_per_second = 0;
  double copy_bandwidth_gbps = 0;      // measured in the same run on the GPU; a replay reports the recorded one
  bool streamed = false;               // a streamed spec: times are end-to-end passes, evaluations carry stages
  double pinned_copy_in_gbps = 0;      // streamed specs: one large pinned host-to-device copy (the ceilings')
  std::string pinned_copy_in_source;   // where that figure came from (ceiling_cache.h: pinned_copy_ceiling)
  Ceilings ceilings;                   // tuner/measure/ceilings.h, measured at the start of a GPU run or cached
  double ceilings_measured_at = 0;     // seconds since the epoch; 0 when there are none
  double baseline_ms = 0;              // the spec's baseline (cuBLAS), same run; a replay reports the recorded one.
                                       // With a final round: its mean there, beside the candidates
  double baseline_search_ms = 0;       // with a final round: the figure timed at setup
  std::optional<FinalFigures> baseline_final_round;
  // Sustained figures (tuner/measure/measurement.h: back to back for sustained_seconds) of the winner and the
  // baseline, measured after the final round; reported, never ranked on. Empty where not measured.
  std::optional<double> sustained_ms;
  std::optional<double> baseline_sustained_ms;
  std::string baseline_library;        // "cuBLAS 13.0.2"
  std::optional<Evaluation> default_evaluation;
  std::optional<FinalFigures> default_final_round;  // the default configuration's figures in the final round
  double median_time_ms = 0;
  std::vector<RankedResult> best;      // fastest first, at most 5; with --resume over every recorded evaluation
  std::filesystem::path records;
  std::string stop_reason;
  bool best_cache_updated = false;
  std::filesystem::path best_cache_dir;    // where the best cache is (--best-dir; results/best by default)
  int final_rounds = 0;                    // rounds of the final round that ran (0: none)
  // Why the final round stopped (final_round.h: "separated", "within tolerance", "cap", "single contender"), how
  // sure its selection is (the probability that the winner is faster than the runner-up) and the most the winner
  // could be slower than the fastest contender, relative to its mean.
  std::string final_round_stop;
  double final_round_confidence = 0;
  double final_round_worst_regret = 0;
  Objective objective = Objective::time;   // what the ranking minimised
  std::string best_cache_decision;         // with a final round: why the best cache was or was not replaced
  RunProfile profile;                      // where the run's wall time went (run_profile.h)
  std::vector<std::string> devices;        // the labels of the devices that measured (Evaluation::device)
  std::map<std::string, std::uint64_t> evaluations_per_device;  // this run's rows by device
  std::vector<std::string> lost_devices;   // "label: why" for each device lost during the run
  std::vector<std::string> prior_sources;  // the records the prior came from (TuneOptions::prior_files and database)
  std::size_t prior_transfers = 0;         // configurations of the prior the strategy tries first
};

// Runs a tuning session. Throws InputError (bad spec, problem, strategy, or devices of several models: see
// tune_each_model), NoGpuError (no driver or device when not replaying) or TunerError; a failing configuration is
// recorded, never thrown.
TuneReport tune(const TuneOptions& options);

// tune() over options.devices when they may be GPUs of several models: one session per model, run at the same
// time, each with its own record (under a folder named after its GPU) and its own best-cache entry; one report per
// model, in the order the models first appear in the devices.
std::vector<TuneReport> tune_each_model(const TuneOptions& options);

// Device properties and problem symbols, the constants of every expression.
Constants run_constants(const KernelSpec& spec, const DeviceProperties& device);

// A metric of the spec (metrics.flops or metrics.bytes) for one configuration of `space`; 0 when the spec states none.
double evaluate_metric(const Expression& expression, const SpaceEnumerator& space, const Configuration& config);


// The measurer of one device of a run: a replay of options.replay_csv (with the device profile of the recorded arch
// unless options.replay_arch names one), else options.open_device's, else an evaluation worker on GPU `device`.
// NoGpuError without a GPU.
std::unique_ptr<Measurer> open_measurer(const KernelSpec& spec, const TuneOptions& options,
                                        const MeasurementSettings& measurement, int device);

}  // namespace kernlathe
