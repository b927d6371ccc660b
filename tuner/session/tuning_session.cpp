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
#include "tuner/session/final_round.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/compile/compile_pool.h"
#include "tuner/compile/instantiate.h"
#include "tuner/measure/ceiling_cache.h"
#include "tuner/nvrtc/cubin_cache.h"
#include "tuner/nvrtc/nvrtc_compiler.h"
#include "tuner/record/build_commit.h"
#include "tuner/record/csv_record.h"
#include "tuner/common/hash.h"
#include "tuner/record/run_metadata.h"
#include "tuner/search/strategy.h"
#include "tuner/space/configuration_checks.h"
#include "tuner/session/measurement_lanes.h"
#include "tuner/session/measurer.h"

namespace kernlathe {
namespace {

using Clock = std::chrono::steady_clock;

std::string read_whole_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

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

struct PendingEvaluation {
  Configuration configuration;
  std::optional<std::future<CompileResult>> compiled;
};

}  // namespace

double evaluate_metric(const Expression& expression, const SpaceEnumerator& space, const Configuration& config) {
  if (expression.empty()) return 0;
  Expression bound = expression;
  Bindings bindings = space.bindings(config);
  bound.bind(bindings.scope);
  return bound.evaluate_number(bindings.slots);
}

std::string problem_text(const KernelSpec& spec) {
  std::string text;
  for (const auto& [symbol, value] : spec.problem) {
    if (!text.empty()) text += ",";
    text += fmt::format("{}={}", symbol, value);
  }
  return text;
}

std::string spec_hash(const KernelSpec& spec, const std::string& arch) {
  const std::string spec_text = read_whole_file(spec.file);
  const std::string space_text = spec.space.file.empty() ? "" : read_whole_file(spec.space.file);
  // The template with every file it includes: editing a header the template reaches makes earlier records stale.
  const std::string template_identity = template_hash(read_template_source(spec.template_file));
  return content_hash({spec_text, space_text, template_identity, problem_text(spec), arch});
}

Constants run_constants(const KernelSpec& spec, const DeviceProperties& device) {
  Constants constants = device_property_values(device);
  for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, Value{value});
  return constants;
}

std::filesystem::path current_executable() { return std::filesystem::read_symlink("/proc/self/exe"); }

