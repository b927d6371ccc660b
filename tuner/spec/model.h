#pragma once
// Plain data that the spec loader produces and every later stage reads. No YAML, no CUDA here.

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernlathe/database.h"
#include "tuner/common/error.h"
#include "tuner/expr/expression.h"

namespace kernlathe {

using expr::Expression;
using expr::Value;

// ---------------------------------------------------------------- space

enum class ParameterType { integer, boolean, enumeration };

struct Parameter {
  std::string name;
  ParameterType type = ParameterType::integer;
  std::vector<Value> values;  // in declared order; int64 for integer, bool for boolean, string for enumeration
  Value default_value;        // one of values
  // `when:` in a space file. Empty: the parameter always matters. Otherwise it matters only for the
  // configurations where this condition (on constants and parameters declared before it) holds; elsewhere it takes
  // its default value, so configurations that differ only in irrelevant parameters are one configuration.
  Expression relevant_when;
  SourceLocation where;
};

struct Constraint {
  Expression expression;  // where() gives file:line:column
};

// A named expression of parameters (and device properties, and other derived values declared before it),
// usable in constraints, launch geometry and the template (as a compile-time constant).
struct DerivedValue {
  std::string name;
  Expression expression;
};

// `problem_defaults:` in a space file: where no tuned problem is near, the configuration to start from for a kind
// of problem. `when` reads problem symbols and device properties only; `values` name parameters with values from
// their lists, and the parameters they leave out keep the space's defaults. They change no configuration and no
// measurement, so the spec hash leaves the block out (spec_hash.h).
struct ProblemDefault {
  Expression when;
  std::map<std::string, Value> values;
  SourceLocation where;  // the list item
};

struct Space {
  std::string name;
  std::filesystem::path file;  // empty when inline in a spec
  std::vector<Parameter> parameters;
  std::vector<DerivedValue> derived;
  std::vector<Constraint> constraints;
  std::vector<ProblemDefault> problem_defaults;  // in declared order: the first whose `when` holds applies
  bool streamed = false;  // the space of a streamed spec: its records carry the stream stage columns
};

// ---------------------------------------------------------------- device properties

// What expressions may ask of the device. Names as used in expressions are listed in device_property_names().
struct DeviceProperties {
  std::string name;  // "NVIDIA H200" or "profile sm_90"
  int arch_major = 0;
  int arch_minor = 0;
  std::int64_t max_threads_per_block = 0;
  std::int64_t max_shared_memory_per_block = 0;  // bytes, opt-in maximum (what a kernel may request)
  std::int64_t max_shared_memory_per_sm = 0;     // bytes
  std::int64_t max_registers_per_block = 0;
  std::int64_t max_registers_per_sm = 0;
  std::int64_t max_threads_per_sm = 0;
  std::int64_t max_blocks_per_sm = 0;
  std::int64_t sm_count = 0;
  std::int64_t warp_size = 32;
  std::int64_t l2_cache_bytes = 0;
  bool from_hardware = false;  // false: a built-in profile chosen with --arch

