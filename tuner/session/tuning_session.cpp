#include "tuner/session/tuning_session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_set>

#include "tuner/cache/best_cache.h"
#include "tuner/session/compile_queue.h"
#include "tuner/session/final_round.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/compile/compile_pool.h"
#include "tuner/compile/instantiate.h"
#include "tuner/measure/ceiling_cache.h"
#include "tuner/nvrtc/cubin_cache.h"
#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/record/build_commit.h"
#include "tuner/record/csv_record.h"
#include "tuner/common/current_executable.h"
#include "tuner/record/run_metadata.h"
#include "tuner/search/prior.h"
#include "tuner/search/prior_sources.h"
#include "tuner/search/strategy.h"
#include "tuner/search/strategy_runner.h"
#include "tuner/space/configuration_checks.h"
#include "tuner/session/measurement_lanes.h"
#include "tuner/session/measurer.h"

namespace kernlathe {
namespace {

using Clock = std::chrono::steady_clock;

std::string sanitise_for_path(std::string text) {
  for (char& c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '=' || c == '-' || c == '_' || c == '.')) c = '_';
  return text;
}

// Shows "[ 120/ 400] 3 failed | best 0.213 ms | 21.4 eval/s | ETA 0:13" on one line of a terminal, or a plain
// line every few seconds when stderr is a file, so logs stay readable.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled), terminal_(isatty(STDERR_FILENO) != 0) {}

  void update(std::uint64_t done, std::uint64_t planned, std::uint64_t failed, double best_ms, double seconds,
              bool final_update = false) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (!final_update && !terminal_ && now - last_print_ < std::chrono::seconds(5)) return;
    if (!final_update && terminal_ && now - last_print_ < std::chrono::milliseconds(100)) return;
    last_print_ = now;
    const double rate = seconds > 0 ? done / seconds : 0;
    std::string eta = "?";
    if (rate > 0 && planned >= done) {
      const auto remaining = static_cast<long>((planned - done) / rate);
      eta = fmt::format("{}:{:02}", remaining / 60, remaining % 60);
    }
    const std::string best = best_ms > 0 ? fmt::format("{:.4g} ms", best_ms) : "-";
    const std::string line = fmt::format("[{:>5}/{:<5}] {} failed | best {} | {:.1f} eval/s | ETA {}", done, planned,
                                         failed, best, rate, eta);
    if (terminal_) {
      fmt::print(stderr, "\r{:<78}", line);
      if (final_update) fmt::print(stderr, "\n");
    } else {
      fmt::print(stderr, "{}\n", line);
    }
    std::fflush(stderr);
  }

 private:
  bool enabled_;
  bool terminal_;
  Clock::time_point last_print_{};
};

std::string configuration_key(const Space& space, const Configuration& configuration) {
  return to_string(space, configuration);
}

}  // namespace

double evaluate_metric(const Expression& expression, const SpaceEnumerator& space, const Configuration& config) {
  if (expression.empty()) return 0;
  Expression bound = expression;
  Bindings bindings = space.bindings(config);
  bound.bind(bindings.scope);
  return bound.evaluate_number(bindings.slots);
}

Constants run_constants(const KernelSpec& spec, const DeviceProperties& device) {
  Constants constants = device_property_values(device);
  for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, Value{value});
  return constants;
}

std::unique_ptr<Measurer> open_measurer(const KernelSpec& spec, const TuneOptions& options,
                                        const MeasurementSettings& measurement, int device) {
  if (!options.replay_csv.empty()) {
    if (!options.replay_arch.empty())
      return make_replay_measurer(spec, options.replay_csv, device_profile(options.replay_arch), options.replay_pace_ms);
    const auto runs = read_run_metadata(options.replay_csv);
    const std::string arch = runs.empty() ? "sm_90" : runs.back().arch;
    std::optional<DeviceProperties> recorded;
    try {
      recorded = device_profile(arch);
    } catch (const InputError&) {  // the arch is the file's, not an --arch the user passed
      throw InputError(SourceLocation{metadata_path(options.replay_csv).string()},
                       fmt::format("the recorded arch '{}' has no device profile (known: {}); pass --arch to replay "
                                   "with one of them", arch, fmt::join(known_device_profiles(), ", ")));
    }
    return make_replay_measurer(spec, options.replay_csv, *recorded, options.replay_pace_ms);
  }
  if (options.open_device) return options.open_device(spec, device);
  GpuMeasurerOptions gpu;
  gpu.worker_executable = options.worker_executable.empty() ? current_executable() : options.worker_executable;
  gpu.cubin_cache_dir = options.cubin_cache_dir.empty() ? default_cubin_cache_dir() : options.cubin_cache_dir;
  gpu.device = device;
  gpu.timeout_seconds = options.timeout_seconds;
  gpu.measurement = measurement;
  return make_gpu_measurer(spec, gpu);
}

MeasurementSettings measurement_settings_for(const KernelSpec& spec, const MeasurementOverrides& overrides) {
  MeasurementSettings settings =
      apply(spec.stream.enabled ? MeasurementSettings::streamed_passes() : MeasurementSettings{}, overrides);
  try {
    check_settings(settings);
  } catch (const std::invalid_argument& error) {
    throw InputError(fmt::format("measurement settings: {}", error.what()));
  }
  return settings;
}

