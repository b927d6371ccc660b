#pragma once
// Messages between the tuner (GpuEvaluator) and an evaluation worker process: JSON documents, each framed by its
// length as 4 bytes (host byte order: both ends run on one machine), over a socket pair.
//
//   tuner -> worker                     worker -> tuner
//   {"type":"device_info"}              {"type":"device_info","info":{...}}
//   {"type":"setup","setup":{...}}      {"type":"setup_done"}
//   {"type":"evaluate","request":{...}} {"type":"evaluation","evaluation":{...}}
//                                       {"type":"error","no_gpu":bool,"message":"..."}  (to any request)

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "tuner/gpu/device.h"
#include "tuner/record/evaluation.h"
#include "tuner/run/measurement.h"
#include "tuner/spec/model.h"

namespace tuner {

// A scalar kernel argument's value, already evaluated; the worker converts it to the argument's dtype.
using ScalarValue = std::variant<std::int64_t, double>;

// One kernel launch: which function of which cubin, with what geometry and scalar values.
struct KernelLaunch {
  std::filesystem::path cubin_path;
  std::string lowered_name;  // the mangled name NVRTC reports for the instantiated entry point
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::int64_t dynamic_shared_bytes = 0;
  std::map<std::string, ScalarValue> scalar_values;  // by argument name, one per scalar argument
};

// A kernel argument with its size already evaluated for the problem at hand.
struct WorkerArgument {
  std::string name;
  Dtype dtype = Dtype::f32;
  bool is_buffer = true;
  std::int64_t element_count = 0;  // buffers only
  Initialisation init;             // buffers only
  Role role = Role::in;
};

struct WorkerSetup {
  int device = 0;
  std::vector<WorkerArgument> arguments;  // in the kernel's parameter order
  std::map<Dtype, Tolerance> tolerance;   // per output dtype; a dtype not listed compares exactly
  bool verification_enabled = true;
  KernelLaunch reference;                 // run once at setup; its outputs stay on the device
  MeasurementSettings measurement;
};

struct EvaluationRequest {
  KernelLaunch launch;
  bool verify = true;
  double timeout_seconds = 0;  // 0: the evaluator's default
};

namespace protocol {

nlohmann::json encode(const KernelLaunch& launch);
nlohmann::json encode(const WorkerArgument& argument);
nlohmann::json encode(const WorkerSetup& setup);
nlohmann::json encode(const EvaluationRequest& request);
nlohmann::json encode(const MeasurementSettings& settings);
nlohmann::json encode(const DeviceProperties& properties);
nlohmann::json encode(const gpu::DeviceInfo& info);
// Every field of Evaluation except the configuration, which only the tuner knows.
nlohmann::json encode(const Evaluation& evaluation);

// Each throws TunerError naming the field when the document does not match.
KernelLaunch decode_launch(const nlohmann::json& document);
WorkerArgument decode_argument(const nlohmann::json& document);
WorkerSetup decode_setup(const nlohmann::json& document);
EvaluationRequest decode_request(const nlohmann::json& document);
MeasurementSettings decode_measurement(const nlohmann::json& document);
DeviceProperties decode_properties(const nlohmann::json& document);
gpu::DeviceInfo decode_device_info(const nlohmann::json& document);
Evaluation decode_evaluation(const nlohmann::json& document);

// Writes one framed message. Throws TunerError when the peer is gone (no SIGPIPE on sockets).
void write_message(int fd, const nlohmann::json& message);

enum class ReadOutcome { message, closed, timed_out };
struct ReadResult {
  ReadOutcome outcome = ReadOutcome::closed;
  nlohmann::json message;
};
// Reads one framed message, waiting at most until deadline. A peer that closes mid-message reads as closed.
// Throws TunerError for a malformed frame.
ReadResult read_message(int fd, std::chrono::steady_clock::time_point deadline =
                                    std::chrono::steady_clock::time_point::max());

}  // namespace protocol
}  // namespace tuner