  std::string arch_name() const;  // "sm_90"
};

// Built-in profiles for --arch sm_80|sm_86|sm_89|sm_90 (data-sheet values). Throws InputError for others.
DeviceProperties device_profile(const std::string& arch);
std::vector<std::string> known_device_profiles();

// Boards by the name the driver reports ("NVIDIA H100 PCIe"): their arch's profile with the board's SM count and L2
// size, so that what depends on the board (a constraint reading sm_count: 114 SMs on an H100 PCIe, 132 on an H100
// SXM or H200) and the exact rung (entries match by device name) come out as on that board. For `tune best --select
// --device`. Throws InputError for an unknown name, listing the known ones.
DeviceProperties named_device_profile(const std::string& name);
std::vector<std::string> known_device_names();

// The runtime's view of a device (kernlathe/database.h): its name, arch, and the properties expressions read
// (device_property_values), as Runtime::device() gives them on a real GPU.
DeviceIdentity runtime_identity(const DeviceProperties& device);

// Name -> value pairs exposed to expressions: max_threads_per_block, max_shared_memory_per_block,
// max_shared_memory_per_sm, max_registers_per_block, max_registers_per_sm, max_threads_per_sm,
// max_blocks_per_sm, sm_count, warp_size, arch_major, arch_minor, arch (= 10*major + minor).
std::vector<std::pair<std::string, Value>> device_property_values(const DeviceProperties& device);
std::vector<std::string> device_property_names();

// ---------------------------------------------------------------- kernel spec

enum class Dtype { f16, bf16, f32, f64, i8, u8, i32, u32, i64 };
inline constexpr std::array<Dtype, 9> all_dtypes{Dtype::f16, Dtype::bf16, Dtype::f32, Dtype::f64, Dtype::i8,
                                                 Dtype::u8,  Dtype::i32,  Dtype::u32, Dtype::i64};
std::size_t dtype_size(Dtype dtype);
std::string dtype_name(Dtype dtype);                // "f32"
std::string dtype_cpp_name(Dtype dtype);            // "float", "__nv_bfloat16", ...
std::optional<Dtype> parse_dtype(std::string_view name);

enum class Role { in, out, inout };

struct Initialisation {
  enum class Kind { random, constant, sequence } kind = Kind::random;
  std::uint64_t seed = 1;     // random
  double low = -1.0, high = 1.0;  // random: uniform in [low, high)
  double value = 0.0;         // constant
  double start = 0.0, step = 1.0;  // sequence: start + i * step
};

// A Hopper TMA descriptor (CUtensorMap) of a buffer argument, viewed as a row-major tensor of rank dims.size() (1 to
// 5): dense, or with the strides given (a view, such as q inside a fused QKV projection output). The evaluation worker encodes it for every configuration (the box may depend on tile
// parameters) and passes the 128-byte descriptor by value; a kernel declares it `const __grid_constant__`.
struct TensorMapDescription {
  std::string buffer;               // the name of a buffer argument of the same spec
  std::vector<Expression> dims;     // elements, innermost (contiguous) dimension first; problem symbols only
  std::vector<Expression> box;      // elements per TMA copy, innermost first; may use parameters
  // elements between consecutive indices of dims 1 .. rank - 1 (tuner/driver/tensor_map_strides.h); problem symbols
  // only; empty: dense
  std::vector<Expression> strides;
  Expression swizzle;               // shared-memory swizzle span in bytes: 0 (none), 32, 64 or 128
};

struct Argument {
  std::string name;
  Dtype dtype = Dtype::f32;
  bool is_buffer = true;
  // Buffers: element count and initial contents. Scalars: value.
  Expression count;
  Initialisation init;
  Role role = Role::in;
  Expression value;
  SourceLocation where;
  std::optional<TensorMapDescription> tensor_map;  // set for `type: tensor_map` (then is_buffer is false)
  // `scratch: true`: a zero-initialised work buffer the kernel itself leaves zero again after every launch (layernorm's
  // row_counters). The runtime library allocates it once per kernel instead of asking the application for it.
  bool scratch = false;
  bool is_scalar() const { return !is_buffer && !tensor_map; }
};

struct LaunchGeometry {
  std::array<Expression, 3> grid;   // missing dimensions are constant 1
  std::array<Expression, 3> block;
  Expression dynamic_shared_bytes;  // constant 0 when absent
};

struct Tolerance {
  double relative = 0;
  double absolute = 0;
};

struct Verification {
  bool enabled = true;
  // `reference: baseline`: the outputs of the spec's baseline (e.g. cuBLAS) are the reference instead of a
  // configuration of the template.
  bool reference_is_baseline = false;
  // The reference configuration: named parameter values; unnamed parameters take the space default.
  std::map<std::string, Value> reference;
  // `reference: [{...}, {...}]`: the later mappings, tried in order where `reference` breaks a constraint at the
  // problem or on the device (the fused GEMMs: the simt path where it applies, else the plainest wgmma one).
  std::vector<std::map<std::string, Value>> reference_alternatives;
  SourceLocation reference_where;  // the reference mapping in the spec; empty when the spec names none
  std::map<Dtype, Tolerance> tolerance;  // defaults by dtype, overridable per spec
  Tolerance tolerance_for(Dtype dtype) const;
};

struct Metrics {
  Expression flops;  // empty when not stated
  Expression bytes;  // minimum traffic: each input read once, each output written once
  // The arithmetic the flops run on, which picks the roofline's compute roof (issue 31): "fma" (fp32 on CUDA cores),
  // "tf32", "f16" or "bf16" (tensor cores). Empty when not stated: `tune report` infers it (compute_roof_of).
  std::string math;
};

// A vendor library routine that computes the same result as the template: timed in the same run, so results are
// reported as a fraction of it, and usable as the verification reference. Loaded at run time, like the driver.
struct Baseline {
  enum class Library { none, cublas };
  Library library = Library::none;
  std::string operation;  // "gemm": C = alpha * A * B + beta * C with row-major A (m x k), B (k x n), C (m x n)
  std::string compute;    // "f32", "tf32" (fp32 storage, tf32 tensor cores), "f16", "bf16": input precision;
                          // accumulation is fp32
  Expression m, n, k;     // problem symbols only
  // B stored n x k (row-major), C = alpha * A * B^T + beta * C: the nn.Linear layout of a weight matrix. An
  // expression of problem symbols, so one spec serves both layouts; empty: B is k x n.
  Expression transpose_b;
  std::string a, b, c;    // buffer argument names
  std::string alpha, beta;  // scalar argument names
  SourceLocation where;
  bool present() const { return library != Library::none; }
};

// Loader settings (streamed workloads) are kept as plain key -> text pairs until the loader issue gives them
// a model; an empty section is the normal case.
struct LoaderExpressions {
  std::map<std::string, std::string> settings;

