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
      if (message.tag != tag_heartbeat) inbox[source].push_back(std::move(message));
    }
    arrived.notify_all();
  }

  // The first message from rank with one of tags, waiting up to max_seconds. Throws TunerError when the rank has
  // been silent for silence_seconds, or the wait ends first.
  ClusterMessage take(int rank, std::initializer_list<int> tags, double silence_seconds, double max_seconds) {
    const auto source = static_cast<std::size_t>(rank);
    const auto deadline = Clock::now() + std::chrono::duration<double>(max_seconds);
    std::unique_lock lock(mutex);
    while (true) {
      std::deque<ClusterMessage>& queue = inbox[source];
      for (auto message = queue.begin(); message != queue.end(); ++message) {
        if (std::find(tags.begin(), tags.end(), message->tag) == tags.end()) continue;
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

// Another rank's GPU, seen from rank 0: one configuration at a time, sent with its cubin.
class RemoteMeasurer final : public Measurer {
 public:
  RemoteMeasurer(Communicator& communicator, std::shared_ptr<ClusterCoordinator::Mailbox> mailbox, int rank,
                 DeviceProperties device, std::string driver, bool needs_compilation, ClusterOptions options)
      : communicator_(communicator),
        mailbox_(std::move(mailbox)),
        rank_(rank),
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
          mailbox_->take(rank_, {tag_ready, tag_failed}, options_.silence_seconds, options_.preparation_seconds);
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
    communicator_.send(rank_, tag_job, encode_message(job));
    // The rank's worker has its own deadlines; heartbeats show the rank is alive however long that takes.
    const ClusterMessage reply =
        mailbox_->take(rank_, {tag_result, tag_failed}, options_.silence_seconds, std::numeric_limits<double>::max());
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
          mailbox_->take(rank, {tag_hello, tag_failed}, options_.silence_seconds, options_.preparation_seconds);
      const json document = decode_message(message);
      if (message.tag == tag_failed) {
        fmt::print(stderr, "tune: rank {} takes no part: {}\n", rank, document.value("message", "no reason given"));
        continue;
      }
      const std::string label = document.at("label").get<std::string>();
      labels_[static_cast<std::size_t>(rank)] = label;
      devices.measurers.push_back(std::make_unique<RemoteMeasurer>(
          communicator_, mailbox_, rank, protocol::decode_properties(document.at("device")),
          document.value("driver", ""), needs_compilation, options_));
      devices.labels.push_back(label);
    } catch (const TunerError& error) {
      fmt::print(stderr, "tune: rank {} takes no part: {}\n", rank, error.what());
    }
  }
  return devices;
}

void ClusterCoordinator::tell_done(int rank, const json& message) {
  {
    std::lock_guard lock(mailbox_->mutex);
    if (told_[static_cast<std::size_t>(rank)]) return;
    told_[static_cast<std::size_t>(rank)] = true;
  }
  communicator_.send(rank, tag_done, encode_message(message));
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
      const std::string& label = labels_[static_cast<std::size_t>(rank)];
      if (!label.empty() && std::find(report.devices.begin(), report.devices.end(), label) != report.devices.end())
        tell_done(rank, message);
    }
  }
  abort("this rank took no part in the run (it failed, or did not answer in time)");
}

void ClusterCoordinator::abort(const std::string& reason) {
  for (int rank = 1; rank < communicator_.size(); ++rank)
    tell_done(rank, json{{"chosen", nullptr}, {"reason", reason}});
}

EvaluatorOutcome serve_as_evaluator(Communicator& communicator, const TuneOptions& options, int device,
                                    const ClusterOptions& cluster) {
  const int rank = communicator.rank();
  Heartbeat heartbeat(communicator, [] { return std::vector<int>{0}; }, cluster.heartbeat_seconds);
  const bool replay = !options.replay_csv.empty();
  EvaluatorOutcome outcome;
  outcome.label = fmt::format("rank {}, {}gpu {}", rank, replay ? "replayed " : "", device);
  const auto fail = [&](const std::string& message) {
    communicator.send(0, tag_failed, encode_message({{"message", message}}));
  };

  std::unique_ptr<Measurer> measurer;
  std::optional<SpaceEnumerator> space;
  std::optional<KernelSpec> spec;
  try {
    spec = load_kernel_spec(options.spec_file, options.problem);
    const MeasurementSettings measurement = measurement_settings_for(*spec, options.measurement);
    measurer = open_measurer(*spec, options, measurement, device);
    outcome.device_name = measurer->device().name;
    communicator.send(0, tag_hello,
                      encode_message({{"label", outcome.label},
                                      {"device", protocol::encode(measurer->device())},
                                      {"driver", measurer->driver_version()}}));
    space.emplace(spec->space, run_constants(*spec, measurer->device()));
    measurer->prepare(*space);
  } catch (const std::exception& error) {
    fail(error.what());
    throw;
  }
  communicator.send(0, tag_ready, encode_message(json::object()));

  const CubinCache cubins(options.cubin_cache_dir.empty() ? default_cubin_cache_dir() : options.cubin_cache_dir);
  auto heard_from_zero = Clock::now();
  while (true) {
    std::optional<ClusterMessage> message = communicator.poll();
    if (!message) {
      const double silent = seconds_since(heard_from_zero);
      if (silent > cluster.silence_seconds)
        throw TunerError(fmt::format("rank 0 stopped answering: nothing from it for {:.1f} s", silent));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (message->source != 0) continue;
    heard_from_zero = Clock::now();
    if (message->tag == tag_heartbeat) continue;
    const json document = decode_message(*message);
    if (message->tag == tag_done) {
      if (!document.at("chosen").is_null()) outcome.chosen = document.at("chosen");
      outcome.kernel = document.value("kernel", "");
      outcome.failure = document.value("reason", "");
      return outcome;
    }
    if (message->tag != tag_job) continue;
    const Configuration configuration = decode_configuration(document.at("configuration"));
    std::optional<CompileResult> compiled;
    if (document.contains("compiled")) {
      const json& sent = document.at("compiled");
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
      compiled = std::move(result);
    }
    Evaluation evaluation;
    try {
      evaluation = measurer->measure(configuration, compiled ? &*compiled : nullptr, *space,
                                     document.value("energy", false));
    } catch (const std::exception& error) {
      fail(error.what());  // this rank's GPU is lost: rank 0 gives the configuration to another
      throw;
    }
    ++outcome.measured;
    communicator.send(0, tag_result,
                      encode_message({{"id", document.at("id")}, {"evaluation", protocol::encode(evaluation)}}));
  }
}

}  // namespace kernlathe
