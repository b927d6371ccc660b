#include "tuner/cluster/cluster_run.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "tuner/common/error.h"
#include "tuner/nvrtc/cubin_cache.h"
#include "tuner/run/protocol.h"

namespace kernlathe {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// Message tags. Every message is a CBOR-encoded JSON document (a cubin travels as a binary field).
enum Tag : int {
  tag_hello = 1,      // evaluator -> 0: its label, GPU properties and driver
  tag_ready = 2,      // evaluator -> 0: the reference ran; it measures from now on
  tag_failed = 3,     // evaluator -> 0: it cannot go on, and why
  tag_job = 4,        // 0 -> evaluator: a configuration to measure
  tag_result = 5,     // evaluator -> 0: its evaluation
  tag_heartbeat = 6,  // both ways, every heartbeat_seconds
  tag_done = 7,       // 0 -> evaluator: the run ended, with the chosen configuration
};

// A rank may measure on several GPUs (its slots, in the order of its --devices): the message tag carries the slot
// as well as the kind, kind + slot_stride * slot. The greeting and heartbeats are the rank's, on slot 0. MPI
// guarantees tags up to 32767, so up to 2047 GPUs a rank.
constexpr int slot_stride = 16;
int tag_of(Tag kind, int slot) { return kind + slot_stride * slot; }
int kind_of(int tag) { return tag % slot_stride; }
int slot_of(int tag) { return tag / slot_stride; }

std::string encode_message(const json& document) {
  const std::vector<std::uint8_t> bytes = json::to_cbor(document);
  return std::string(bytes.begin(), bytes.end());
}

json decode_message(const ClusterMessage& message) {
  try {
    return json::from_cbor(message.bytes);
  } catch (const json::exception& error) {
    throw TunerError(fmt::format("a malformed message (tag {}) from rank {}: {}", message.tag, message.source,
                                 error.what()));
  }
}

// A configuration keeps its value types through JSON: integers, reals, booleans and strings stay apart.
json encode_configuration(const Configuration& configuration) {
  json values = json::array();
  for (const Value& value : configuration) std::visit([&](const auto& held) { values.push_back(held); }, value);
  return values;
}

Configuration decode_configuration(const json& values) {
  Configuration configuration;
  for (const json& value : values) {
    if (value.is_boolean()) configuration.emplace_back(value.get<bool>());
    else if (value.is_number_integer()) configuration.emplace_back(value.get<std::int64_t>());
    else if (value.is_number_float()) configuration.emplace_back(value.get<double>());
    else if (value.is_string()) configuration.emplace_back(value.get<std::string>());
    else throw TunerError(fmt::format("a configuration value of an unknown type: {}", value.dump()));
  }
  return configuration;
}

std::string read_binary(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw TunerError(fmt::format("cannot read {}", path.string()));
  return std::string(std::istreambuf_iterator<char>(stream), {});
}

double seconds_since(Clock::time_point then) { return std::chrono::duration<double>(Clock::now() - then).count(); }

}  // namespace

// Rank 0's incoming messages by rank, and when each rank was last heard from (heartbeats included).
struct ClusterCoordinator::Mailbox {
  explicit Mailbox(int size) : inbox(static_cast<std::size_t>(size)), last_heard(static_cast<std::size_t>(size), Clock::now()) {}

  void deliver(ClusterMessage message) {
    {
      std::lock_guard lock(mutex);
      const auto source = static_cast<std::size_t>(message.source);
      if (source >= inbox.size()) return;
      last_heard[source] = Clock::now();
      if (kind_of(message.tag) != tag_heartbeat) inbox[source].push_back(std::move(message));
    }
    arrived.notify_all();
  }