namespace {

// The devices of a run, one Measurer each, in the order of --devices; labels name them in the record.
struct DeviceSet {
  std::vector<std::unique_ptr<Measurer>> measurers;
  std::vector<std::string> labels;
};

void add_remote_devices(DeviceSet& set, const KernelSpec& spec, const TuneOptions& options) {
  if (!options.remote_devices) return;
  RemoteDevices remote = options.remote_devices(spec);
  for (std::size_t index = 0; index < remote.measurers.size(); ++index) {
    set.measurers.push_back(std::move(remote.measurers[index]));
    set.labels.push_back(remote.labels.at(index));
  }
}

std::vector<int> device_indices(const TuneOptions& options) {
  return options.devices.empty() ? std::vector<int>{options.device} : options.devices;
}

// Starts a worker on every device at once (each opens its device in about 0.15 s), or reads the record once per
// device of a replay: a replay over several devices runs the multi-device scheduling without a GPU.
DeviceSet open_devices(const KernelSpec& spec, const TuneOptions& options, const MeasurementSettings& measurement) {
  DeviceSet set;
  const std::vector<int> indices = device_indices(options);
  std::set<int> distinct(indices.begin(), indices.end());
  if (distinct.size() != indices.size()) throw InputError("--devices names a GPU twice");
  for (int index : indices) set.labels.push_back(options.device_label_prefix + std::to_string(index));
  if (!options.replay_csv.empty()) {
    for (int index : indices) set.measurers.push_back(open_measurer(spec, options, measurement, index));
    add_remote_devices(set, spec, options);
    return set;
  }
  std::vector<std::future<std::unique_ptr<Measurer>>> starting;
  for (int index : indices)
    starting.push_back(std::async(std::launch::async, [&, index] { return open_measurer(spec, options, measurement, index); }));
  std::exception_ptr failure;
  for (auto& future : starting) {
    try {
      set.measurers.push_back(future.get());
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  add_remote_devices(set, spec, options);
  return set;
}

std::string model_of(const Measurer& measurer) {
  return measurer.device().name + " (" + measurer.device().arch_name() + ")";
}

TuneReport run_session(const TuneOptions& options, const KernelSpec& spec, const MeasurementSettings& measurement,
                       DeviceSet devices, RunProfile profile, LapClock lap, Clock::time_point started);

}  // namespace

std::vector<TuneReport> tune_each_model(const TuneOptions& options) {
  const auto started = Clock::now();
  RunProfile profile;
  profile.process_start_seconds = process_start_for_a_run();
  LapClock lap;
  KernelSpec spec = load_kernel_spec(options.spec_file, options.problem);
  const MeasurementSettings measurement = measurement_settings_for(spec, options.measurement);
  profile.add_startup("load spec", lap.lap());
  DeviceSet all = open_devices(spec, options, measurement);
  profile.add_startup(options.replay_csv.empty() ? "start GPU workers" : "read record", lap.lap());

  // Identical GPUs share one session; each other model gets its own, with its own record and best-cache entry.
  std::vector<std::string> models;
  std::vector<DeviceSet> groups;
  for (std::size_t index = 0; index < all.measurers.size(); ++index) {
    const std::string model = model_of(*all.measurers[index]);
    auto found = std::find(models.begin(), models.end(), model);
    if (found == models.end()) {
      models.push_back(model);
      groups.emplace_back();
      found = models.end() - 1;
    }
    DeviceSet& group = groups[static_cast<std::size_t>(found - models.begin())];
    group.measurers.push_back(std::move(all.measurers[index]));
    group.labels.push_back(all.labels[index]);
  }
  if (groups.size() == 1) return {run_session(options, spec, measurement, std::move(groups.front()), profile, lap, started)};

  // Several models: one session per model at once, each recording under a folder named after its GPU.
  std::vector<std::future<TuneReport>> sessions;
  for (DeviceSet& group : groups) {
    TuneOptions group_options = options;
    const std::string folder = sanitise_for_path(group.measurers.front()->device().name);
    if (!options.out_dir.empty()) group_options.out_dir = options.out_dir / folder;
    group_options.device_folder = folder;
    group_options.show_progress = false;  // several progress lines would overwrite each other
    sessions.push_back(std::async(std::launch::async, [&, group_options, set = std::move(group)]() mutable {
      return run_session(group_options, spec, measurement, std::move(set), profile, lap, started);
    }));
  }
  std::vector<TuneReport> reports;
  std::exception_ptr failure;
  for (auto& session : sessions) {
    try {
      reports.push_back(session.get());
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return reports;
}

TuneReport tune(const TuneOptions& options) {
  std::vector<TuneReport> reports = tune_each_model(options);
  if (reports.size() != 1) {
    std::string models;
    for (const TuneReport& report : reports) models += (models.empty() ? "" : ", ") + report.device_name;
    throw InputError(fmt::format("the devices are GPUs of different models ({}): tune each model on its own", models));
  }
  return std::move(reports.front());
}

namespace {

// One run of one GPU model: an object whose phases are methods, called in order by run(). The state the phases
// share is members; each phase says what it reads and leaves.
class TuningRun {
 public:
  TuningRun(const TuneOptions& options, const KernelSpec& spec, const MeasurementSettings& measurement,
            DeviceSet devices, RunProfile profile, LapClock lap, Clock::time_point started)
      : options_(options),
        spec_(spec),
        measurement_(measurement),
        devices_(std::move(devices)),
        profile_(std::move(profile)),
        lap_(lap),
        started_(started),
        replay_(!options.replay_csv.empty()),
        measurer_(devices_.measurers.front().get()),
        device_(measurer_->device()),
        space_(spec.space, run_constants(spec, device_)),
        progress_(options.show_progress) {}

  TuneReport run() {
    start_up();
    measure_ceilings();
    open_records();
    search();
    collect_the_lanes();
    rank_verified();
    final_round();
    report_the_best();
    store_the_best();
    profile_.total_seconds = elapsed_seconds();
    report_.profile = std::move(profile_);
    return std::move(report_);
  }

 private:
  double elapsed_seconds() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
  const std::vector<Evaluation>& recorded() const { return resume_ ? resume_->evaluations() : no_evaluations_; }
  std::string device_arch() const { return arch_for(device_, spec_.needs_arch_specific); }

  // ---- Start-up and ceilings --------------------------------------------------------------------------------

  // The space is enumerated, checked with this device's properties, the report's header filled; then the device
  // is prepared on a thread while this one reads a resumed record, starts the strategy and the compile pool and
  // submits the first proposals.
  void start_up() {
    profile_.add_startup("enumerate space", lap_.lap());
    // What `tune validate` checks with a profile, checked again with this device's properties before anything is
    // compiled or measured: a default or reference configuration that breaks the constraints, unusable buffer
    // counts, launch geometry or shared memory stop the run here with exit 2, not on the GPU host later.
    check_spec_configurations(spec_, space_);
    run_default_ = run_default_for_problem(spec_, space_);
    static std::once_flag default_note_said;  // several models run a session each: the note is said once
    if (!run_default_.fallback_note.empty())
      std::call_once(default_note_said, [&] { fmt::print(stderr, "{}tune: note: {}\n",
                                                         options_.message_prefix, run_default_.fallback_note); });
    for (const std::string& text : options_.given_configurations) given_.push_back(given_configuration(text, spec_, space_));
    arch_ = device_.arch_name();
    hash_ = spec_hash(spec_, arch_);
    describe_the_run();
    profile_.add_startup("check spec", lap_.lap());
    // Buffers, the reference outputs and the copy ceiling: on a thread, while this one reads what a resumed run
    // recorded, starts the strategy and the compile pool and submits the first proposals, so the first
    // configurations compile while the worker prepares the device.
    const double before_preparation = elapsed_seconds();
    std::future<void> preparing = std::async(std::launch::async, [this] { measurer_->prepare(space_); });
    std::vector<ProfilePhase> session_phases;  // this thread's, alongside the preparation
    read_what_was_recorded(session_phases);
    start_strategy_and_pool();
    session_phases.push_back({"strategy and compile pool", lap_.lap(), true});
    queue_the_first_configurations();
    session_phases.push_back({"first proposals submitted", lap_.lap(), true});
    lap_.lap();
    preparing.get();  // a spec whose reference fails stops here, having written nothing
    account_for_the_preparation(session_phases, before_preparation);
    prepare_the_other_devices();
  }

  void describe_the_run() {
    report_.kernel = spec_.name;
    for (const Parameter& parameter : spec_.space.parameters) report_.parameter_names.push_back(parameter.name);
    report_.problem = problem_text(spec_);
    report_.device_name = device_.name;
    report_.arch = arch_;
    report_.replay = replay_;
    report_.valid_configurations = space_.valid_count();
    report_.devices = devices_.labels;
  }

  // Records: every evaluation of this run, appended and flushed row by row. A replay writes none unless asked. The
  // file is opened once the device is prepared (a spec whose reference fails writes nothing); what a resumed run
  // recorded before is read now, since the strategy learns from it before it proposes.
  void read_what_was_recorded(std::vector<ProfilePhase>& session_phases) {
    out_dir_ = options_.out_dir;
    if (out_dir_.empty() && !replay_) {
      out_dir_ = std::filesystem::path("results") / "runs" / spec_.name / arch_ / sanitise_for_path(report_.problem);
      if (!options_.device_folder.empty()) out_dir_ /= options_.device_folder;
    }
    if (out_dir_.empty()) return;
    report_.records = out_dir_ / "evaluations.csv";
    if (replay_ && std::filesystem::exists(report_.records) &&
        std::filesystem::equivalent(report_.records, options_.replay_csv))
      throw InputError(fmt::format("--out {} would append to the file being replayed", out_dir_.string()));
    read_run_metadata(report_.records);  // a run.json that cannot be read stops the run before anything is measured
    if (options_.resume) {
      resume_ = load_resume_state(report_.records, spec_.space, hash_);
      report_.skipped_by_resume = resume_->count();
      report_.other_hash_rows = resume_->other_hash_rows();
      session_phases.push_back({"read the records to resume", lap_.lap(), true});
    }
  }

  // A resumed run goes on from what is recorded: the strategy learns from those results and does not propose
  // them again, and they are ranked with this run's.
  void start_strategy_and_pool() {
    strategy_ = make_strategy_with_prior(options_.strategy, space_, options_.seed, prior_transfers());
    for (const Evaluation& evaluation : recorded()) strategy_->tell(evaluation);
    // Several lanes: the strategy learns and proposes on a thread of its own while the loop feeds the lanes from the
    // queue (strategy_runner.h). One lane: inline, so a seed gives one run.
    const bool background = options_.strategy_in_background.value_or(devices_.measurers.size() > 1);
    runner_.emplace(*strategy_, background ? StrategyMode::background : StrategyMode::inline_calls);
    if (measurer_->needs_compilation()) {
      CompilePoolOptions pool_options;
      pool_options.jobs = options_.jobs;
      pool_options.cache_dir = options_.cubin_cache_dir.empty() ? default_cubin_cache_dir() : options_.cubin_cache_dir;
      pool_options.worker_executable =
          options_.worker_executable.empty() ? current_executable() : options_.worker_executable;
      pool_options.use_cache = options_.use_cubin_cache;
      pool_.emplace(pool_options);
    }
    lookahead_ = compile_lookahead(pool_ ? pool_->jobs() : 0, devices_.measurers.size());
  }

  // The prior's configurations valid here, best first (rank_transfers), from --prior files and, unless turned off
  // or replaying, the results database's other records of this kernel.
  std::vector<Configuration> prior_transfers() {
    std::vector<std::filesystem::path> files = options_.prior_files;
    const std::size_t given = files.size();
    if (options_.use_database_prior && !replay_)
      for (std::filesystem::path& file : database_prior_files(options_.prior_database_dir, spec_.name, report_.records))
        files.push_back(std::move(file));
    std::vector<PriorSource> sources;
    for (std::size_t index = 0; index < files.size(); ++index) {
      try {
        sources.push_back(read_prior_source(files[index], spec_.space));
      } catch (const InputError& error) {
        if (index < given) throw;
        fmt::print(stderr, "{}tune: prior: {} is left out ({})\n",
                   options_.message_prefix, files[index].string(), error.what());
      }
    }
    std::vector<Configuration> transfers;
    for (RankedTransfer& transfer : rank_transfers(sources, space_)) transfers.push_back(std::move(transfer.configuration));
    if (transfers.empty()) return transfers;
    for (const PriorSource& source : sources) report_.prior_sources.push_back(source.name);
    report_.prior_transfers = std::min(transfers.size(), PriorSettings{}.transfers);
    if (options_.show_progress)
      fmt::print(stderr, "prior: {} configurations valid here from {} record{}; the best {} are tried first\n",
                 transfers.size(), sources.size(), sources.size() == 1 ? "" : "s", report_.prior_transfers);
    return transfers;
  }

  // The default configuration goes first: every result is reported as a speed-up over it. Then the configuration
  // the best cache holds for this device and problem, stale or not: a short run after an edit of the template
  // measures the old winner again instead of risking a worse entry (replays store nothing). Then the strategy's.
  void queue_the_first_configurations() {
    default_configuration_ = run_default_.values;
    default_is_valid_ = given_.empty();  // with --config the default is not measured
    for (const Evaluation& evaluation : recorded())
      if (default_is_valid_ && evaluation.configuration == default_configuration_) report_.default_evaluation = evaluation;
    if (default_is_valid_) enqueue(default_configuration_);
    if (!replay_ && options_.update_best_cache && given_.empty()) queue_the_stored_configuration();
    for (const Configuration& configuration : given_) enqueue(configuration);
    strategy_exhausted_ = !given_.empty();  // --config: these alone are measured
    refill();
    if (runner_->in_background() && runner_->outstanding() > 0) {  // so that they compile while the device is prepared
      runner_->wait_for_proposals();
      take_proposals();
    }
  }

  void queue_the_stored_configuration() {
    std::optional<KernelDatabase> stored;
    try {
      stored = BestCache(options_.best_cache_dir).read(spec_.name);
    } catch (const InputError& error) {
      fmt::print(stderr, "{}tune: {} (the run goes on; the file is replaced when this run stores its best)\n",
                 options_.message_prefix, error.what());
    }
    Problem problem;
    for (const auto& [symbol, value] : spec_.problem) problem[symbol] = value;
    for (const DatabaseEntry& entry : stored ? stored->entries : std::vector<DatabaseEntry>{}) {
      if (entry.device_name != device_.name || entry.arch != arch_ || entry.problem != problem) continue;
      std::optional<Configuration> previous = configuration_from_values(spec_.space, entry.configuration);
      // An entry stored before a parameter became conditional may hold a value that no longer matters.
      if (previous) previous = space_.canonical(std::move(*previous));
      if (previous && space_.is_valid(*previous)) {
        enqueue(*previous);
        stored_configuration_ = previous;
      }
    }
  }

  // The preparation's phases are the start-up's path; this thread's work ran alongside and counts only where it
  // took longer than the preparation.
  void account_for_the_preparation(std::vector<ProfilePhase>& session_phases, double before_preparation) {
    double prepared_seconds = 0;
    for (ProfilePhase& phase : measurer_->preparation_phases()) {
      if (!phase.alongside) prepared_seconds += phase.seconds;
      profile_.startup.push_back(std::move(phase));
    }
    profile_.startup.insert(profile_.startup.end(), session_phases.begin(), session_phases.end());
    const double preparation_block_seconds = elapsed_seconds() - before_preparation;
    if (preparation_block_seconds > prepared_seconds + 1e-3)
      profile_.add_startup("the session's own start beyond the preparation", preparation_block_seconds - prepared_seconds);
    lap_.lap();
  }

  // The other devices after the primary one, all at once: the reference cubin is in the cache by now.
  void prepare_the_other_devices() {
    if (devices_.measurers.size() > 1) {
      std::vector<std::future<void>> others;
      for (std::size_t index = 1; index < devices_.measurers.size(); ++index)
        others.push_back(std::async(std::launch::async, [this, index] { devices_.measurers[index]->prepare(space_); }));
      for (auto& future : others) future.get();
      profile_.add_startup("prepare the other devices", lap_.lap());
    }
    report_.copy_bandwidth_gbps = measurer_->copy_bandwidth_gbps();
    report_.streamed = spec_.stream.enabled;
    report_.baseline_ms = measurer_->baseline_ms();
    report_.baseline_library = measurer_->baseline_library();
    report_.objective = options_.objective;
  }

  // The ceilings from the cache when this GPU model and driver were measured within a week, else measured and
  // cached; streamed specs also need the pinned host-to-device figure.
  void measure_ceilings() {
    bool ceilings_cached = false;
    if (!replay_ && options_.measure_ceilings) {
      const std::filesystem::path ceiling_dir =
          options_.ceiling_cache_dir.empty() ? default_ceiling_cache_dir() : options_.ceiling_cache_dir;
      const CeilingCacheKey key{device_.name, arch_, measurer_->driver_version()};
      const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      std::optional<CachedCeilings> cached;
      if (!options_.refresh_ceilings) cached = read_cached_ceilings(ceiling_dir, key, now);
      ceilings_cached = cached.has_value();
      if (cached) {
        report_.ceilings = cached->ceilings;
        report_.ceilings_measured_at = cached->measured_at;
        profile_.add_startup("ceilings (cached)", lap_.lap());
      } else {
        measure_and_cache_ceilings(ceiling_dir, key, now);
      }
    }
    if (spec_.stream.enabled && !replay_) {
      if (std::optional<PinnedCopyCeiling> known =
              pinned_copy_ceiling(report_.ceilings, ceilings_cached, report_.ceilings_measured_at)) {
        report_.pinned_copy_in_gbps = known->gbps;
        report_.pinned_copy_in_source = known->source;
      } else {
        report_.pinned_copy_in_gbps = measurer_->measure_pinned_copy_in_gbps();
        report_.pinned_copy_in_source = "measured in this run";
        profile_.add_startup("pinned copy ceiling", lap_.lap());
      }
    }
  }

  void measure_and_cache_ceilings(const std::filesystem::path& ceiling_dir, const CeilingCacheKey& key, double now) {
    report_.ceilings = measurer_->ceilings();
    report_.ceilings_measured_at = now;
    if (!report_.ceilings.failures.empty())
      fmt::print(stderr, "{}tune: ceilings not measured: {}\n", options_.message_prefix, report_.ceilings.failures);
    try {
      if (report_.ceilings.copy_gbps > 0 && report_.ceilings.fma_gflops > 0)
        write_cached_ceilings(ceiling_dir, key, {report_.ceilings, now});
    } catch (const TunerError& error) {
      fmt::print(stderr, "{}tune: the ceilings are not cached ({}); the next run measures them again\n",
                 options_.message_prefix, error.what());
    }
    // Each ceiling's part, and what the worker's parts leave of the wall time (the round trip, the cache file).
    const double ceilings_seconds = lap_.lap();
    double parts_seconds = 0;
    for (ProfilePhase& phase : measurer_->ceiling_phases()) {
      parts_seconds += phase.seconds;
      profile_.startup.push_back(std::move(phase));
    }
    profile_.add_startup(parts_seconds > 0 ? "ceilings: the rest" : "ceilings", std::max(ceilings_seconds - parts_seconds, 0.0));
  }

  void open_records() {
    if (!out_dir_.empty()) {
      std::filesystem::create_directories(out_dir_);
      writer_.emplace(report_.records, spec_.space, run_metadata());  // also adds this run to run.json
      report_.torn_row_file = writer_->torn_row_file();
      report_.record_added_columns = writer_->added_columns();
    }
    profile_.add_startup("open records", lap_.lap());
  }

  RunMetadata run_metadata() const {
    RunMetadata metadata;
    metadata.kernel = spec_.name;
    metadata.spec_hash = hash_;
    metadata.gpu_name = device_.name;
    metadata.arch = arch_;
    metadata.driver_version = measurer_->driver_version();
    metadata.nvrtc_version = nvrtc_version();
    metadata.project_version = KERNLATHE_VERSION;
    metadata.build_commit = build_commit();
    metadata.problem = report_.problem;
    metadata.strategy = options_.strategy;
    metadata.started_at = iso8601_now();
    if (replay_) metadata.extra["replay_of"] = options_.replay_csv.string();
    if (report_.copy_bandwidth_gbps > 0)
      metadata.extra["copy_bandwidth_gbps"] = fmt::format("{:.1f}", report_.copy_bandwidth_gbps);
    for (const auto& [key, value] : ceiling_metadata(report_.ceilings)) metadata.extra[key] = value;
    if (report_.ceilings_measured_at > 0)
      metadata.extra["ceilings_measured_at"] = fmt::format("{:.0f}", report_.ceilings_measured_at);
    metadata.extra["objective"] = std::string(objective_name(options_.objective));
    if (!run_default_.fallback_note.empty()) metadata.extra["default_configuration"] = run_default_.fallback_note;
    if (!given_.empty())
      metadata.extra["given_configurations"] = fmt::format("{}", fmt::join(options_.given_configurations, " "));
    if (!report_.prior_sources.empty())
      metadata.extra["prior"] = fmt::format("{} configurations first, from {}", report_.prior_transfers,
                                            fmt::join(report_.prior_sources, "; "));
    if (devices_.labels.size() > 1) metadata.extra["devices"] = fmt::format("{}", fmt::join(devices_.labels, ","));
    if (report_.pinned_copy_in_gbps > 0)
      metadata.extra["pinned_copy_in_gbps"] = fmt::format("{:.1f}", report_.pinned_copy_in_gbps);
    if (!report_.pinned_copy_in_source.empty()) metadata.extra["pinned_copy_in_source"] = report_.pinned_copy_in_source;
    if (report_.baseline_ms > 0) {
      metadata.extra["baseline_ms"] = fmt::format("{:.6g}", report_.baseline_ms);
      metadata.extra["baseline_library"] = report_.baseline_library;
    }
    return metadata;
  }

  // ---- Queue and lanes --------------------------------------------------------------------------------------

  void enqueue(const Configuration& configuration) {
    if (!seen_.insert(configuration_key(spec_.space, configuration)).second) return;
    if (resume_ && resume_->contains(configuration)) return;  // a strategy that ignores results may propose it
    QueuedConfiguration item{configuration, std::nullopt};
    if (pool_) item.compiled = pool_->submit(instantiate(spec_, space_, configuration, device_arch()));
    pending_.push(std::move(item));
  }

  // Asks for what the queue lacks of the lookahead, counting what was asked and not yet answered. Inline, the
  // answers come at once, and a configuration already queued (the default) is asked for again; in the background
  // the next refill does that.
  void refill() {
    take_proposals();
    while (!strategy_exhausted_ && !runner_->exhausted() && pending_.size() + runner_->outstanding() < lookahead_) {
      runner_->request(lookahead_ - pending_.size() - runner_->outstanding());
      if (runner_->in_background()) return;
      take_proposals();
    }
  }

  void take_proposals() {
    for (const Configuration& configuration : runner_->take()) enqueue(configuration);
  }

  // An idle lane waits for the strategy: nothing is queued for it, the budget is not spent and proposals are coming.
  bool lanes_wait_for_strategy() const {
    return pending_.empty() && again_.empty() && lanes_->idle() > 0 && within_budget() && runner_->outstanding() > 0;
  }

  // The next compiled configuration as a lane's job, or nullopt when it failed to compile (its row is ready at once).
  std::optional<LaneJob> next_job() {
    lap_.lap();
    std::optional<QueuedConfiguration> ready = pending_.take_ready();
    if (!ready) {
      lanes_->set_activity(LoopActivity::compilation);
      ready = pending_.take_next();
      lanes_->set_activity(LoopActivity::loop);
    }
    QueuedConfiguration item = std::move(*ready);
    LaneJob job;
    job.id = next_job_id_++;
    job.configuration = std::move(item.configuration);
    job.measure_energy = energy_in_search_;
    if (!item.compiled) {
      lap_.lap();
      return job;
    }
    job.compiled = item.compiled->get();
    profile_.compile_wait_seconds += lap_.lap();
    const CompileResult& compiled = *job.compiled;
    if (compiled.ok) return job;
    Evaluation evaluation;
    evaluation.configuration = job.configuration;
    evaluation.status = Status::compile_error;
    evaluation.message = compiled.error.empty() ? "compilation failed" : compiled.error;
    evaluation.compile_ms = compiled.compile_ms;
    if (!compile_logs_.empty() && !compiled.key.empty()) {
      std::filesystem::create_directories(compile_logs_);
      const auto log_file = compile_logs_ / (compiled.key + ".log");
      std::ofstream(log_file) << compiled.log;
      evaluation.message += fmt::format(" (full log: {})", log_file.string());
    }
    ready_.push_back(std::move(evaluation));
    return std::nullopt;
  }

  // Whether another configuration may start: not past the evaluation budget counting those not yet recorded.
  bool within_budget() const {
    const std::uint64_t coming = report_.evaluated + ready_.size() + lanes_->busy() + again_.size();
    return !options_.stop.max_evaluations || coming < *options_.stop.max_evaluations;
  }

  void fill_lanes() {
    while (lanes_->idle() > 0) {
      if (!again_.empty()) {  // already counted against the budget
        lanes_->submit(again_.front());
        again_.pop_front();
        continue;
      }
      if (pending_.empty() || !within_budget()) return;
      if (std::optional<LaneJob> job = next_job()) {
        if (profile_.first_request_seconds == 0) profile_.first_request_seconds = elapsed_seconds();
        lanes_->submit(*job);
      }
    }
  }

  // One result from the lanes into `ready_`, or its job back into `again_`.
  void take_outcome() {
    lap_.lap();
    lanes_->set_activity(LoopActivity::results);
    LaneOutcome outcome = lanes_->wait();
    lanes_->set_activity(LoopActivity::loop);
    profile_.evaluate_seconds += lap_.lap();
    LaneJob& job = outcome.job;
    const std::string& label = lanes_->label(outcome.lane);
    if (!outcome.evaluation) {
      report_.lost_devices.push_back(fmt::format("{}: {}", label, outcome.lost_reason));
      if (lanes_->alive() == 0)
        throw TunerError(fmt::format("every device of the run was lost; the last, {}: {}", label, outcome.lost_reason));
      fmt::print(stderr, "{}tune: device {} was lost ({}); its configuration goes to another device\n",
                 options_.message_prefix, label, outcome.lost_reason);
      job.lanes_tried.push_back(outcome.lane);
      job.earlier_failure = fmt::format("device {} was lost during it: {}", label, outcome.lost_reason);
      again_.push_back(std::move(job));
      return;
    }
    Evaluation evaluation = std::move(*outcome.evaluation);
    // A dead worker is the configuration's fault or the device's (a killed worker, a GPU that fell off the bus):
    // with another device at hand, that one measures it again and its result is recorded.
    if (evaluation.status == Status::crashed && job.lanes_tried.empty() && lanes_->alive() > 1) {
      job.lanes_tried.push_back(outcome.lane);
      job.earlier_failure = fmt::format("the worker on device {} died during it: {}", label, evaluation.message);
      again_.push_back(std::move(job));
      return;
    }
    if (!job.earlier_failure.empty())
      evaluation.message += (evaluation.message.empty() ? "" : "; ") + fmt::format("measured again: {}", job.earlier_failure);
    if (job.compiled) {
      evaluation.compile_ms = job.compiled->compile_ms;
      evaluation.cubin_cached = job.compiled->cached;
    }
    ready_.push_back(std::move(evaluation));
  }

  // The lanes (measurement_lanes.h): each device measures a configuration while the loop records the results that
  // came back, tells the strategy and asks it for more. A configuration that failed to compile needs no GPU and is
  // ready at once.
  void search() {
    planned_ = space_.valid_count() > report_.skipped_by_resume ? space_.valid_count() - report_.skipped_by_resume : 0;
    if (options_.stop.max_evaluations) planned_ = std::min<std::uint64_t>(planned_, *options_.stop.max_evaluations);
    for (const Evaluation& evaluation : recorded())
      if (evaluation.ok() && evaluation.time.median_ms > 0 && (best_ms_ == 0 || evaluation.time.median_ms < best_ms_))
        best_ms_ = evaluation.time.median_ms;
    compile_logs_ = out_dir_.empty() ? std::filesystem::path() : out_dir_ / "compile_logs";
    // Energy costs a few counter periods per configuration (tuner/measure/kernel_timer.h): in the search only when
    // asked for every row; the final round measures it unless it is off.
    energy_in_search_ = (measurement_.energy == EnergyMeasurement::always ||
                         (measurement_.energy == EnergyMeasurement::automatic && options_.objective != Objective::time)) &&
                        !spec_.stream.enabled;
    energy_in_final_round_ = measurement_.energy != EnergyMeasurement::off && !spec_.stream.enabled;
    for (const auto& lane_measurer : devices_.measurers) lane_measurers_.push_back(lane_measurer.get());
    lanes_.emplace(lane_measurers_, devices_.labels, space_);
    StopTracker stop(options_.stop);
    while (true) {
      if (runner_->in_background()) refill();  // what the strategy answered meanwhile, and asks for what is missing
      fill_lanes();
      if (ready_.empty()) {
        if (lanes_wait_for_strategy()) {
          wait_for_the_strategy();
          continue;
        }
        if (lanes_->busy() == 0) {
          // The strategy's thread may have answered since the refill above, after the wait's check saw nothing
          // outstanding: those proposals are not queued yet, and ending here would drop them.
          take_proposals();
          if (!pending_.empty() && within_budget() && lanes_->idle() > 0) continue;
          break;
        }
        take_outcome();
        continue;  // the lane that finished starts its next configuration before this result is processed
      }
      Evaluation evaluation = std::move(ready_.front());
      ready_.pop_front();
      record_result(std::move(evaluation), stop);
      if (stop.should_stop()) {
        report_.stop_reason = stop.reason();
        break;
      }
      lap_.lap();
      lanes_->set_activity(LoopActivity::strategy);
      refill();
      lanes_->set_activity(LoopActivity::loop);
      profile_.strategy_seconds += lap_.lap();
    }
    profile_.lanes = lanes_->stop_counting();
    runner_->stop();
    profile_.strategy = runner_->times();
    profile_.strategy_in_background = runner_->in_background();
  }

  void wait_for_the_strategy() {
    lap_.lap();
    lanes_->set_activity(LoopActivity::strategy);
    runner_->wait_for_proposals();
    lanes_->set_activity(LoopActivity::loop);
    profile_.strategy_seconds += lap_.lap();
  }

  // One result: its row written, the strategy and the stop condition told, the counts and the progress line.
  void record_result(Evaluation evaluation, StopTracker& stop) {
    const WorkerStageTimes& stages = evaluation.worker_stages;
    profile_.worker.preparation_ms += stages.preparation_ms;
    profile_.worker.verification_ms += stages.verification_ms;
    profile_.worker.warmup_ms += stages.warmup_ms;
    profile_.worker.sampling_ms += stages.sampling_ms;
    profile_.worker.conditions_ms += stages.conditions_ms;
    profile_.worker.energy_ms += stages.energy_ms;
    if (profile_.evaluations++ == 0) profile_.first_result_seconds = elapsed_seconds();
    if (evaluation.timestamp == 0)
      evaluation.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (options_.objective != Objective::time && !replay_) {
      evaluation.objective = objective_value(evaluation, options_.objective);
      // An ok row without an energy figure would rank by time among rows ranked by energy.
      if (evaluation.ok() && evaluation.objective <= 0)
        throw NoGpuError(fmt::format("--objective {} needs energy per launch, and this GPU gave none (NVML's energy "
                                     "counter is missing: a GPU older than Volta, or no NVML)",
                                     objective_name(options_.objective)));
    }
    lap_.lap();
    lanes_->set_activity(LoopActivity::records);
    if (writer_) writer_->append(evaluation, hash_);
    profile_.record_seconds += lap_.lap();
    lanes_->set_activity(LoopActivity::strategy);
    runner_->tell(evaluation);
    lanes_->set_activity(LoopActivity::loop);
    profile_.strategy_seconds += lap_.lap();
    stop.record(evaluation, elapsed_seconds());
    ++report_.evaluated;
    ++report_.status_counts[std::string(status_name(evaluation.status))];
    if (!evaluation.ok()) {
      ++failed_;
    } else if (best_ms_ == 0 || evaluation.time.median_ms < best_ms_) {
      best_ms_ = evaluation.time.median_ms;
    }
    if (default_is_valid_ && evaluation.configuration == default_configuration_) report_.default_evaluation = evaluation;
    results_.push_back(std::move(evaluation));
    progress_.update(report_.evaluated, planned_, failed_, best_ms_, elapsed_seconds());
  }

  // Measurements started before the stop are collected, so the workers are free for the final round; past the
  // budget they are neither recorded nor ranked. The final round runs on one device: the primary one, or the first
  // still there.
  void collect_the_lanes() {
    while (lanes_->busy() > 0) lanes_->wait();
    for (std::size_t lane = 0; lane < lanes_->size(); ++lane) {
      if (lanes_->lost(lane)) continue;
      measurer_ = lane_measurers_[lane];
      break;
    }
    for (const Evaluation& evaluation : results_) ++report_.evaluations_per_device[evaluation.device];
    if (report_.stop_reason.empty()) report_.stop_reason = "space exhausted";
    report_.seconds = elapsed_seconds();
    report_.evaluations_per_second = report_.seconds > 0 ? report_.evaluated / report_.seconds : 0;
    progress_.update(report_.evaluated, planned_, failed_, best_ms_, report_.seconds, /*final_update=*/true);
    record_the_search_profile();
  }

  // What the lanes waited for and what the strategy cost go into run.json beside the run's other facts.
  void record_the_search_profile() {
    if (!writer_) return;
    try {
      add_to_last_run(report_.records, profile_metadata(profile_));
    } catch (const TunerError& error) {
      fmt::print(stderr, "{}tune: the search profile is not in run.json ({})\n", options_.message_prefix, error.what());
    }
  }

  // ---- Ranking and final round ------------------------------------------------------------------------------

  // The verified results: this run's and, resumed, those recorded before under the same spec hash (never the same
  // configuration twice: a resumed run does not measure a recorded one again).
  void rank_verified() {
    const auto add_verified = [this](const std::vector<Evaluation>& evaluations) {
      for (const Evaluation& evaluation : evaluations)
        if (evaluation.ok() && evaluation.time.median_ms > 0) ok_.push_back(&evaluation);
    };
    add_verified(recorded());
    add_verified(results_);
    std::stable_sort(ok_.begin(), ok_.end(),
                     [](const Evaluation* a, const Evaluation* b) { return search_value(*a) < search_value(*b); });
  }

  const FinalFigures* complete_final_figures(const Configuration& configuration) const {
    auto found = final_figures_.find(configuration_key(spec_.space, configuration));
    return found != final_figures_.end() && found->second.complete ? &found->second : nullptr;
  }

  // The search's best, the default and the stored configuration measured again, interleaved, so the ranking and
  // what is stored compare figures taken side by side rather than minutes apart.
  void final_round() {
    lap_.lap();
    if (!replay_ && options_.final_candidates > 0 && options_.final_rounds > 0 && !ok_.empty()) {
      choose_final_candidates();
      measure_the_final_round();
      rank_by_the_final_round();
      measure_the_sustained_figures();
    }
    profile_.final_round_seconds = lap_.lap();
  }

  // The winner's and the baseline's sustained figures, beside the final round's burst figures that rank. Not for
  // streamed specs (a pass is the figure) or objectives other than time.
  void measure_the_sustained_figures() {
    if (ok_.empty() || options_.objective != Objective::time || spec_.stream.enabled) return;
    const Configuration& winner = ok_.front()->configuration;
    std::optional<CompileResult> compiled;
    if (pool_) {
      compiled = pool_->submit(instantiate(spec_, space_, winner, device_arch())).get();
      if (!compiled->ok) return;
    }
    if (options_.show_progress)
      fmt::print(stderr, "sustained figures: the winner{} back to back for {} s each\n",
                 report_.baseline_ms > 0 ? " and the baseline" : "", sustained_seconds);
    report_.sustained_ms = measurer_->sustained_ms(&winner, compiled ? &*compiled : nullptr, space_);
    if (report_.baseline_ms > 0) report_.baseline_sustained_ms = measurer_->sustained_ms(nullptr, nullptr, space_);
  }

  void choose_final_candidates() {
    const auto add_candidate = [this](const Configuration& configuration) {
      if (std::find(candidates_.begin(), candidates_.end(), configuration) == candidates_.end())
        candidates_.push_back(configuration);
    };
    for (std::size_t rank = 0; rank < ok_.size() && rank < static_cast<std::size_t>(options_.final_candidates); ++rank)
      add_candidate(ok_[rank]->configuration);
    for (const Evaluation* evaluation : ok_) {
      if ((default_is_valid_ && evaluation->configuration == default_configuration_) ||
          (stored_configuration_ && evaluation->configuration == *stored_configuration_))
        add_candidate(evaluation->configuration);
    }
    // The baseline joins the candidates as the last one: timed in the same rounds, so the reported fractions of
    // cuBLAS compare figures taken side by side (it was timed once, cool, at setup).
    baseline_in_round_ = report_.baseline_ms > 0;
  }

  // One final-round measurement, after the GPU rested (Measurer::rest): every figure of the round is a burst figure,
  // however long the measurement before it kept the GPU busy.
  Evaluation measure_again(std::size_t index, bool with_energy) {
    measurer_->rest();
    if (baseline_in_round_ && index == candidates_.size()) return measurer_->measure_baseline(with_energy);
    const Configuration& configuration = candidates_[index];
    if (!pool_) return measurer_->measure(configuration, nullptr, space_, with_energy);
    // Compiled before in this run: the cubin cache answers (or the pool compiles it again with the cache off).
    CompileResult compiled = pool_->submit(instantiate(spec_, space_, configuration, device_arch())).get();
    if (!compiled.ok) {
      Evaluation failed;
      failed.configuration = configuration;
      failed.status = Status::compile_error;
      failed.message = compiled.error;
      return failed;
    }
    return measurer_->measure(configuration, &compiled, space_, with_energy);
  }

  void measure_the_final_round() {
    const std::size_t measured_count = candidates_.size() + (baseline_in_round_ ? 1 : 0);
    std::size_t done = 0;
    // Energy in every round where the objective ranks by it. With the time objective it is reported, not ranked
    // on, and each figure costs 0.1-0.3 s: only the winner's is measured, once, after the rounds.
    energy_rounds_ = energy_in_final_round_ && options_.objective != Objective::time ? options_.final_rounds : 0;
    // Sized by the noise (final_round.h): at least --final-rounds, more while the leader is undecided, up to
    // --final-max-rounds. Ranked by energy, the rounds are fixed: the stopping rule reads times.
    FinalRoundPlan plan;
    plan.min_rounds = options_.final_rounds;
    plan.max_rounds = energy_rounds_ > 0 ? options_.final_rounds : std::max(options_.final_rounds, options_.final_max_rounds);
    plan.contends.assign(measured_count, true);
    if (baseline_in_round_) plan.contends.back() = false;  // timed in every round, never the winner
    plan.energy_every_round = energy_rounds_ > 0;
    if (options_.show_progress)
      fmt::print(stderr, "final round: {} configurations{} x {}-{} rounds, interleaved, until the leader is decided\n",
                 candidates_.size(), baseline_in_round_ ? " and the baseline" : "", plan.min_rounds, plan.max_rounds);
    FinalRoundOutcome outcome = run_final_round_sized(
        measured_count, plan, [this](std::size_t index, bool with_energy) { return measure_again(index, with_energy); },
        [&](int round, std::size_t) {
          ++done;
          if (options_.show_progress) fmt::print(stderr, "\rfinal round: round {}, {} measurements", round + 1, done);
        });
    std::vector<FinalFigures>& figures = outcome.figures;
    report_.final_round_stop = outcome.stopped_because;
    report_.final_round_confidence = outcome.confidence;
    report_.final_round_worst_regret = outcome.worst_regret;
    if (options_.show_progress) fmt::print(stderr, "\n");
    report_.final_rounds = outcome.rounds;
    if (baseline_in_round_) {
      FinalFigures& baseline = figures[candidates_.size()];
      if (baseline.complete) {
        report_.baseline_search_ms = report_.baseline_ms;
        report_.baseline_ms = baseline.mean_ms;
        report_.baseline_final_round = baseline;
      } else {
        fmt::print(stderr, "{}tune: the baseline left the final round ({}); its setup figure stays\n",
                   options_.message_prefix, baseline.failure);
      }
    }
    for (std::size_t index = 0; index < candidates_.size(); ++index) {
      if (!figures[index].complete)
        fmt::print(stderr, "{}tune: {} left the final round ({})\n",
                   options_.message_prefix, to_string(spec_.space, candidates_[index]), figures[index].failure);
      final_figures_.emplace(configuration_key(spec_.space, candidates_[index]), std::move(figures[index]));
    }
  }

  // The final round's figure of what the run minimises: the mean time, or the mean energy (times the mean time
  // for edp); a candidate without energy in every round ranks after those with it.
  double final_value(const FinalFigures& figures) const {
    switch (options_.objective) {
      case Objective::time: return figures.mean_ms;
      case Objective::energy: return figures.energy_mj;
      case Objective::edp: return figures.energy_mj * figures.mean_ms;
    }
    return figures.mean_ms;
  }

  // Configurations with a complete final round rank first, by its figure; the rest after them, as the search had it.
  void rank_by_the_final_round() {
    const auto ranked_in_final = [this](const Evaluation* evaluation) -> const FinalFigures* {
      const FinalFigures* figures = complete_final_figures(evaluation->configuration);
      return figures != nullptr && final_value(*figures) > 0 ? figures : nullptr;
    };
    std::stable_sort(ok_.begin(), ok_.end(), [&](const Evaluation* a, const Evaluation* b) {
      const FinalFigures* fa = ranked_in_final(a);
      const FinalFigures* fb = ranked_in_final(b);
      if ((fa != nullptr) != (fb != nullptr)) return fa != nullptr;
      return fa ? final_value(*fa) < final_value(*fb) : search_value(*a) < search_value(*b);
    });
    if (energy_in_final_round_ && energy_rounds_ == 0 && !ok_.empty()) measure_the_winners_energy();
    if (report_.default_evaluation) {
      if (const FinalFigures* figures_of_default = complete_final_figures(report_.default_evaluation->configuration)) {
        report_.default_evaluation->time.median_ms = figures_of_default->mean_ms;
        report_.default_final_round = *figures_of_default;
      }
    }
  }

  void measure_the_winners_energy() {
    const auto winner = final_figures_.find(configuration_key(spec_.space, ok_.front()->configuration));
    const auto position = std::find(candidates_.begin(), candidates_.end(), ok_.front()->configuration);
    if (winner == final_figures_.end() || !winner->second.complete || position == candidates_.end()) return;
    const Evaluation measured = measure_again(static_cast<std::size_t>(position - candidates_.begin()), true);
    if (measured.ok() && measured.energy_mj > 0) {
      FinalFigures& figures = winner->second;
      figures.round_energy_mj = {measured.energy_mj};
      figures.energy_mj = figures.energy_low_mj = figures.energy_high_mj = measured.energy_mj;
    }
  }

  // The median of the verified results and the best five with their figures.
  void report_the_best() {
    if (!ok_.empty()) {
      std::vector<double> times;
      for (const Evaluation* evaluation : ok_) times.push_back(evaluation->time.median_ms);
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      report_.median_time_ms = times[times.size() / 2];
    }
    for (std::size_t rank = 0; rank < ok_.size() && rank < 5; ++rank) {
      RankedResult ranked;
      ranked.evaluation = *ok_[rank];
      ranked.search_median_ms = ranked.evaluation.time.median_ms;
      if (const FinalFigures* figures = complete_final_figures(ranked.evaluation.configuration)) {
        ranked.final_round = *figures;
        ranked.evaluation.time.median_ms = figures->mean_ms;
      }
      const double seconds = ranked.evaluation.time.median_ms * 1e-3;
      ranked.gflops = evaluate_metric(spec_.metrics.flops, space_, ranked.evaluation.configuration) / seconds / 1e9;
      ranked.gbps = evaluate_metric(spec_.metrics.bytes, space_, ranked.evaluation.configuration) / seconds / 1e9;
      if (report_.default_evaluation && report_.default_evaluation->ok())
        ranked.speedup_over_default = report_.default_evaluation->time.median_ms / ranked.evaluation.time.median_ms;
      if (report_.median_time_ms > 0) ranked.speedup_over_median = report_.median_time_ms / ranked.evaluation.time.median_ms;
      if (report_.copy_bandwidth_gbps > 0 && ranked.gbps > 0) ranked.fraction_of_ceiling = ranked.gbps / report_.copy_bandwidth_gbps;
      if (report_.baseline_ms > 0) ranked.fraction_of_baseline = report_.baseline_ms / ranked.evaluation.time.median_ms;
      report_.best.push_back(std::move(ranked));
    }
  }

  // ---- Storing ----------------------------------------------------------------------------------------------

  // The best configuration per kernel, arch and problem, for applications to ship. Replays never write it. The
  // runtime picks configurations by time, so a run that minimised energy leaves the cache alone. The keep-or-replace
  // rule is the best cache's (decide_keep_or_replace).
  void store_the_best() {
    if (replay_ || !options_.update_best_cache || options_.objective != Objective::time || report_.best.empty()) return;
    const RankedResult& winner = report_.best.front();
    const FinalFigures* stored_figures =
        stored_configuration_ ? complete_final_figures(*stored_configuration_) : nullptr;
    const auto side_by_side = [](const FinalFigures* figures) -> std::optional<SideBySideTime> {
      if (figures == nullptr) return std::nullopt;
      return SideBySideTime{figures->mean_ms, figures->low_ms, figures->high_ms};
    };
    const KeepOrReplace decision =
        decide_keep_or_replace(side_by_side(winner.final_round ? &*winner.final_round : nullptr),
                               winner.final_round ? side_by_side(stored_figures) : std::nullopt,
                               stored_configuration_ && winner.evaluation.configuration == *stored_configuration_);
    report_.best_cache_decision = decision.reason;
    const bool keep = decision.store == KeepOrReplace::Store::stored_configuration;
    const DatabaseEntry entry = keep ? kept_entry(*stored_configuration_, *stored_figures)
                                     : entry_of(winner.evaluation.configuration, winner.evaluation.time.median_ms,
                                                winner.final_round ? &*winner.final_round : nullptr, &winner);
    report_.best_cache_updated =
        BestCache(options_.best_cache_dir).update(describe_kernel(spec_, space_), entry, decision.replace);
    report_.best_cache_dir = options_.best_cache_dir;
  }

  // After a final round the time is the mean of its rounds; spread: the width of its 95% interval relative to it;
  // samples: the rounds.
  // The stored configuration kept, with its figures of this final round.
  DatabaseEntry kept_entry(const Configuration& configuration, const FinalFigures& figures) const {
    DatabaseEntry entry = entry_of(configuration, figures.mean_ms, &figures, nullptr);
    const double seconds = figures.mean_ms * 1e-3;
    entry.gflops = evaluate_metric(spec_.metrics.flops, space_, configuration) / seconds / 1e9;
    entry.gbps = evaluate_metric(spec_.metrics.bytes, space_, configuration) / seconds / 1e9;
    return entry;
  }

  DatabaseEntry entry_of(const Configuration& configuration, double time_ms, const FinalFigures* figures,
                         const RankedResult* ranked) const {
    DatabaseEntry entry;
    entry.device_name = device_.name;
    entry.arch = arch_;
    entry.driver = measurer_->driver_version();
    for (const auto& [symbol, value] : spec_.problem) entry.problem[symbol] = value;
    entry.configuration = configuration_values(spec_.space, configuration);
    if (ranked) {
      const Evaluation& best = ranked->evaluation;
      entry.time = {best.time.median_ms, best.time.relative_spread, best.time.samples};
      entry.gflops = ranked->gflops;
      entry.gbps = ranked->gbps;
    } else {
      entry.time.median_ms = time_ms;
    }
    if (figures)
      entry.time = {figures->mean_ms, figures->mean_ms > 0 ? (figures->high_ms - figures->low_ms) / figures->mean_ms : 0,
                    static_cast<int>(figures->round_ms.size())};
    entry.date = iso8601_now();
    entry.spec_hash = spec_hash(spec_);
    entry.tool_version = KERNLATHE_VERSION;
    return entry;
  }

  // What the run was given.
  const TuneOptions& options_;
  const KernelSpec& spec_;
  const MeasurementSettings& measurement_;
  DeviceSet devices_;
  RunProfile profile_;
  LapClock lap_;
  Clock::time_point started_;
  const bool replay_;
  // The first device is the primary one: it runs the reference first, measures the ceilings and, at the end, the
  // final round, so that the figures compared there come from one GPU.
  Measurer* measurer_;
  const DeviceProperties& device_;
  SpaceEnumerator space_;
  std::string arch_;
  std::string hash_;
  TuneReport report_;

  // Start-up.
  std::filesystem::path out_dir_;
  std::optional<ResumeState> resume_;
  const std::vector<Evaluation> no_evaluations_;
  std::unique_ptr<Strategy> strategy_;
  std::optional<StrategyRunner> runner_;  // drives strategy_ (after it in the members: it goes first)
  std::optional<CompilePool> pool_;
  std::size_t lookahead_ = 0;
  Configuration default_configuration_;
  bool default_is_valid_ = false;
  std::optional<Configuration> stored_configuration_;  // the best cache's configuration for this device and problem
  std::optional<RecordWriter> writer_;

  // Queue and lanes.
  CompileQueue pending_;  // proposed, compiling or compiled, not yet measured
  std::unordered_set<std::string> seen_;
  bool strategy_exhausted_ = false;
  RunDefault run_default_;             // the space's default for this problem, the declared one, or the first valid one
  std::vector<Configuration> given_;   // --config: these alone are measured
  std::vector<Measurer*> lane_measurers_;
  std::optional<MeasurementLanes> lanes_;
  std::deque<Evaluation> ready_;
  std::deque<LaneJob> again_;  // to measure on another lane: theirs was lost, or its worker died during them
  std::uint64_t next_job_id_ = 0;
  std::uint64_t planned_ = 0;
  std::uint64_t failed_ = 0;
  double best_ms_ = 0;
  std::filesystem::path compile_logs_;
  bool energy_in_search_ = false;
  bool energy_in_final_round_ = false;
  ProgressLine progress_;
  std::vector<Evaluation> results_;

  // Ranking and final round.
  std::vector<const Evaluation*> ok_;
  std::vector<Configuration> candidates_;
  bool baseline_in_round_ = false;
  int energy_rounds_ = 0;
  std::map<std::string, FinalFigures> final_figures_;  // by configuration key
};

TuneReport run_session(const TuneOptions& options, const KernelSpec& spec, const MeasurementSettings& measurement,
                       DeviceSet devices, RunProfile profile, LapClock lap, Clock::time_point started) {
  return TuningRun(options, spec, measurement, std::move(devices), std::move(profile), lap, started).run();
}

}  // namespace

}  // namespace kernlathe
