#include "tuner/run/protocol.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kernlathe {

bool needs_reference_kernel(const WorkerSetup& setup) {
  return setup.stream.has_value() || (setup.verification_enabled && !setup.reference_from_baseline);
}

}  // namespace kernlathe

namespace kernlathe::protocol {
namespace {

using nlohmann::json;

// Anything larger is a broken stream, not a message: the largest real message is a setup with a few arguments.
constexpr std::uint32_t largest_message_bytes = 64u << 20;

std::string role_name(Role role) {
  switch (role) {
    case Role::in: return "in";
    case Role::out: return "out";
    case Role::inout: return "inout";
  }
  return "in";
}

Role parse_role(const std::string& name) {
  if (name == "in") return Role::in;
  if (name == "out") return Role::out;
  if (name == "inout") return Role::inout;
  throw TunerError(fmt::format("unknown argument role '{}'", name));
}

std::string initialisation_kind_name(Initialisation::Kind kind) {
  switch (kind) {
    case Initialisation::Kind::random: return "random";
    case Initialisation::Kind::constant: return "constant";
    case Initialisation::Kind::sequence: return "sequence";
  }
  return "random";
}

Initialisation::Kind parse_initialisation_kind(const std::string& name) {
  if (name == "random") return Initialisation::Kind::random;
  if (name == "constant") return Initialisation::Kind::constant;
  if (name == "sequence") return Initialisation::Kind::sequence;
  throw TunerError(fmt::format("unknown initialisation '{}'", name));
}

Dtype decode_dtype(const json& document) {
  auto name = document.get<std::string>();
  std::optional<Dtype> dtype = parse_dtype(name);
  if (!dtype) throw TunerError(fmt::format("unknown dtype '{}'", name));
  return *dtype;
}

// nlohmann reports a missing key or a wrong type with its own exception; the worker protocol reports TunerError.
template <typename Decode>
auto guarded(const char* what, Decode decode) {
  try {
    return decode();
  } catch (const json::exception& error) {
    throw TunerError(fmt::format("malformed {} message: {}", what, error.what()));
  }
}

}  // namespace

json encode(const KernelLaunch& launch) {
  json scalars = json::object();
  for (const auto& [name, value] : launch.scalar_values) {
    std::visit([&, name = name](auto number) { scalars[name] = number; }, value);
  }
  json tensor_maps = json::object();
  for (const auto& [name, map] : launch.tensor_maps) {
    tensor_maps[name] = {{"box", map.box}, {"swizzle_bytes", map.swizzle_bytes}};
  }
  return {{"cubin_path", launch.cubin_path.string()},
          {"lowered_name", launch.lowered_name},
          {"grid", launch.grid},
          {"block", launch.block},
          {"dynamic_shared_bytes", launch.dynamic_shared_bytes},
          {"scalar_values", scalars},
          {"tensor_maps", tensor_maps}};
}

KernelLaunch decode_launch(const json& document) {
  return guarded("kernel launch", [&] {
    KernelLaunch launch;
    launch.cubin_path = document.at("cubin_path").get<std::string>();
    launch.lowered_name = document.at("lowered_name").get<std::string>();
    launch.grid = document.at("grid").get<std::array<std::int64_t, 3>>();
    launch.block = document.at("block").get<std::array<std::int64_t, 3>>();
    launch.dynamic_shared_bytes = document.at("dynamic_shared_bytes").get<std::int64_t>();
    for (const auto& [name, value] : document.at("scalar_values").items()) {
      if (value.is_number_integer()) {
        launch.scalar_values[name] = value.get<std::int64_t>();
      } else {
        launch.scalar_values[name] = value.get<double>();
      }
    }
    if (document.contains("tensor_maps")) {
      for (const auto& [name, value] : document.at("tensor_maps").items()) {
        launch.tensor_maps[name] = {value.at("box").get<std::vector<std::int64_t>>(),
                                    value.at("swizzle_bytes").get<std::int64_t>()};
      }
    }
    return launch;
  });
}

json encode(const WorkerArgument& argument) {
  const Initialisation& init = argument.init;
  return {{"name", argument.name},
          {"dtype", dtype_name(argument.dtype)},
          {"is_buffer", argument.is_buffer},
          {"element_count", argument.element_count},
          {"init",
           {{"kind", initialisation_kind_name(init.kind)},
            {"seed", init.seed},
            {"low", init.low},
            {"high", init.high},
            {"value", init.value},
            {"start", init.start},
            {"step", init.step}}},
          {"role", role_name(argument.role)},
          {"tensor_buffer", argument.tensor_buffer},
          {"tensor_dims", argument.tensor_dims},
          {"tensor_strides", argument.tensor_strides}};
}

WorkerArgument decode_argument(const json& document) {
  return guarded("argument", [&] {
    WorkerArgument argument;
    argument.name = document.at("name").get<std::string>();
    argument.dtype = decode_dtype(document.at("dtype"));
    argument.is_buffer = document.at("is_buffer").get<bool>();
    argument.element_count = document.at("element_count").get<std::int64_t>();
    const json& init = document.at("init");
    argument.init.kind = parse_initialisation_kind(init.at("kind").get<std::string>());
    argument.init.seed = init.at("seed").get<std::uint64_t>();
    argument.init.low = init.at("low").get<double>();
    argument.init.high = init.at("high").get<double>();
    argument.init.value = init.at("value").get<double>();
    argument.init.start = init.at("start").get<double>();
    argument.init.step = init.at("step").get<double>();
    argument.role = parse_role(document.at("role").get<std::string>());
    argument.tensor_buffer = document.value("tensor_buffer", -1);
    if (document.contains("tensor_dims")) argument.tensor_dims = document.at("tensor_dims").get<std::vector<std::int64_t>>();
    if (document.contains("tensor_strides"))
      argument.tensor_strides = document.at("tensor_strides").get<std::vector<std::int64_t>>();
    return argument;
  });
}

json encode(const MeasurementSettings& settings) {
  return {{"warmup_ms", settings.warmup_ms},
          {"busy_warmup_ms", settings.busy_warmup_ms},
          {"idle_gap_ms", settings.idle_gap_ms},
          {"min_samples", settings.min_samples},
          {"max_samples", settings.max_samples},
          {"min_seconds", settings.min_seconds},
          {"max_seconds", settings.max_seconds},
          {"target_relative_spread", settings.target_relative_spread},
          {"cold", settings.cold},
          {"energy_periods", settings.energy_periods},
          {"guaranteed_samples", settings.guaranteed_samples}};
}

MeasurementSettings decode_measurement(const json& document) {
  return guarded("measurement settings", [&] {
    MeasurementSettings settings;
    settings.warmup_ms = document.at("warmup_ms").get<double>();
    settings.busy_warmup_ms = document.at("busy_warmup_ms").get<double>();
    settings.idle_gap_ms = document.at("idle_gap_ms").get<double>();
    settings.min_samples = document.at("min_samples").get<int>();
    settings.max_samples = document.at("max_samples").get<int>();
    settings.min_seconds = document.at("min_seconds").get<double>();
    settings.max_seconds = document.at("max_seconds").get<double>();
    settings.target_relative_spread = document.at("target_relative_spread").get<double>();
    settings.cold = document.at("cold").get<bool>();
    settings.energy_periods = document.at("energy_periods").get<int>();
    settings.guaranteed_samples = document.at("guaranteed_samples").get<int>();
    return settings;
  });
}

json encode(const WorkerSetup& setup) {
  json arguments = json::array();
  for (const WorkerArgument& argument : setup.arguments) arguments.push_back(encode(argument));
  json tolerance = json::object();
  for (const auto& [dtype, value] : setup.tolerance) {
    tolerance[dtype_name(dtype)] = {{"relative", value.relative}, {"absolute", value.absolute}};
  }
  json document = {{"device", setup.device},
                   {"arguments", arguments},
                   {"tolerance", tolerance},
                   {"verification_enabled", setup.verification_enabled},
                   {"measurement", encode(setup.measurement)},
                   {"reference_from_baseline", setup.reference_from_baseline}};
  if (setup.reference) document["reference"] = encode(*setup.reference);
  if (!setup.cubin_cache_dir.empty()) document["cubin_cache"] = setup.cubin_cache_dir.string();
  if (setup.stream) document["stream"] = encode(*setup.stream);
  if (setup.baseline) {
    const BaselineCall& call = *setup.baseline;
    document["baseline"] = {{"library", call.library}, {"operation", call.operation}, {"compute", call.compute},
                            {"m", call.m}, {"n", call.n}, {"k", call.k}, {"a", call.a}, {"b", call.b},
                            {"c", call.c}, {"alpha", call.alpha}, {"beta", call.beta},
                            {"transpose_b", call.transpose_b}};
  }
  return document;
}

WorkerSetup decode_setup(const json& document) {
  return guarded("setup", [&] {
    WorkerSetup setup;
    setup.device = document.at("device").get<int>();
    for (const json& argument : document.at("arguments")) setup.arguments.push_back(decode_argument(argument));
    for (const auto& [name, value] : document.at("tolerance").items()) {
      Tolerance tolerance{value.at("relative").get<double>(), value.at("absolute").get<double>()};
      setup.tolerance[decode_dtype(json(name))] = tolerance;
    }
    setup.verification_enabled = document.at("verification_enabled").get<bool>();
    if (document.contains("reference")) setup.reference = decode_launch(document.at("reference"));
    setup.cubin_cache_dir = document.value("cubin_cache", std::string());
    setup.measurement = decode_measurement(document.at("measurement"));
    setup.reference_from_baseline = document.value("reference_from_baseline", false);
    if (document.contains("stream")) setup.stream = decode_stream(document.at("stream"));
    if (document.contains("baseline")) {
      const json& baseline = document.at("baseline");
      BaselineCall call;
      call.library = baseline.at("library").get<std::string>();
      call.operation = baseline.at("operation").get<std::string>();
      call.compute = baseline.at("compute").get<std::string>();
      call.m = baseline.at("m").get<std::int64_t>();
      call.n = baseline.at("n").get<std::int64_t>();
      call.k = baseline.at("k").get<std::int64_t>();
      call.transpose_b = baseline.value("transpose_b", false);
      call.a = baseline.at("a").get<int>();
      call.b = baseline.at("b").get<int>();
      call.c = baseline.at("c").get<int>();
      call.alpha = baseline.at("alpha").get<double>();
      call.beta = baseline.at("beta").get<double>();
      setup.baseline = call;
    }
    return setup;
  });
}

json encode(const EvaluationRequest& request) {
  json document = {{"launch", encode(request.launch)},
                   {"verify", request.verify},
                   {"measure_energy", request.measure_energy},
                   {"burst", request.burst},
                   {"sustained_seconds", request.sustained_seconds},
                   {"timeout_seconds", request.timeout_seconds}};
  if (request.loader) document["loader"] = encode(*request.loader);
  return document;
}

json encode(const loader::LoaderConfiguration& loader) {
  return {{"pinned", loader.pinned},   {"workers", loader.workers}, {"prefetch", loader.prefetch},
          {"streams", loader.streams}, {"batch", loader.batch},     {"chunk_bytes", loader.chunk_bytes}};
}

loader::LoaderConfiguration decode_loader(const json& document) {
  return guarded("loader settings", [&] {
    loader::LoaderConfiguration loader;
    loader.pinned = document.at("pinned").get<bool>();
    loader.workers = document.at("workers").get<int>();
    loader.prefetch = document.at("prefetch").get<int>();
    loader.streams = document.at("streams").get<int>();
    loader.batch = document.at("batch").get<std::int64_t>();
    loader.chunk_bytes = document.at("chunk_bytes").get<std::int64_t>();
    return loader;
  });
}

json encode(const WorkerStream& stream) {
  WorkerArgument generator;  // carries the generator's initialisation in the argument's encoding
  generator.init = stream.generator;
  generator.dtype = stream.dtype;
  return {{"files", stream.files},
          {"npy", stream.npy},
          {"generator", encode(generator)},
          {"item_shape", stream.item_shape},
          {"items", stream.items},
          {"input_argument", stream.input_argument},
          {"output_argument", stream.output_argument},
          {"output_item_elements", stream.output_item_elements},
          {"reference_loader", encode(stream.reference_loader)}};
}

WorkerStream decode_stream(const json& document) {
  return guarded("stream", [&] {
    WorkerStream stream;
    stream.files = document.at("files").get<std::vector<std::string>>();
    stream.npy = document.at("npy").get<bool>();
    WorkerArgument generator = decode_argument(document.at("generator"));
    stream.generator = generator.init;
    stream.dtype = generator.dtype;
    stream.item_shape = document.at("item_shape").get<std::vector<std::int64_t>>();
    stream.items = document.at("items").get<std::int64_t>();
    stream.input_argument = document.at("input_argument").get<int>();
    stream.output_argument = document.at("output_argument").get<int>();
    stream.output_item_elements = document.at("output_item_elements").get<std::int64_t>();
    stream.reference_loader = decode_loader(document.at("reference_loader"));
    return stream;
  });
}

EvaluationRequest decode_request(const json& document) {
  return guarded("evaluation request", [&] {
    EvaluationRequest request;
    request.launch = decode_launch(document.at("launch"));
    request.verify = document.at("verify").get<bool>();
    request.measure_energy = document.at("measure_energy").get<bool>();
    request.burst = document.at("burst").get<bool>();
    request.sustained_seconds = document.at("sustained_seconds").get<double>();
    request.timeout_seconds = document.at("timeout_seconds").get<double>();
    if (document.contains("loader")) request.loader = decode_loader(document.at("loader"));
    return request;
  });
}

json encode(const DeviceProperties& properties) {
  return {{"name", properties.name},
          {"arch_major", properties.arch_major},
          {"arch_minor", properties.arch_minor},
          {"max_threads_per_block", properties.max_threads_per_block},
          {"max_shared_memory_per_block", properties.max_shared_memory_per_block},
          {"max_shared_memory_per_sm", properties.max_shared_memory_per_sm},
          {"max_registers_per_block", properties.max_registers_per_block},
          {"max_registers_per_sm", properties.max_registers_per_sm},
          {"max_threads_per_sm", properties.max_threads_per_sm},
          {"max_blocks_per_sm", properties.max_blocks_per_sm},
          {"sm_count", properties.sm_count},
          {"warp_size", properties.warp_size},
          {"l2_cache_bytes", properties.l2_cache_bytes},
          {"from_hardware", properties.from_hardware}};
}

DeviceProperties decode_properties(const json& document) {
  return guarded("device properties", [&] {
    DeviceProperties properties;
    properties.name = document.at("name").get<std::string>();
    properties.arch_major = document.at("arch_major").get<int>();
    properties.arch_minor = document.at("arch_minor").get<int>();
    properties.max_threads_per_block = document.at("max_threads_per_block").get<std::int64_t>();
    properties.max_shared_memory_per_block = document.at("max_shared_memory_per_block").get<std::int64_t>();
    properties.max_shared_memory_per_sm = document.at("max_shared_memory_per_sm").get<std::int64_t>();
    properties.max_registers_per_block = document.at("max_registers_per_block").get<std::int64_t>();
    properties.max_registers_per_sm = document.at("max_registers_per_sm").get<std::int64_t>();
    properties.max_threads_per_sm = document.at("max_threads_per_sm").get<std::int64_t>();
    properties.max_blocks_per_sm = document.at("max_blocks_per_sm").get<std::int64_t>();
    properties.sm_count = document.at("sm_count").get<std::int64_t>();
    properties.warp_size = document.at("warp_size").get<std::int64_t>();
    properties.l2_cache_bytes = document.at("l2_cache_bytes").get<std::int64_t>();
    properties.from_hardware = document.at("from_hardware").get<bool>();
    return properties;
  });
}

json encode(const gpu::DeviceInfo& info) {
  return {{"properties", encode(info.properties)},
          {"pci_bus_id", info.pci_bus_id},
          {"cuda_driver_version", info.cuda_driver_version},
          {"driver_version", info.driver_version},
          {"total_memory_bytes", info.total_memory_bytes}};
}

gpu::DeviceInfo decode_device_info(const json& document) {
  return guarded("device info", [&] {
    gpu::DeviceInfo info;
    info.properties = decode_properties(document.at("properties"));
    info.pci_bus_id = document.at("pci_bus_id").get<std::string>();
    info.cuda_driver_version = document.at("cuda_driver_version").get<std::string>();
    info.driver_version = document.at("driver_version").get<std::string>();
    info.total_memory_bytes = document.at("total_memory_bytes").get<std::int64_t>();
    return info;
  });
}

json encode(const TimeStatistics& time) {
  return {{"median_ms", time.median_ms},       {"min_ms", time.min_ms},   {"max_ms", time.max_ms},
          {"relative_spread", time.relative_spread}, {"samples", time.samples}, {"low_ms", time.low_ms},
          {"high_ms", time.high_ms}};
}

TimeStatistics decode_time(const json& document) {
  return guarded("time statistics", [&] {
    TimeStatistics time;
    time.median_ms = document.at("median_ms").get<double>();
    time.min_ms = document.at("min_ms").get<double>();
    time.max_ms = document.at("max_ms").get<double>();
    time.relative_spread = document.at("relative_spread").get<double>();
    time.samples = document.at("samples").get<int>();
    time.low_ms = document.at("low_ms").get<double>();
    time.high_ms = document.at("high_ms").get<double>();
    return time;
  });
}

json encode(const Evaluation& evaluation) {
  const TimeStatistics& time = evaluation.time;
  json document = {{"status", std::string(status_name(evaluation.status))},
          {"message", evaluation.message},
          {"time", encode(time)},
          {"compile_ms", evaluation.compile_ms},
          {"cubin_cached", evaluation.cubin_cached},
          {"registers", evaluation.registers},
          {"static_shared_bytes", evaluation.static_shared_bytes},
          {"dynamic_shared_bytes", evaluation.dynamic_shared_bytes},
          {"threads_per_block", evaluation.threads_per_block},
          {"occupancy", evaluation.occupancy},
          {"sm_clock_mhz", evaluation.sm_clock_mhz},
          {"throttle_reasons", evaluation.throttle_reasons},
          {"power_w", evaluation.power_w},
          {"temperature_c", evaluation.temperature_c},
          {"energy_mj", evaluation.energy_mj},
          {"energy_window_ms", evaluation.energy_window_ms},
          {"max_error", evaluation.max_error},
          {"timestamp", evaluation.timestamp}};
  const WorkerStageTimes& stages = evaluation.worker_stages;
  document["worker_stages"] = {{"preparation_ms", stages.preparation_ms}, {"verification_ms", stages.verification_ms},
                               {"warmup_ms", stages.warmup_ms},           {"sampling_ms", stages.sampling_ms},
                               {"conditions_ms", stages.conditions_ms},   {"energy_ms", stages.energy_ms}};
  if (!evaluation.device.empty()) document["device"] = evaluation.device;
  const StreamStages& stream = evaluation.stream;
  if (stream.end_to_end_ms > 0) {
    document["stream"] = {{"end_to_end_ms", stream.end_to_end_ms}, {"host_read_ms", stream.host_read_ms},
                          {"copy_in_ms", stream.copy_in_ms},       {"kernel_ms", stream.kernel_ms},
                          {"copy_out_ms", stream.copy_out_ms},     {"gpu_idle_ms", stream.gpu_idle_ms},
                          {"items_per_second", stream.items_per_second},
                          {"bytes_per_second", stream.bytes_per_second},
                          {"input_gbps", stream.input_gbps}};
  }
  return document;
}

Evaluation decode_evaluation(const json& document) {
  return guarded("evaluation", [&] {
    Evaluation evaluation;
    auto status = document.at("status").get<std::string>();
    std::optional<Status> parsed = parse_status(status);
    if (!parsed) throw TunerError(fmt::format("malformed evaluation message: unknown status '{}'", status));
    evaluation.status = *parsed;
    evaluation.message = document.at("message").get<std::string>();
    evaluation.time = decode_time(document.at("time"));
    evaluation.compile_ms = document.at("compile_ms").get<double>();
    evaluation.cubin_cached = document.at("cubin_cached").get<bool>();
    evaluation.registers = document.at("registers").get<int>();
    evaluation.static_shared_bytes = document.at("static_shared_bytes").get<int>();
    evaluation.dynamic_shared_bytes = document.at("dynamic_shared_bytes").get<std::int64_t>();
    evaluation.threads_per_block = document.at("threads_per_block").get<int>();
    evaluation.occupancy = document.at("occupancy").get<double>();
    evaluation.sm_clock_mhz = document.at("sm_clock_mhz").get<int>();
    evaluation.throttle_reasons = document.at("throttle_reasons").get<std::uint64_t>();
    evaluation.power_w = document.at("power_w").get<double>();
    evaluation.temperature_c = document.at("temperature_c").get<int>();
    evaluation.energy_mj = document.at("energy_mj").get<double>();
    evaluation.energy_window_ms = document.at("energy_window_ms").get<double>();
    evaluation.max_error = document.at("max_error").get<double>();
    evaluation.timestamp = document.at("timestamp").get<double>();
    if (document.contains("device")) evaluation.device = document.at("device").get<std::string>();
    if (document.contains("worker_stages")) {
      const json& stages = document.at("worker_stages");
      WorkerStageTimes& times = evaluation.worker_stages;
      times.preparation_ms = stages.at("preparation_ms").get<double>();
      times.verification_ms = stages.at("verification_ms").get<double>();
      times.warmup_ms = stages.at("warmup_ms").get<double>();
      times.sampling_ms = stages.at("sampling_ms").get<double>();
      times.conditions_ms = stages.at("conditions_ms").get<double>();
      times.energy_ms = stages.at("energy_ms").get<double>();
    }
    if (document.contains("stream")) {
      const json& stream = document.at("stream");
      StreamStages& stages = evaluation.stream;
      stages.end_to_end_ms = stream.at("end_to_end_ms").get<double>();
      stages.host_read_ms = stream.at("host_read_ms").get<double>();
      stages.copy_in_ms = stream.at("copy_in_ms").get<double>();
      stages.kernel_ms = stream.at("kernel_ms").get<double>();
      stages.copy_out_ms = stream.at("copy_out_ms").get<double>();
      stages.gpu_idle_ms = stream.at("gpu_idle_ms").get<double>();
      stages.items_per_second = stream.at("items_per_second").get<double>();
      stages.bytes_per_second = stream.at("bytes_per_second").get<double>();
      stages.input_gbps = stream.at("input_gbps").get<double>();
    }
    return evaluation;
  });
}

// ---------------------------------------------------------------- framing

namespace {

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    // send() with MSG_NOSIGNAL: a worker that died must read as an error here, not kill the tuner with SIGPIPE.
    ssize_t written = send(fd, data, size, MSG_NOSIGNAL);
    if (written < 0 && errno == ENOTSOCK) written = write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw TunerError(fmt::format("cannot write to the evaluation worker channel: {}", std::strerror(errno)));
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

// Reads exactly size bytes. false: the peer closed or the deadline passed (timed_out says which).
bool read_all(int fd, char* data, std::size_t size, std::chrono::steady_clock::time_point deadline, bool& timed_out) {
  timed_out = false;
  while (size > 0) {
    if (deadline != std::chrono::steady_clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        return false;
      }
      pollfd waiting{fd, POLLIN, 0};
      int ready = poll(&waiting, 1, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1 << 30)));
      if (ready < 0 && errno != EINTR) {
        throw TunerError(fmt::format("cannot wait for the evaluation worker: {}", std::strerror(errno)));
      }
      if (ready <= 0) continue;
    }
    ssize_t received = read(fd, data, size);
    if (received < 0) {
      if (errno == EINTR) continue;
      if (errno == ECONNRESET) return false;
      throw TunerError(fmt::format("cannot read from the evaluation worker channel: {}", std::strerror(errno)));
    }
    if (received == 0) return false;
    data += received;
    size -= static_cast<std::size_t>(received);
  }
  return true;
}

}  // namespace