  // The first message from rank for slot with one of the kinds, waiting up to max_seconds. Throws TunerError when
  // the rank has been silent for silence_seconds, or the wait ends first.
  ClusterMessage take(int rank, int slot, std::initializer_list<int> kinds, double silence_seconds, double max_seconds) {
    const auto source = static_cast<std::size_t>(rank);
    const auto deadline = Clock::now() + std::chrono::duration<double>(max_seconds);
    std::unique_lock lock(mutex);
    while (true) {
      std::deque<ClusterMessage>& queue = inbox[source];
      for (auto message = queue.begin(); message != queue.end(); ++message) {
        if (slot_of(message->tag) != slot || std::find(kinds.begin(), kinds.end(), kind_of(message->tag)) == kinds.end())
          continue;
        ClusterMessage taken = std::move(*message);
        queue.erase(message);
        return taken;
      }
      const double silent = seconds_since(last_heard[source]);
      if (silent > silence_seconds)
        throw TunerError(fmt::format("rank {} stopped answering: nothing from it for {:.1f} s", rank, silent));
      if (Clock::now() > deadline) throw TunerError(fmt::format("rank {} did not answer within {:.0f} s", rank, max_seconds));
      arrived.wait_for(lock, std::chrono::milliseconds(50));
    }
  }

  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::deque<ClusterMessage>> inbox;
  std::vector<Clock::time_point> last_heard;
  std::atomic<bool> stopping{false};
};

namespace {

// A GPU of another rank (its slot there), seen from rank 0: one configuration at a time, sent with its cubin.
class RemoteMeasurer final : public Measurer {
 public:
  RemoteMeasurer(Communicator& communicator, std::shared_ptr<ClusterCoordinator::Mailbox> mailbox, int rank, int slot,
                 DeviceProperties device, std::string driver, bool needs_compilation, ClusterOptions options)
      : communicator_(communicator),
        mailbox_(std::move(mailbox)),
        rank_(rank),
        slot_(slot),
        device_(std::move(device)),
        driver_(std::move(driver)),
        needs_compilation_(needs_compilation),
        options_(options) {}

  const DeviceProperties& device() const override { return device_; }
  std::string driver_version() const override { return driver_; }
  bool needs_compilation() const override { return needs_compilation_; }

  // The rank prepares on its own from the start; this waits until it says it is ready. A rank that fails or
  // stays silent is lost: measure() then throws at once, and the run loop gives its work to the others.
  void prepare(const SpaceEnumerator&) override {
    try {
      const ClusterMessage message =
          mailbox_->take(rank_, slot_, {tag_ready, tag_failed}, options_.silence_seconds, options_.preparation_seconds);
      if (message.tag == tag_failed) lost_ = decode_message(message).value("message", "no reason given");
    } catch (const TunerError& error) {
      lost_ = error.what();
    }
  }

  Evaluation measure(const Configuration& configuration, const CompileResult* compiled, const SpaceEnumerator&,
                     bool measure_energy) override {
    if (lost_) throw TunerError(fmt::format("rank {} cannot measure: {}", rank_, *lost_));
    json job = {{"id", next_id_++}, {"configuration", encode_configuration(configuration)}, {"energy", measure_energy}};
    if (compiled != nullptr) {
      const std::string cubin = read_binary(compiled->cubin_path);
      job["compiled"] = {{"lowered_name", compiled->lowered_name},
                         {"key", compiled->key},
                         {"cached", compiled->cached},
                         {"compile_ms", compiled->compile_ms},
                         {"cubin", json::binary(std::vector<std::uint8_t>(cubin.begin(), cubin.end()))}};
    }
    communicator_.send(rank_, tag_of(tag_job, slot_), encode_message(job));
    // The rank's worker has its own deadlines; heartbeats show the rank is alive however long that takes.
    const ClusterMessage reply =
        mailbox_->take(rank_, slot_, {tag_result, tag_failed}, options_.silence_seconds, std::numeric_limits<double>::max());
    const json document = decode_message(reply);
    if (reply.tag == tag_failed) {
      lost_ = document.value("message", "no reason given");
      throw TunerError(fmt::format("rank {} cannot measure: {}", rank_, *lost_));
    }
    Evaluation evaluation = protocol::decode_evaluation(document.at("evaluation"));
    evaluation.configuration = configuration;
    return evaluation;
  }

