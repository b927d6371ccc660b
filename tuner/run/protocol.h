#pragma once
// Messages between the tuner (GpuEvaluator) and an evaluation worker process: JSON documents, each framed by its
// length as 4 bytes (host byte order: both ends run on one machine), over a socket pair.
//
//   tuner -> worker                     worker -> tuner
//   {"type":"device_info"}              {"type":"device_info","info":{...}}
//   {"type":"setup","setup":{...}}      {"type":"setup_done","stages_ms":[[name, ms, alongside?], ...]}
//   {"type":"reference","launch":{...}} {"type":"reference_done","stages_ms":[...]}
//   {"type":"evaluate","request":{...}} {"type":"evaluation","evaluation":{...}}
//                                       {"type":"error","no_gpu":bool,"message":"..."}  (to any request)
//
// device_info with "open": true (and "cubin_cache": a folder) also has the worker open the device on a thread
// right after its reply: the context, its own kernels and NVML are ready or on their way when the setup comes.
// A setup without a reference launch, where needs_reference_kernel() holds, fills the buffers and times the
// baseline, then waits for the reference message: the tuner compiles the reference configuration meanwhile.

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "tuner/gpu/device.h"
#include "tuner/loader/pipeline.h"
#include "tuner/record/evaluation.h"
#include "tuner/measure/measurement.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// A scalar kernel argument's value, already evaluated; the worker converts it to the argument's dtype.
using ScalarValue = std::variant<std::int64_t, double>;

// The per-configuration part of a tensor-map argument: the TMA box and swizzle follow the tiles being tuned.
struct TensorMapBox {
  std::vector<std::int64_t> box;  // elements, innermost first
  std::int64_t swizzle_bytes = 0;  // 0, 32, 64 or 128
};

// One kernel launch: which function of which cubin, with what geometry and scalar values.
struct KernelLaunch {
  std::filesystem::path cubin_path;
  std::string lowered_name;  // the mangled name NVRTC reports for the instantiated entry point
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::int64_t dynamic_shared_bytes = 0;
  std::map<std::string, ScalarValue> scalar_values;  // by argument name, one per scalar argument
  std::map<std::string, TensorMapBox> tensor_maps;   // by argument name, one per tensor-map argument
};

// A kernel argument with its size already evaluated for the problem at hand.
struct WorkerArgument {
  std::string name;
  Dtype dtype = Dtype::f32;
  bool is_buffer = true;
  std::int64_t element_count = 0;  // buffers only
  Initialisation init;             // buffers only
  Role role = Role::in;
  // Tensor maps (neither buffer nor scalar): the index of the buffer argument described, its dims, innermost first,
  // and the strides of dims 1 .. rank - 1 in elements (empty: dense). -1 for every other argument.
  int tensor_buffer = -1;
  std::vector<std::int64_t> tensor_dims;
  std::vector<std::int64_t> tensor_strides;
  bool is_tensor_map() const { return tensor_buffer >= 0; }
};

// A vendor library call equivalent to the kernel (tuner/gpu/cublas.h), with its sizes evaluated for the problem.
struct BaselineCall {
  std::string library;    // "cublas"
  std::string operation;  // "gemm"
  std::string compute;    // "f32", "tf32", "f16", "bf16"
  std::int64_t m = 0, n = 0, k = 0;
  bool transpose_b = false;  // B is n x k: C = alpha * A * B^T + beta * C
  int a = -1, b = -1, c = -1;  // argument indices of the buffers
  double alpha = 1, beta = 0;
};

// A streamed workload as the worker runs it: the spec's stream section with files found and sizes evaluated by
// the tuner (tuner/loader). Inputs arrive batch by batch through the pipeline instead of setup buffers.
struct WorkerStream {
  std::vector<std::string> files;  // empty: generated items
  bool npy = true;                 // files: .npy, else raw
  Initialisation generator;        // generated items
  Dtype dtype = Dtype::f32;
  std::vector<std::int64_t> item_shape;
  std::int64_t items = 0;
  int input_argument = -1;   // index into WorkerSetup::arguments: receives a batch
  int output_argument = -1;  // index into WorkerSetup::arguments: comes back to the host
  std::int64_t output_item_elements = 0;
  loader::LoaderConfiguration reference_loader;  // LoaderConfiguration::reference, with the reference configuration's batch
};

struct WorkerSetup {
  int device = 0;
  std::vector<WorkerArgument> arguments;  // in the kernel's parameter order
  std::map<Dtype, Tolerance> tolerance;   // per output dtype; a dtype not listed compares exactly
  bool verification_enabled = true;
  // Run once at setup; its outputs stay on the device. Absent where the baseline is the reference, where nothing
  // is verified, or where the tuner sends it later in a `reference` message (needs_reference_kernel()).
  std::optional<KernelLaunch> reference;
  MeasurementSettings measurement;
  std::optional<BaselineCall> baseline;   // timed at setup; its time comes back in setup_done
  bool reference_from_baseline = false;   // the baseline's outputs are the reference (no reference launch)
  std::optional<WorkerStream> stream = std::nullopt;  // streamed spec: the reference runs as a naive pipeline pass
  std::filesystem::path cubin_cache_dir;  // where the worker keeps its own kernels' cubin; empty: the default
};

// Whether the setup's reference is a kernel of the template that the worker launches: a streamed spec's naive
// pass always, otherwise when outputs are verified and the baseline is not the reference.
bool needs_reference_kernel(const WorkerSetup& setup);

struct EvaluationRequest {
  KernelLaunch launch;
  bool verify = true;
  double timeout_seconds = 0;  // 0: the evaluator's default
  std::optional<loader::LoaderConfiguration> loader = std::nullopt;  // streamed specs: the configuration's loader settings
  bool measure_energy = false;  // energy per launch after timing (tuner/measure/kernel_timer.h)
  bool burst = false;           // a burst timing: the tuner rested the GPU before it (tuner/measure/measurement.h)
  double sustained_seconds = 0;  // > 0: the sustained figure instead (KernelTimer::sustained), nothing verified
};

namespace protocol {

nlohmann::json encode(const KernelLaunch& launch);
nlohmann::json encode(const WorkerArgument& argument);
nlohmann::json encode(const WorkerSetup& setup);
nlohmann::json encode(const EvaluationRequest& request);
nlohmann::json encode(const WorkerStream& stream);
nlohmann::json encode(const loader::LoaderConfiguration& loader);
nlohmann::json encode(const MeasurementSettings& settings);
nlohmann::json encode(const DeviceProperties& properties);
nlohmann::json encode(const gpu::DeviceInfo& info);
nlohmann::json encode(const TimeStatistics& time);
// Every field of Evaluation except the configuration, which only the tuner knows.
nlohmann::json encode(const Evaluation& evaluation);

// Each throws TunerError naming the field when the document does not match.
KernelLaunch decode_launch(const nlohmann::json& document);
WorkerArgument decode_argument(const nlohmann::json& document);
WorkerSetup decode_setup(const nlohmann::json& document);
EvaluationRequest decode_request(const nlohmann::json& document);
WorkerStream decode_stream(const nlohmann::json& document);
loader::LoaderConfiguration decode_loader(const nlohmann::json& document);
MeasurementSettings decode_measurement(const nlohmann::json& document);
DeviceProperties decode_properties(const nlohmann::json& document);
gpu::DeviceInfo decode_device_info(const nlohmann::json& document);
TimeStatistics decode_time(const nlohmann::json& document);
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
}  // namespace kernlathe