  // Typed loader settings, read from the same `loader:` section when the spec has a `stream:` section: each an
  // expression of parameters (and problem symbols), so loader parameters live in the space beside the kernel's.
  // Empty expressions take the naive value: pageable staging, one worker, no prefetch (one batch in flight),
  // one stream, one item per batch, each copy in one piece.
  Expression pinned;       // boolean: staging buffers from cuMemHostAlloc (allocated once, reused) or pageable
  Expression workers;      // host threads reading or generating batches
  Expression prefetch;     // batches in flight (staging slots): 1 = no prefetch
  Expression streams;      // copy/compute streams, used round-robin by batch
  Expression batch;        // items per batch; must divide the stream's item count
  Expression chunk_bytes;  // host-to-device copies are split into chunks of this size; 0 = one copy per batch
};

// A streamed workload (`stream:` in a spec): the input lives on the host and reaches the kernel batch by batch.
// `input` receives a batch (items back to back), `output` comes back to the host; for those two arguments `count`
// is per item, and the launch geometry sees the loader's batch through the parameter that `loader.batch` names.
struct StreamWorkload {
  enum class SourceKind { files, generated };
  enum class FileFormat { npy, raw };
  bool enabled = false;
  SourceKind source = SourceKind::generated;
  // files: a glob (`*`, `?` in the file name part only) as written; ${NAME} and ${NAME:-default} expand from the
  // environment at run time, and a relative pattern is relative to base_directory (the spec's folder).
  std::string pattern;
  std::filesystem::path base_directory;
  FileFormat format = FileFormat::npy;
  Initialisation generator;           // generated items: values like a buffer initialisation, seeded per item
  Expression items;                   // item count; problem symbols only
  std::vector<Expression> item_shape;  // problem symbols only; its product is the input argument's count
  Dtype dtype = Dtype::f32;
  std::string input_argument;
  std::string output_argument;
  SourceLocation where;
};

struct KernelSpec {
  std::string name;
  std::filesystem::path file;           // the spec file
  std::filesystem::path template_file;  // resolved relative to the spec file
  std::string entry_point;              // kernel function or function template name
  // Template arguments of the entry point, as expressions of parameters/derived values:
  // entry_point<args...> is the instantiated name.
  std::vector<Expression> template_arguments;
  bool needs_arch_specific = false;     // sm_90a and friends (wgmma, setmaxnreg)
  std::vector<std::pair<std::string, std::int64_t>> problem;  // symbols with defaults, in declared order
  // The defaults as the spec file declares them, before --problem overrides: what a database's description
  // stores, so an application that leaves a symbol out gets the spec's value, not the last tuned problem's.
  std::vector<std::pair<std::string, std::int64_t>> declared_problem;
  std::vector<Argument> arguments;
  LaunchGeometry launch;
  std::vector<std::string> compile_options;
  Verification verification;
  Metrics metrics;
  Baseline baseline;
  Space space;
  LoaderExpressions loader;
  StreamWorkload stream;  // enabled only when the spec has a `stream:` section
};

}  // namespace kernlathe