 private:
  Communicator& communicator_;
  std::shared_ptr<ClusterCoordinator::Mailbox> mailbox_;
  int rank_;
  int slot_;
  DeviceProperties device_;
  std::string driver_;
  bool needs_compilation_;
  ClusterOptions options_;
  std::optional<std::string> lost_;
  std::uint64_t next_id_ = 0;
};

// Sends a heartbeat to the given ranks every period until stopped.
class Heartbeat {
 public:
  Heartbeat(Communicator& communicator, std::function<std::vector<int>()> destinations, double period_seconds)
      : thread_([this, &communicator, destinations = std::move(destinations), period_seconds] {
          std::unique_lock lock(mutex_);
          while (!stopping_) {
            for (int destination : destinations()) communicator.send(destination, tag_heartbeat, "");
            stop_.wait_for(lock, std::chrono::duration<double>(period_seconds));
          }
        }) {}
  ~Heartbeat() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    stop_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace

ClusterCoordinator::ClusterCoordinator(Communicator& communicator, ClusterOptions options)
    : communicator_(communicator),
      options_(options),
      mailbox_(std::make_shared<Mailbox>(communicator.size())),
      labels_(static_cast<std::size_t>(communicator.size())),
      told_slots_(static_cast<std::size_t>(communicator.size())),
      told_(static_cast<std::size_t>(communicator.size()), false) {
  thread_ = std::thread([this] { post_office(); });
}

ClusterCoordinator::~ClusterCoordinator() {
  abort("rank 0 ended the run without a choice");
  mailbox_->stopping = true;
  thread_.join();
}

void ClusterCoordinator::post_office() {
  auto last_beat = Clock::now() - std::chrono::hours(1);
  while (!mailbox_->stopping) {
    bool any = false;
    while (std::optional<ClusterMessage> message = communicator_.poll()) {
      mailbox_->deliver(std::move(*message));
      any = true;
    }
    if (seconds_since(last_beat) >= options_.heartbeat_seconds) {
      std::vector<bool> told;
      {
        std::lock_guard lock(mailbox_->mutex);
        told = told_;
      }
      for (int rank = 1; rank < communicator_.size(); ++rank)
        if (!told[static_cast<std::size_t>(rank)]) communicator_.send(rank, tag_heartbeat, "");
      last_beat = Clock::now();
    }
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

RemoteDevices ClusterCoordinator::remote_devices(bool needs_compilation) {
  RemoteDevices devices;
  for (int rank = 1; rank < communicator_.size(); ++rank) {
    try {
      const ClusterMessage message =
          mailbox_->take(rank, 0, {tag_hello, tag_failed}, options_.silence_seconds, options_.preparation_seconds);
      const json document = decode_message(message);
      if (message.tag == tag_failed) {
        fmt::print(stderr, "tune: rank {} takes no part: {}\n", rank, document.value("message", "no reason given"));
        continue;
      }
      std::vector<std::string>& labels = labels_[static_cast<std::size_t>(rank)];
      const json& slots = document.at("slots");
      for (std::size_t slot = 0; slot < slots.size(); ++slot) {
        const json& greeting = slots[slot];
        const std::string label = greeting.at("label").get<std::string>();
        labels.push_back(label);
        if (greeting.contains("failed")) {
          fmt::print(stderr, "tune: {} takes no part: {}\n", label, greeting.at("failed").get<std::string>());
          continue;
        }
        devices.measurers.push_back(std::make_unique<RemoteMeasurer>(
            communicator_, mailbox_, rank, static_cast<int>(slot), protocol::decode_properties(greeting.at("device")),
            greeting.value("driver", ""), needs_compilation, options_));
        devices.labels.push_back(label);
      }
    } catch (const std::exception& error) {
      fmt::print(stderr, "tune: rank {} takes no part: {}\n", rank, error.what());
    }
  }
  return devices;
}

void ClusterCoordinator::tell_done(int rank, int slot, const json& message) {
  {
    std::lock_guard lock(mailbox_->mutex);
    std::vector<bool>& told = told_slots_[static_cast<std::size_t>(rank)];
    if (told.size() <= static_cast<std::size_t>(slot)) told.resize(static_cast<std::size_t>(slot) + 1, false);
    if (told_[static_cast<std::size_t>(rank)] || told[static_cast<std::size_t>(slot)]) return;
    told[static_cast<std::size_t>(slot)] = true;
    const std::size_t slots = std::max<std::size_t>(1, labels_[static_cast<std::size_t>(rank)].size());
    told_[static_cast<std::size_t>(rank)] =
        message.value("every_slot", false) ||
        (told.size() >= slots && std::all_of(told.begin(), told.begin() + static_cast<std::ptrdiff_t>(slots),
                                             [](bool value) { return value; }));
  }
  communicator_.send(rank, tag_of(tag_done, slot), encode_message(message));
}

void ClusterCoordinator::finish(const std::vector<TuneReport>& reports) {
  for (const TuneReport& report : reports) {
    json chosen = nullptr;
    if (!report.best.empty()) {
      chosen = json::object();
      const Configuration& configuration = report.best.front().evaluation.configuration;
      for (std::size_t index = 0; index < configuration.size(); ++index)
        std::visit([&](const auto& held) { chosen[report.parameter_names.at(index)] = held; }, configuration[index]);
    }
    const json message = {{"chosen", chosen},
                          {"kernel", report.kernel},
                          {"device", report.device_name},
                          {"reason", report.best.empty() ? "no configuration passed verification" : ""}};
    for (int rank = 1; rank < communicator_.size(); ++rank) {
      const std::vector<std::string>& labels = labels_[static_cast<std::size_t>(rank)];
      for (std::size_t slot = 0; slot < labels.size(); ++slot)
        if (std::find(report.devices.begin(), report.devices.end(), labels[slot]) != report.devices.end())
          tell_done(rank, static_cast<int>(slot), message);
    }
  }
  abort("this GPU took no part in the run (it failed, or did not answer in time)");
}

void ClusterCoordinator::abort(const std::string& reason) {
  for (int rank = 1; rank < communicator_.size(); ++rank) {
    const std::size_t slots = labels_[static_cast<std::size_t>(rank)].size();
    if (slots == 0) {  // no greeting: however many GPUs the rank has, this ends them all
      tell_done(rank, 0, json{{"chosen", nullptr}, {"reason", reason}, {"every_slot", true}});
      continue;
    }
    for (std::size_t slot = 0; slot < slots; ++slot)
      tell_done(rank, static_cast<int>(slot), json{{"chosen", nullptr}, {"reason", reason}});
  }
}

namespace {

CompileResult received_compile_result(const json& sent, const CubinCache& cubins) {
  CompileResult result;
  result.ok = true;
  result.key = sent.at("key").get<std::string>();
  result.lowered_name = sent.at("lowered_name").get<std::string>();
  result.cached = sent.at("cached").get<bool>();
  result.compile_ms = sent.at("compile_ms").get<double>();
  std::optional<CachedCubin> cached = cubins.lookup(result.key);
  if (!cached) {
    const std::vector<std::uint8_t>& bytes = sent.at("cubin").get_binary();
    cached = cubins.store(result.key, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                          result.lowered_name);
  }
  result.cubin_path = cached->cubin_path;
  return result;
}

// An evaluator rank: one slot per GPU of its --devices, each with its measurer and a thread that measures the jobs
// rank 0 sends that slot, while the rank's own thread receives and hands the jobs out.
class Evaluator {
 public:
  Evaluator(Communicator& communicator, const TuneOptions& options, const ClusterOptions& cluster)
      : communicator_(communicator),
        options_(options),
        cluster_(cluster),
        cubins_(options.cubin_cache_dir.empty() ? default_cubin_cache_dir() : options.cubin_cache_dir) {}
  ~Evaluator() { stop(); }

  // Opens every device and greets rank 0 with them; a device that cannot be opened is greeted as failed. Throws
  // (rank 0 told first) when the spec or every device fails.
  void open(const std::vector<int>& devices);
  // Serves rank 0 until every slot was told the end of the run. Throws TunerError when rank 0 stops answering or
  // every slot has failed.
  std::vector<EvaluatorOutcome> serve();

 private:
  struct Slot {
    int index = 0;
    std::unique_ptr<Measurer> measurer;
    std::optional<SpaceEnumerator> space;
    EvaluatorOutcome outcome;
    std::string failed;        // why this slot measures no more ("" while it does)
    bool done = false;         // told the end of the run
    std::deque<json> jobs;     // under mutex_
    std::thread thread;
  };

  void measure_jobs(Slot& slot);
  void end_slot(Slot& slot, const json& document);
  void stop();
  void fail(int slot, const std::string& message) {
    communicator_.send(0, tag_of(tag_failed, slot), encode_message({{"message", message}}));
  }

  Communicator& communicator_;
  const TuneOptions& options_;
  ClusterOptions cluster_;
  CubinCache cubins_;
  std::optional<KernelSpec> spec_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex mutex_;
  std::condition_variable job_arrived_;
  bool stopping_ = false;
};

void Evaluator::open(const std::vector<int>& devices) {
  const int rank = communicator_.rank();
  const bool replay = !options_.replay_csv.empty();
  json greetings = json::array();
  std::exception_ptr first_failure;
  try {
    spec_ = load_kernel_spec(options_.spec_file, options_.problem);
  } catch (const std::exception& error) {
    fail(0, error.what());
    throw;
  }
  const MeasurementSettings measurement = measurement_settings_for(*spec_, options_.measurement);
  for (int device : devices) {
    auto slot = std::make_unique<Slot>();
    slot->index = static_cast<int>(slots_.size());
    slot->outcome.label = fmt::format("rank {}, {}gpu {}", rank, replay ? "replayed " : "", device);
    json greeting = {{"label", slot->outcome.label}};
    try {
      slot->measurer = open_measurer(*spec_, options_, measurement, device);
      slot->outcome.device_name = slot->measurer->device().name;
      slot->space.emplace(spec_->space, run_constants(*spec_, slot->measurer->device()));
      greeting["device"] = protocol::encode(slot->measurer->device());
      greeting["driver"] = slot->measurer->driver_version();
    } catch (const std::exception& error) {
      if (!first_failure) first_failure = std::current_exception();
      slot->failed = error.what();
      slot->outcome.failure = error.what();
      greeting["failed"] = slot->failed;
    }
    greetings.push_back(std::move(greeting));
    slots_.push_back(std::move(slot));
  }
  const bool any_open = std::any_of(slots_.begin(), slots_.end(), [](const auto& slot) { return slot->failed.empty(); });
  if (!any_open) {
    fail(0, slots_.empty() ? "no GPU to measure on" : slots_.front()->failed);
    if (first_failure) std::rethrow_exception(first_failure);
    throw TunerError("no GPU to measure on");
  }
  communicator_.send(0, tag_hello, encode_message({{"slots", greetings}}));
  for (auto& slot : slots_)
    if (slot->failed.empty()) slot->thread = std::thread([this, raw = slot.get()] { measure_jobs(*raw); });
}

// A slot's thread: runs the reference (prepare), says ready, then measures its jobs in order until stopped. A
// failure is this GPU's: rank 0 is told and gives the configuration to another lane.
void Evaluator::measure_jobs(Slot& slot) {
  try {
    slot.measurer->prepare(*slot.space);
  } catch (const std::exception& error) {
    std::lock_guard lock(mutex_);
    slot.failed = error.what();
    fail(slot.index, slot.failed);
    return;
  }
  communicator_.send(0, tag_of(tag_ready, slot.index), encode_message(json::object()));
  while (true) {
    json job;
    {
      std::unique_lock lock(mutex_);
      job_arrived_.wait(lock, [&] { return stopping_ || !slot.jobs.empty(); });
      if (stopping_) return;
      job = std::move(slot.jobs.front());
      slot.jobs.pop_front();
    }
    const Configuration configuration = decode_configuration(job.at("configuration"));
    Evaluation evaluation;
    try {
      std::optional<CompileResult> compiled;
      if (job.contains("compiled")) compiled = received_compile_result(job.at("compiled"), cubins_);
      evaluation = slot.measurer->measure(configuration, compiled ? &*compiled : nullptr, *slot.space,
                                          job.value("energy", false));
    } catch (const std::exception& error) {
      std::lock_guard lock(mutex_);
      slot.failed = error.what();
      fail(slot.index, slot.failed);
      return;
    }
    ++slot.outcome.measured;
    communicator_.send(0, tag_of(tag_result, slot.index),
                       encode_message({{"id", job.at("id")}, {"evaluation", protocol::encode(evaluation)}}));
  }
}

void Evaluator::end_slot(Slot& slot, const json& document) {
  if (slot.done) return;
  slot.done = true;
  if (!document.at("chosen").is_null()) slot.outcome.chosen = document.at("chosen");
  slot.outcome.kernel = document.value("kernel", "");
  slot.outcome.failure = slot.failed.empty() ? document.value("reason", "") : slot.failed;
}

void Evaluator::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  job_arrived_.notify_all();
  for (auto& slot : slots_)
    if (slot->thread.joinable()) slot->thread.join();
}

std::vector<EvaluatorOutcome> Evaluator::serve() {
  auto heard_from_zero = Clock::now();
  const auto all = [&](auto predicate) { return std::all_of(slots_.begin(), slots_.end(), predicate); };
  while (!all([](const auto& slot) { return slot->done; })) {
    {
      std::lock_guard lock(mutex_);
      // Every GPU of the rank lost: the rank ends with the first one's error, as a rank of one GPU does.
      if (all([](const auto& slot) { return !slot->failed.empty(); }))
        throw TunerError(fmt::format("{}: {}", slots_.front()->outcome.label, slots_.front()->failed));
    }
    std::optional<ClusterMessage> message = communicator_.poll();
    if (!message) {
      const double silent = seconds_since(heard_from_zero);
      if (silent > cluster_.silence_seconds)
        throw TunerError(fmt::format("rank 0 stopped answering: nothing from it for {:.1f} s", silent));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (message->source != 0) continue;
    heard_from_zero = Clock::now();
    const int kind = kind_of(message->tag);
    const auto slot = static_cast<std::size_t>(slot_of(message->tag));
    if (kind == tag_heartbeat || slot >= slots_.size()) continue;
    json document = decode_message(*message);
    if (kind == tag_done) {
      std::lock_guard lock(mutex_);
      if (document.value("every_slot", false)) {
        for (auto& each : slots_) end_slot(*each, document);
      } else {
        end_slot(*slots_[slot], document);
      }
    } else if (kind == tag_job) {
      {
        std::lock_guard lock(mutex_);
        slots_[slot]->jobs.push_back(std::move(document));
      }
      job_arrived_.notify_all();
    }
  }
  stop();
  std::vector<EvaluatorOutcome> outcomes;
  for (const auto& slot : slots_) outcomes.push_back(slot->outcome);
  return outcomes;
}

}  // namespace

std::vector<EvaluatorOutcome> serve_as_evaluator(Communicator& communicator, const TuneOptions& options,
                                                 const std::vector<int>& devices, const ClusterOptions& cluster) {
  Heartbeat heartbeat(communicator, [] { return std::vector<int>{0}; }, cluster.heartbeat_seconds);
  Evaluator evaluator(communicator, options, cluster);
  evaluator.open(devices);
  return evaluator.serve();
}

}  // namespace kernlathe