std::unique_ptr<Measurer> open_measurer(const KernelSpec& spec, const TuneOptions& options,
                                        const MeasurementSettings& measurement, int device) {
  if (!options.replay_csv.empty()) {
    if (!options.replay_arch.empty())
      return make_replay_measurer(spec, options.replay_csv, device_profile(options.replay_arch));
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
    return make_replay_measurer(spec, options.replay_csv, *recorded);
  }
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
  profile.process_start_seconds = seconds_since_process_start();
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

TuneReport run_session(const TuneOptions& options, const KernelSpec& spec, const MeasurementSettings& measurement,
                       DeviceSet devices, RunProfile profile, LapClock lap, Clock::time_point started) {
  const auto elapsed_seconds = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  const bool replay = !options.replay_csv.empty();
  const std::filesystem::path worker =
      options.worker_executable.empty() ? current_executable() : options.worker_executable;
  const std::filesystem::path cubin_cache =
      options.cubin_cache_dir.empty() ? default_cubin_cache_dir() : options.cubin_cache_dir;
  // The first device is the primary one: it runs the reference first, measures the ceilings and, at the end,
  // the final round, so that the figures compared there come from one GPU.
  Measurer* measurer = devices.measurers.front().get();
  const DeviceProperties& device = measurer->device();
  SpaceEnumerator space(spec.space, run_constants(spec, device));
  profile.add_startup("enumerate space", lap.lap());
  // What `tune validate` checks with a profile, checked again with this device's properties before anything is
  // compiled or measured: a reference configuration that breaks the constraints, unusable buffer counts,
  // launch geometry or shared memory stop the run here with exit 2, not on the GPU host later.
  check_spec_configurations(spec, space);
  const RunDefault run_default = run_default_configuration(spec, space);
  static std::once_flag default_note_said;  // several models run a session each: the note is said once
  if (!run_default.fallback_note.empty())
    std::call_once(default_note_said, [&] { fmt::print(stderr, "tune: note: {}\n", run_default.fallback_note); });
  std::vector<Configuration> given;  // --config: these alone are measured
  for (const std::string& text : options.given_configurations) given.push_back(given_configuration(text, spec, space));
  const std::string arch = device.arch_name();
  const std::string hash = spec_hash(spec, arch);

  TuneReport report;
  report.kernel = spec.name;
  for (const Parameter& parameter : spec.space.parameters) report.parameter_names.push_back(parameter.name);
  report.problem = problem_text(spec);
  report.device_name = device.name;
  report.arch = arch;
  report.replay = replay;
  report.valid_configurations = space.valid_count();
  report.devices = devices.labels;

  profile.add_startup("check spec", lap.lap());
  // Buffers, the reference outputs and the copy ceiling: on a thread, while this one reads what a resumed run
  // recorded, starts the strategy and the compile pool and submits the first proposals, so the first
  // configurations compile while the worker prepares the device.
  const double before_preparation = elapsed_seconds();
  std::future<void> preparing = std::async(std::launch::async, [&] { measurer->prepare(space); });
  std::vector<ProfilePhase> session_phases;  // this thread's, alongside the preparation
  // Records: every evaluation of this run, appended and flushed row by row. A replay writes none unless asked. The
  // file is opened once the device is prepared (a spec whose reference fails writes nothing); what a resumed run
  // recorded before is read now, since the strategy learns from it before it proposes.
  std::filesystem::path out_dir = options.out_dir;
  if (out_dir.empty() && !replay) {
    out_dir = std::filesystem::path("results") / "runs" / spec.name / arch / sanitise_for_path(report.problem);
    if (!options.device_folder.empty()) out_dir /= options.device_folder;
  }
  std::optional<ResumeState> resume;
  if (!out_dir.empty()) {
    report.records = out_dir / "evaluations.csv";
    if (replay && std::filesystem::exists(report.records) &&
        std::filesystem::equivalent(report.records, options.replay_csv))
      throw InputError(fmt::format("--out {} would append to the file being replayed", out_dir.string()));
    read_run_metadata(report.records);  // a run.json that cannot be read stops the run before anything is measured
    if (options.resume) {
      resume = load_resume_state(report.records, spec.space, hash);
      report.skipped_by_resume = resume->count();
      report.other_hash_rows = resume->other_hash_rows();
      session_phases.push_back({"read the records to resume", lap.lap(), true});
    }
  }

  std::unique_ptr<Strategy> strategy = make_strategy(options.strategy, space, options.seed);
  // A resumed run goes on from what is recorded: the strategy learns from those results and does not propose
  // them again, and they are ranked with this run's below.
  const std::vector<Evaluation> no_evaluations;
  const std::vector<Evaluation>& recorded = resume ? resume->evaluations() : no_evaluations;
  for (const Evaluation& evaluation : recorded) strategy->tell(evaluation);
  std::optional<CompilePool> pool;
  if (measurer->needs_compilation()) {
    CompilePoolOptions pool_options;
    pool_options.jobs = options.jobs;
    pool_options.cache_dir = cubin_cache;
    pool_options.worker_executable = worker;
    pool_options.use_cache = options.use_cubin_cache;
    pool.emplace(pool_options);
  }
  session_phases.push_back({"strategy and compile pool", lap.lap(), true});
  const std::size_t lookahead =
      (pool ? static_cast<std::size_t>(pool->jobs()) * 2 + 1 : 64) + devices.measurers.size();

  std::deque<PendingEvaluation> pending;
  std::unordered_set<std::string> seen;
  bool strategy_exhausted = false;
  const auto enqueue = [&](const Configuration& configuration) {
    if (!seen.insert(configuration_key(spec.space, configuration)).second) return;
    if (resume && resume->contains(configuration)) return;  // a strategy that ignores results may propose it
    PendingEvaluation item{configuration, std::nullopt};
    if (pool) item.compiled = pool->submit(instantiate(spec, space, configuration, arch_for(device, spec.needs_arch_specific)));
    pending.push_back(std::move(item));
  };
  const auto refill = [&] {
    while (pending.size() < lookahead && !strategy_exhausted) {
      std::vector<Configuration> proposals = strategy->ask(lookahead - pending.size());
      if (proposals.empty()) strategy_exhausted = true;
      for (const Configuration& configuration : proposals) enqueue(configuration);
    }
  };

  // The default configuration goes first: every result is reported as a speed-up over it.
  const Configuration default_configuration = run_default.values;
  const bool default_is_valid = given.empty();  // with --config the default is not measured
  for (const Evaluation& evaluation : recorded)
    if (default_is_valid && evaluation.configuration == default_configuration) report.default_evaluation = evaluation;
  if (default_is_valid) enqueue(default_configuration);
  // Then the configuration the best cache holds for this device and problem, stale or not: a short run after an edit
  // of the template measures the old winner again instead of risking a worse entry (replays store nothing).
  std::optional<Configuration> stored_configuration;  // the best cache's configuration for this device and problem
  if (!replay && options.update_best_cache && given.empty()) {
    std::optional<KernelDatabase> stored;
    try {
      stored = BestCache(options.best_cache_dir).read(spec.name);
    } catch (const InputError& error) {
      fmt::print(stderr, "tune: {} (the run goes on; the file is replaced when this run stores its best)\n", error.what());
    }
    Problem problem;
    for (const auto& [symbol, value] : spec.problem) problem[symbol] = value;
    for (const DatabaseEntry& entry : stored ? stored->entries : std::vector<DatabaseEntry>{}) {
      if (entry.device_name != device.name || entry.arch != arch || entry.problem != problem) continue;
      std::optional<Configuration> previous = configuration_from_values(spec.space, entry.configuration);
      // An entry stored before a parameter became conditional may hold a value that no longer matters.
      if (previous) previous = space.canonical(std::move(*previous));
      if (previous && space.is_valid(*previous)) {
        enqueue(*previous);
        stored_configuration = previous;
      }
    }
  }
  for (const Configuration& configuration : given) enqueue(configuration);
  strategy_exhausted = !given.empty();
  refill();
  session_phases.push_back({"first proposals submitted", lap.lap(), true});

  lap.lap();
  preparing.get();  // a spec whose reference fails stops here, having written nothing
  // The preparation's phases are the start-up's path; this thread's work ran alongside and counts only where it
  // took longer than the preparation.
  double prepared_seconds = 0;
  for (ProfilePhase& phase : measurer->preparation_phases()) {
    if (!phase.alongside) prepared_seconds += phase.seconds;
    profile.startup.push_back(std::move(phase));
  }
  profile.startup.insert(profile.startup.end(), session_phases.begin(), session_phases.end());
  const double preparation_block_seconds = elapsed_seconds() - before_preparation;
  if (preparation_block_seconds > prepared_seconds + 1e-3)
    profile.add_startup("the session's own start beyond the preparation", preparation_block_seconds - prepared_seconds);
  lap.lap();
  if (devices.measurers.size() > 1) {
    // The other devices after the primary one, all at once: the reference cubin is in the cache by now.
    std::vector<std::future<void>> others;
    for (std::size_t index = 1; index < devices.measurers.size(); ++index)
      others.push_back(std::async(std::launch::async, [&, index] { devices.measurers[index]->prepare(space); }));
    for (auto& future : others) future.get();
    profile.add_startup("prepare the other devices", lap.lap());
  }
  report.copy_bandwidth_gbps = measurer->copy_bandwidth_gbps();
  report.streamed = spec.stream.enabled;
  report.baseline_ms = measurer->baseline_ms();
  report.baseline_library = measurer->baseline_library();
  report.objective = options.objective;
  bool ceilings_cached = false;
  if (!replay && options.measure_ceilings) {
    const std::filesystem::path ceiling_dir =
        options.ceiling_cache_dir.empty() ? default_ceiling_cache_dir() : options.ceiling_cache_dir;
    const CeilingCacheKey key{device.name, arch, measurer->driver_version()};
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::optional<CachedCeilings> cached;
    if (!options.refresh_ceilings) cached = read_cached_ceilings(ceiling_dir, key, now);
    ceilings_cached = cached.has_value();
    if (cached) {
      report.ceilings = cached->ceilings;
      report.ceilings_measured_at = cached->measured_at;
      profile.add_startup("ceilings (cached)", lap.lap());
    } else {
      report.ceilings = measurer->ceilings();
      report.ceilings_measured_at = now;
      if (!report.ceilings.failures.empty())
        fmt::print(stderr, "tune: ceilings not measured: {}\n", report.ceilings.failures);
      try {
        if (report.ceilings.copy_gbps > 0 && report.ceilings.fma_gflops > 0)
          write_cached_ceilings(ceiling_dir, key, {report.ceilings, now});
      } catch (const TunerError& error) {
        fmt::print(stderr, "tune: the ceilings are not cached ({}); the next run measures them again\n", error.what());
      }
      // Each ceiling's part, and what the worker's parts leave of the wall time (the round trip, the cache file).
      const double ceilings_seconds = lap.lap();
      double parts_seconds = 0;
      for (ProfilePhase& phase : measurer->ceiling_phases()) {
        parts_seconds += phase.seconds;
        profile.startup.push_back(std::move(phase));
      }
      profile.add_startup(parts_seconds > 0 ? "ceilings: the rest" : "ceilings", std::max(ceilings_seconds - parts_seconds, 0.0));
    }
  }
  if (spec.stream.enabled && !replay) {
    if (std::optional<PinnedCopyCeiling> known =
            pinned_copy_ceiling(report.ceilings, ceilings_cached, report.ceilings_measured_at)) {
      report.pinned_copy_in_gbps = known->gbps;
      report.pinned_copy_in_source = known->source;
    } else {
      report.pinned_copy_in_gbps = measurer->measure_pinned_copy_in_gbps();
      report.pinned_copy_in_source = "measured in this run";
      profile.add_startup("pinned copy ceiling", lap.lap());
    }
  }

  std::optional<RecordWriter> writer;
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    RunMetadata metadata;
    metadata.kernel = spec.name;
    metadata.spec_hash = hash;
    metadata.gpu_name = device.name;
    metadata.arch = arch;
    metadata.driver_version = measurer->driver_version();
    metadata.nvrtc_version = nvrtc_version();
    metadata.project_version = KERNLATHE_VERSION;
    metadata.build_commit = build_commit();
    metadata.problem = report.problem;
    metadata.strategy = options.strategy;
    metadata.started_at = iso8601_now();
    if (replay) metadata.extra["replay_of"] = options.replay_csv.string();
    if (report.copy_bandwidth_gbps > 0)
      metadata.extra["copy_bandwidth_gbps"] = fmt::format("{:.1f}", report.copy_bandwidth_gbps);
    for (const auto& [key, value] : ceiling_metadata(report.ceilings)) metadata.extra[key] = value;
    if (report.ceilings_measured_at > 0)
      metadata.extra["ceilings_measured_at"] = fmt::format("{:.0f}", report.ceilings_measured_at);
    metadata.extra["objective"] = std::string(objective_name(options.objective));
    if (!run_default.fallback_note.empty()) metadata.extra["default_configuration"] = run_default.fallback_note;
    if (!given.empty())
      metadata.extra["given_configurations"] = fmt::format("{}", fmt::join(options.given_configurations, " "));
    if (devices.labels.size() > 1) metadata.extra["devices"] = fmt::format("{}", fmt::join(devices.labels, ","));
    if (report.pinned_copy_in_gbps > 0)
      metadata.extra["pinned_copy_in_gbps"] = fmt::format("{:.1f}", report.pinned_copy_in_gbps);
    if (!report.pinned_copy_in_source.empty()) metadata.extra["pinned_copy_in_source"] = report.pinned_copy_in_source;
    if (report.baseline_ms > 0) {
      metadata.extra["baseline_ms"] = fmt::format("{:.6g}", report.baseline_ms);
      metadata.extra["baseline_library"] = report.baseline_library;
    }
    writer.emplace(report.records, spec.space, metadata);  // also adds this run to run.json
    report.torn_row_file = writer->torn_row_file();
  }
  profile.add_startup("open records", lap.lap());

  std::uint64_t planned =
      space.valid_count() > report.skipped_by_resume ? space.valid_count() - report.skipped_by_resume : 0;
  if (options.stop.max_evaluations) planned = std::min<std::uint64_t>(planned, *options.stop.max_evaluations);

  StopTracker stop(options.stop);
  ProgressLine progress(options.show_progress);
  std::vector<Evaluation> results;
  std::uint64_t failed = 0;
  double best_ms = 0;
  for (const Evaluation& evaluation : recorded)
    if (evaluation.ok() && evaluation.time.median_ms > 0 && (best_ms == 0 || evaluation.time.median_ms < best_ms))
      best_ms = evaluation.time.median_ms;
  const std::filesystem::path compile_logs = out_dir.empty() ? std::filesystem::path() : out_dir / "compile_logs";

  // Energy costs a few counter periods per configuration (tuner/measure/kernel_timer.h): in the search only when
  // asked for every row; the final round measures it unless it is off.
  const bool energy_in_search =
      (measurement.energy == EnergyMeasurement::always ||
       (measurement.energy == EnergyMeasurement::automatic && options.objective != Objective::time)) &&
      !spec.stream.enabled;
  const bool energy_in_final_round = measurement.energy != EnergyMeasurement::off && !spec.stream.enabled;
  // The lanes (measurement_lanes.h): each device measures a configuration while the loop records the results that
  // came back, tells the strategy and asks it for more. A configuration that failed to compile needs no GPU and is
  // ready at once.
  std::vector<Measurer*> lane_measurers;
  for (const auto& lane_measurer : devices.measurers) lane_measurers.push_back(lane_measurer.get());
  MeasurementLanes lanes(lane_measurers, devices.labels, space);
  std::deque<Evaluation> ready;
  std::deque<LaneJob> again;  // to measure on another lane: theirs was lost, or its worker died during them
  std::uint64_t next_job_id = 0;
  const auto next_job = [&]() -> std::optional<LaneJob> {
    PendingEvaluation item = std::move(pending.front());
    pending.pop_front();
    LaneJob job;
    job.id = next_job_id++;
    job.configuration = std::move(item.configuration);
    job.measure_energy = energy_in_search;
    if (item.compiled) {
      lap.lap();
      job.compiled = item.compiled->get();
      profile.compile_wait_seconds += lap.lap();
      const CompileResult& compiled = *job.compiled;
      if (!compiled.ok) {
        Evaluation evaluation;
        evaluation.configuration = job.configuration;
        evaluation.status = Status::compile_error;
        evaluation.message = compiled.error.empty() ? "compilation failed" : compiled.error;
        evaluation.compile_ms = compiled.compile_ms;
        if (!compile_logs.empty() && !compiled.key.empty()) {
          std::filesystem::create_directories(compile_logs);
          const auto log_file = compile_logs / (compiled.key + ".log");
          std::ofstream(log_file) << compiled.log;
          evaluation.message += fmt::format(" (full log: {})", log_file.string());
        }
        ready.push_back(std::move(evaluation));
        return std::nullopt;
      }
    }
    return job;
  };
  // Whether another configuration may start: not past the evaluation budget counting those not yet recorded.
  const auto within_budget = [&] {
    const std::uint64_t coming = report.evaluated + ready.size() + lanes.busy() + again.size();
    return !options.stop.max_evaluations || coming < *options.stop.max_evaluations;
  };
  const auto fill_lanes = [&] {
    while (lanes.idle() > 0) {
      if (!again.empty()) {  // already counted against the budget
        lanes.submit(again.front());
        again.pop_front();
        continue;
      }
      if (pending.empty() || !within_budget()) return;
      if (std::optional<LaneJob> job = next_job()) {
        if (profile.first_request_seconds == 0) profile.first_request_seconds = elapsed_seconds();
        lanes.submit(*job);
      }
    }
  };
  // One result from the lanes into `ready`, or its job back into `again`.
  const auto take_outcome = [&] {
    lap.lap();
    LaneOutcome outcome = lanes.wait();
    profile.evaluate_seconds += lap.lap();
    LaneJob& job = outcome.job;
    const std::string& label = lanes.label(outcome.lane);
    if (!outcome.evaluation) {
      report.lost_devices.push_back(fmt::format("{}: {}", label, outcome.lost_reason));
      if (lanes.alive() == 0)
        throw TunerError(fmt::format("every device of the run was lost; the last, {}: {}", label, outcome.lost_reason));
      fmt::print(stderr, "tune: device {} was lost ({}); its configuration goes to another device\n", label,
                 outcome.lost_reason);
      job.lanes_tried.push_back(outcome.lane);
      job.earlier_failure = fmt::format("device {} was lost during it: {}", label, outcome.lost_reason);
      again.push_back(std::move(job));
      return;
    }
    Evaluation evaluation = std::move(*outcome.evaluation);
    // A dead worker is the configuration's fault or the device's (a killed worker, a GPU that fell off the bus):
    // with another device at hand, that one measures it again and its result is recorded.
    if (evaluation.status == Status::crashed && job.lanes_tried.empty() && lanes.alive() > 1) {
      job.lanes_tried.push_back(outcome.lane);
      job.earlier_failure = fmt::format("the worker on device {} died during it: {}", label, evaluation.message);
      again.push_back(std::move(job));
      return;
    }
    if (!job.earlier_failure.empty())
      evaluation.message += (evaluation.message.empty() ? "" : "; ") + fmt::format("measured again: {}", job.earlier_failure);
    if (job.compiled) {
      evaluation.compile_ms = job.compiled->compile_ms;
      evaluation.cubin_cached = job.compiled->cached;
    }
    ready.push_back(std::move(evaluation));
  };
  while (true) {
    fill_lanes();
    if (ready.empty()) {
      if (lanes.busy() == 0) break;
      take_outcome();
      continue;  // the lane that finished starts its next configuration before this result is processed
    }
    Evaluation evaluation = std::move(ready.front());
    ready.pop_front();
    const WorkerStageTimes& stages = evaluation.worker_stages;
    profile.worker.preparation_ms += stages.preparation_ms;
    profile.worker.verification_ms += stages.verification_ms;
    profile.worker.warmup_ms += stages.warmup_ms;
    profile.worker.sampling_ms += stages.sampling_ms;
    profile.worker.conditions_ms += stages.conditions_ms;
    profile.worker.energy_ms += stages.energy_ms;
    if (profile.evaluations++ == 0) profile.first_result_seconds = elapsed_seconds();
    if (evaluation.timestamp == 0)
      evaluation.timestamp = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (options.objective != Objective::time && !replay) {
      evaluation.objective = objective_value(evaluation, options.objective);
      // An ok row without an energy figure would rank by time among rows ranked by energy.
      if (evaluation.ok() && evaluation.objective <= 0)
        throw NoGpuError(fmt::format("--objective {} needs energy per launch, and this GPU gave none (NVML's energy "
                                     "counter is missing: a GPU older than Volta, or no NVML)",
                                     objective_name(options.objective)));
    }

    lap.lap();
    if (writer) writer->append(evaluation, hash);
    profile.record_seconds += lap.lap();
    strategy->tell(evaluation);
    profile.strategy_seconds += lap.lap();
    stop.record(evaluation, elapsed_seconds());
    ++report.evaluated;
    ++report.status_counts[std::string(status_name(evaluation.status))];
    if (!evaluation.ok()) {
      ++failed;
    } else if (best_ms == 0 || evaluation.time.median_ms < best_ms) {
      best_ms = evaluation.time.median_ms;
    }
    if (default_is_valid && evaluation.configuration == default_configuration) report.default_evaluation = evaluation;
    results.push_back(std::move(evaluation));
    progress.update(report.evaluated, planned, failed, best_ms, elapsed_seconds());
    if (stop.should_stop()) {
      report.stop_reason = stop.reason();
      break;
    }
    lap.lap();
    refill();
    profile.strategy_seconds += lap.lap();
  }
  // Measurements started before the stop are collected, so the workers are free for the final round; past the
  // budget they are neither recorded nor ranked.
  while (lanes.busy() > 0) lanes.wait();
  // The final round runs on one device: the primary one, or the first still there.
  for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
    if (lanes.lost(lane)) continue;
    measurer = lane_measurers[lane];
    break;
  }
  for (const Evaluation& evaluation : results) ++report.evaluations_per_device[evaluation.device];
  if (report.stop_reason.empty()) report.stop_reason = "space exhausted";
  report.seconds = elapsed_seconds();
  report.evaluations_per_second = report.seconds > 0 ? report.evaluated / report.seconds : 0;
  progress.update(report.evaluated, planned, failed, best_ms, report.seconds, /*final_update=*/true);

  // Rank the verified results: this run's and, resumed, those recorded before under the same spec hash (never
  // the same configuration twice: a resumed run does not measure a recorded one again).
  std::vector<const Evaluation*> ok;
  const auto add_verified = [&ok](const std::vector<Evaluation>& evaluations) {
    for (const Evaluation& evaluation : evaluations)
      if (evaluation.ok() && evaluation.time.median_ms > 0) ok.push_back(&evaluation);
  };
  add_verified(recorded);
  add_verified(results);
  std::stable_sort(ok.begin(), ok.end(),
                   [](const Evaluation* a, const Evaluation* b) { return search_value(*a) < search_value(*b); });

  // The final round: the search's best, the default and the stored configuration measured again, interleaved, so
  // the ranking and what is stored compare figures taken side by side rather than minutes apart.
  std::map<std::string, FinalFigures> final_figures;  // by configuration key
  lap.lap();
  if (!replay && options.final_candidates > 0 && options.final_rounds > 0 && !ok.empty()) {
    std::vector<Configuration> candidates;
    const auto add_candidate = [&](const Configuration& configuration) {
      for (const Configuration& present : candidates)
        if (present == configuration) return;
      candidates.push_back(configuration);
    };
    for (std::size_t rank = 0; rank < ok.size() && rank < static_cast<std::size_t>(options.final_candidates); ++rank)
      add_candidate(ok[rank]->configuration);
    for (const Evaluation* evaluation : ok) {
      if ((default_is_valid && evaluation->configuration == default_configuration) ||
          (stored_configuration && evaluation->configuration == *stored_configuration))
        add_candidate(evaluation->configuration);
    }
    // The baseline joins the candidates as the last one: timed in the same rounds, so the reported fractions of
    // cuBLAS compare figures taken side by side (it was timed once, cool, at setup).
    const bool baseline_in_round = report.baseline_ms > 0;
    const std::size_t baseline_index = candidates.size();
    const auto measure_again = [&](std::size_t index, bool with_energy) {
      if (baseline_in_round && index == baseline_index) return measurer->measure_baseline(with_energy);
      const Configuration& configuration = candidates[index];
      if (!pool) return measurer->measure(configuration, nullptr, space, with_energy);
      // Compiled before in this run: the cubin cache answers (or the pool compiles it again with the cache off).
      CompileResult compiled = pool->submit(instantiate(spec, space, configuration, arch_for(device, spec.needs_arch_specific))).get();
      if (!compiled.ok) {
        Evaluation failed;
        failed.configuration = configuration;
        failed.status = Status::compile_error;
        failed.message = compiled.error;
        return failed;
      }
      return measurer->measure(configuration, &compiled, space, with_energy);
    };
    const std::size_t measured_count = candidates.size() + (baseline_in_round ? 1 : 0);
    const std::size_t total = measured_count * static_cast<std::size_t>(options.final_rounds);
    std::size_t done = 0;
    if (options.show_progress)
      fmt::print(stderr, "final round: {} configurations{} x {} rounds, interleaved\n", candidates.size(),
                 baseline_in_round ? " and the baseline" : "", options.final_rounds);
    // Energy in every round where the objective ranks by it. With the time objective it is reported, not ranked
    // on, and each figure costs 0.1-0.3 s: only the winner's is measured, once, after the rounds.
    const int energy_rounds = energy_in_final_round && options.objective != Objective::time ? options.final_rounds : 0;
    std::vector<FinalFigures> figures = run_final_round(
        measured_count, options.final_rounds, measure_again,
        [&](int, std::size_t) {
          ++done;
          if (options.show_progress) fmt::print(stderr, "\rfinal round: {}/{}", done, total);
        },
        energy_rounds);
    if (options.show_progress) fmt::print(stderr, "\n");
    report.final_rounds = options.final_rounds;
    if (baseline_in_round) {
      FinalFigures& baseline = figures[baseline_index];
      if (baseline.complete) {
        report.baseline_search_ms = report.baseline_ms;
        report.baseline_ms = baseline.mean_ms;
        report.baseline_final_round = baseline;
      } else {
        fmt::print(stderr, "tune: the baseline left the final round ({}); its setup figure stays\n", baseline.failure);
      }
    }
    for (std::size_t index = 0; index < candidates.size(); ++index) {
      if (!figures[index].complete)
        fmt::print(stderr, "tune: {} left the final round ({})\n", to_string(spec.space, candidates[index]), figures[index].failure);
      final_figures.emplace(configuration_key(spec.space, candidates[index]), std::move(figures[index]));
    }
    // Configurations with a complete final round rank first, by its mean; the rest after them, as the search had it.
    const auto final_of = [&](const Evaluation* evaluation) -> const FinalFigures* {
      auto found = final_figures.find(configuration_key(spec.space, evaluation->configuration));
      return found != final_figures.end() && found->second.complete ? &found->second : nullptr;
    };
    // The final round's figure of what the run minimises: the mean time, or the mean energy (times the mean time
    // for edp); a candidate without energy in every round ranks after those with it.
    const auto final_value = [&](const FinalFigures& figures) {
      switch (options.objective) {
        case Objective::time: return figures.mean_ms;
        case Objective::energy: return figures.energy_mj;
        case Objective::edp: return figures.energy_mj * figures.mean_ms;
      }
      return figures.mean_ms;
    };
    const auto ranked_in_final = [&](const Evaluation* evaluation) -> const FinalFigures* {
      const FinalFigures* figures = final_of(evaluation);
      return figures != nullptr && final_value(*figures) > 0 ? figures : nullptr;
    };
    std::stable_sort(ok.begin(), ok.end(), [&](const Evaluation* a, const Evaluation* b) {
      const FinalFigures* fa = ranked_in_final(a);
      const FinalFigures* fb = ranked_in_final(b);
      if ((fa != nullptr) != (fb != nullptr)) return fa != nullptr;
      return fa ? final_value(*fa) < final_value(*fb) : search_value(*a) < search_value(*b);
    });
    if (energy_in_final_round && energy_rounds == 0 && !ok.empty()) {
      const auto winner = final_figures.find(configuration_key(spec.space, ok.front()->configuration));
      const auto position = std::find(candidates.begin(), candidates.end(), ok.front()->configuration);
      if (winner != final_figures.end() && winner->second.complete && position != candidates.end()) {
        const Evaluation measured = measure_again(static_cast<std::size_t>(position - candidates.begin()), true);
        if (measured.ok() && measured.energy_mj > 0) {
          FinalFigures& figures = winner->second;
          figures.round_energy_mj = {measured.energy_mj};
          figures.energy_mj = figures.energy_low_mj = figures.energy_high_mj = measured.energy_mj;
        }
      }
    }
    if (report.default_evaluation) {
      if (const FinalFigures* figures_of_default = final_of(&*report.default_evaluation)) {
        report.default_evaluation->time.median_ms = figures_of_default->mean_ms;
        report.default_final_round = *figures_of_default;
      }
    }
  }
  profile.final_round_seconds = lap.lap();
  if (!ok.empty()) {
    std::vector<double> times;
    for (const Evaluation* evaluation : ok) times.push_back(evaluation->time.median_ms);
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    report.median_time_ms = times[times.size() / 2];
  }
  for (std::size_t rank = 0; rank < ok.size() && rank < 5; ++rank) {
    RankedResult ranked;
    ranked.evaluation = *ok[rank];
    ranked.search_median_ms = ranked.evaluation.time.median_ms;
    if (auto found = final_figures.find(configuration_key(spec.space, ranked.evaluation.configuration));
        found != final_figures.end() && found->second.complete) {
      ranked.final_round = found->second;
      ranked.evaluation.time.median_ms = found->second.mean_ms;
    }
    const double seconds = ranked.evaluation.time.median_ms * 1e-3;
    ranked.gflops = evaluate_metric(spec.metrics.flops, space, ranked.evaluation.configuration) / seconds / 1e9;
    ranked.gbps = evaluate_metric(spec.metrics.bytes, space, ranked.evaluation.configuration) / seconds / 1e9;
    if (report.default_evaluation && report.default_evaluation->ok())
      ranked.speedup_over_default = report.default_evaluation->time.median_ms / ranked.evaluation.time.median_ms;
    if (report.median_time_ms > 0) ranked.speedup_over_median = report.median_time_ms / ranked.evaluation.time.median_ms;
    if (report.copy_bandwidth_gbps > 0 && ranked.gbps > 0) ranked.fraction_of_ceiling = ranked.gbps / report.copy_bandwidth_gbps;
    if (report.baseline_ms > 0) ranked.fraction_of_baseline = report.baseline_ms / ranked.evaluation.time.median_ms;
    report.best.push_back(std::move(ranked));
  }

  // The best configuration per kernel, arch and problem, for applications to ship. Replays never write it.
  // The runtime picks configurations by time, so a run that minimised energy leaves the cache alone.
  if (!replay && options.update_best_cache && options.objective == Objective::time && !report.best.empty()) {
    const Evaluation& best = report.best.front().evaluation;
    DatabaseEntry entry;
    entry.device_name = device.name;
    entry.arch = arch;
    entry.driver = measurer->driver_version();
    for (const auto& [symbol, value] : spec.problem) entry.problem[symbol] = value;
    entry.configuration = configuration_values(spec.space, best.configuration);
    const RankedResult& winner = report.best.front();
    entry.time = {best.time.median_ms, best.time.relative_spread, best.time.samples};
    // After a final round: the mean of the rounds; spread: the width of its 95% interval relative to it; samples:
    // the rounds.
    const auto summary_of = [](const FinalFigures& figures) {
      return TimeSummary{figures.mean_ms, figures.mean_ms > 0 ? (figures.high_ms - figures.low_ms) / figures.mean_ms : 0,
                         static_cast<int>(figures.round_ms.size())};
    };
    if (winner.final_round) entry.time = summary_of(*winner.final_round);
    entry.gflops = winner.gflops;
    entry.gbps = winner.gbps;
    entry.date = iso8601_now();
    entry.spec_hash = kernel_hash(spec);
    entry.tool_version = KERNLATHE_VERSION;
    // The stored configuration measured in the same final round decides: the cache changes hands only when the
    // winner is faster beyond the noise, and otherwise keeps its configuration with the figures of this round.
    const FinalFigures* stored_figures = nullptr;
    if (stored_configuration) {
      auto found = final_figures.find(configuration_key(spec.space, *stored_configuration));
      if (found != final_figures.end() && found->second.complete) stored_figures = &found->second;
    }
    BestCache cache(options.best_cache_dir);
    if (stored_figures && winner.final_round && best.configuration != *stored_configuration) {
      if (faster_beyond_noise(*winner.final_round, *stored_figures)) {
        report.best_cache_decision = fmt::format("replaced: {:.4g} ms [{:.4g}, {:.4g}] is faster beyond the noise than the "
                                                 "stored configuration's {:.4g} ms [{:.4g}, {:.4g}]",
                                                 winner.final_round->mean_ms, winner.final_round->low_ms,
                                                 winner.final_round->high_ms, stored_figures->mean_ms,
                                                 stored_figures->low_ms, stored_figures->high_ms);
        report.best_cache_updated = cache.update(describe_kernel(spec, space), entry, BestCache::Replace::always);
      } else {
        report.best_cache_decision = fmt::format("kept the stored configuration: {:.4g} ms [{:.4g}, {:.4g}] against the "
                                                 "winner's {:.4g} ms [{:.4g}, {:.4g}], within the noise",
                                                 stored_figures->mean_ms, stored_figures->low_ms, stored_figures->high_ms,
                                                 winner.final_round->mean_ms, winner.final_round->low_ms,
                                                 winner.final_round->high_ms);
        entry.configuration = configuration_values(spec.space, *stored_configuration);
        entry.time = summary_of(*stored_figures);
        const double seconds = stored_figures->mean_ms * 1e-3;
        entry.gflops = evaluate_metric(spec.metrics.flops, space, *stored_configuration) / seconds / 1e9;
        entry.gbps = evaluate_metric(spec.metrics.bytes, space, *stored_configuration) / seconds / 1e9;
        report.best_cache_updated = cache.update(describe_kernel(spec, space), entry, BestCache::Replace::always);
      }
    } else {
      if (stored_figures && winner.final_round)
        report.best_cache_decision = "the stored configuration won the final round again: its figures refreshed";
      report.best_cache_updated = cache.update(describe_kernel(spec, space), entry,
                                               stored_figures && winner.final_round ? BestCache::Replace::always
                                                                                    : BestCache::Replace::when_faster);
    }
  }
  profile.total_seconds = elapsed_seconds();
  report.profile = std::move(profile);
  return report;
}

}  // namespace

}  // namespace kernlathe