void write_message(int fd, const json& message) {
  std::string text = message.dump();
  auto length = static_cast<std::uint32_t>(text.size());
  char header[sizeof length];
  std::memcpy(header, &length, sizeof length);
  write_all(fd, header, sizeof header);
  write_all(fd, text.data(), text.size());
}

ReadResult read_message(int fd, std::chrono::steady_clock::time_point deadline) {
  ReadResult result;
  std::uint32_t length = 0;
  char header[sizeof length];
  bool timed_out = false;
  if (!read_all(fd, header, sizeof header, deadline, timed_out)) {
    result.outcome = timed_out ? ReadOutcome::timed_out : ReadOutcome::closed;
    return result;
  }
  std::memcpy(&length, header, sizeof length);
  if (length > largest_message_bytes) {
    throw TunerError(fmt::format("evaluation worker channel broken: a message of {} bytes announced", length));
  }
  std::string text(length, '\0');
  if (!read_all(fd, text.data(), text.size(), deadline, timed_out)) {
    result.outcome = timed_out ? ReadOutcome::timed_out : ReadOutcome::closed;
    return result;
  }
  try {
    result.message = json::parse(text);
  } catch (const json::exception& error) {
    throw TunerError(fmt::format("evaluation worker channel broken: {}", error.what()));
  }
  result.outcome = ReadOutcome::message;
  return result;
}

}  // namespace kernlathe::protocol
