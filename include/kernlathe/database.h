#pragma once
// kernlathe's database of tuned configurations: what `tune` stores per kernel and what an application ships.
//
// One JSON file per kernel (results/best/<kernel>.json, or <export>/database/<kernel>.json), format 2:
//   {"format": 2, "kernel": "saxpy", "description": {...}, "entries": [{...}, ...]}
// The description is what a launch needs, taken from the kernel spec when `tune` stored the newest entry: the
// template's identity and hash, the entry point, parameters with their types and values, derived values,
// constraints, launch geometry and arguments as expressions of the kernel's language (problem symbols, parameters,
// derived values, device properties), the space's problem defaults and the configuration to fall back on. Each
// entry is one tuned configuration: device name, arch, driver, problem, typed parameter values, the measured time
// with its spread, date, and the spec hash it was measured against. docs/runtime.md documents every field.
//
// Looking a configuration up needs no GPU and no CUDA header: select() walks the fallback ladder
//   exact device and problem -> same arch, nearest problem
//   -> the space's default for this problem (where none is near: the first problem default whose condition holds)
//   -> same arch, any problem -> same major arch -> the description's default configuration
// and says which rung it took and why. A problem default goes before entries of far problems because a 16-row
// decode GEMM ran at 0.41-0.61 of cuBLAS with the 4096-row winner and at 0.55-0.83 with the decode default
// (results/linear_workload/2026-11-29-h200-c9fd0ac-decode-configurations.txt). Every candidate, the default
// included, must meet the description's constraints at the requested problem on this device (its properties and
// arch); when none does, select() says so (Rung::none) instead of handing back a configuration that computes a wrong
// answer (issue 30: the space defaults of a bf16 GEMM at M=1000 broke M % BM == 0 and left 10% of the output wrong on
// an H200). It never throws for a missing or unusable entry; the runtime (plan_kernel, Runtime::kernel,
// Runtime::select) throws on Rung::none.

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kernlathe {

// A parameter, derived or scalar value: integers, reals, booleans and enumeration strings.
using Value = std::variant<std::int64_t, double, bool, std::string>;

// Problem symbols by name: {"M": 4096, "N": 4096, "K": 4096}.
using Problem = std::map<std::string, std::int64_t>;

// Parameter name -> value.
using ConfigurationValues = std::map<std::string, Value>;

inline constexpr int database_format = 2;

struct ParameterDescription {
  std::string name;
  std::string type;           // "integer", "boolean" or "enumeration"
  std::vector<Value> values;  // in declared order (an enumeration's macro value is the index of its value)
};

struct NamedExpression {
  std::string name;
  std::string expression;  // text in the kernel expression language
};

struct ArgumentDescription {
  std::string name;
  std::string kind;   // "buffer", "scalar" or "tensor_map"
  std::string dtype;  // "f32", "bf16", ...; a tensor map's element type is its buffer's
  std::string role;   // buffers: "in", "out" or "inout"
  std::string count;  // buffers: element count (expression)
  std::string value;  // scalars: default value (expression of problem symbols); the application may override it
  bool scratch = false;  // buffers the runtime owns: zeroed once, left zero by the kernel after every launch
  // tensor maps: the buffer they describe, its dimensions (innermost first), the box and the swizzle (bytes)
  std::string buffer;
  std::vector<std::string> dims;
  std::vector<std::string> box;
  std::string swizzle;
  // tensor maps: the strides of dims 1 .. rank - 1 in elements (expressions); empty: the dense tensor of dims
  std::vector<std::string> strides;
};

// Streamed kernels (a spec with a `stream:` section): items arrive batch by batch in the input buffer, results leave
// from the output buffer, and the loader settings (pinned staging, host workers, prefetch depth, copy streams, batch,
// copy chunk) are part of the tuned configuration.
struct StreamDescription {
  std::string input;                    // the buffer argument a batch of items arrives in
  std::string output;                   // the buffer argument a batch's results are copied back from
  std::string dtype;                    // of an input item's elements
  std::vector<std::string> item_shape;  // of one input item (expressions of problem symbols), outermost first
  std::string items;                    // items of the tuned workload (expression of problem symbols)

  bool operator==(const StreamDescription&) const = default;
};

// `problem_defaults:` of the space: where no tuned problem is near, the configuration to start from for a kind of
// problem.
struct ProblemDefaultDescription {
  std::string when;                     // expression of problem symbols and device properties
  ConfigurationValues configuration;    // every parameter: the item's values over the space's defaults

  bool operator==(const ProblemDefaultDescription&) const = default;
};

struct KernelDescription {
  std::string kernel;
  std::string template_name;  // "saxpy.cu"
  std::string template_hash;  // over the template and every project file it includes (16 hex digits)
  std::string spec_hash;      // over the spec, its space and the template hash: entries with another one are stale
  std::string entry_point;
  std::vector<std::string> template_arguments;  // expressions
  std::vector<std::string> compile_options;
  bool arch_specific = false;                    // compiled for sm_90a rather than sm_90 where the arch has one
  std::vector<std::pair<std::string, std::int64_t>> problem;  // symbols with their defaults, in declared order
  std::vector<ParameterDescription> parameters;
  std::vector<NamedExpression> derived;  // in declared order; each may read earlier ones
  std::vector<std::string> constraints;
  std::array<std::string, 3> grid{"1", "1", "1"};
  std::array<std::string, 3> block{"1", "1", "1"};
  std::string shared_memory = "0";  // dynamic shared memory in bytes
  std::vector<ArgumentDescription> arguments;
  ConfigurationValues default_configuration;  // the last rung of the ladder; valid at the default problem
  std::string default_origin;                 // "space defaults", "verification reference" or "first valid"
  std::vector<ProblemDefaultDescription> problem_defaults;  // in declared order; absent in older databases
  // Streamed specs: loader setting ("pinned", "workers", "prefetch", "streams", "batch", "chunk_bytes") -> expression
  std::map<std::string, std::string> loader;
  std::optional<StreamDescription> stream;  // streamed specs only
};

struct TimeSummary {
  double median_ms = 0;
  double spread = 0;  // relative spread of the samples (interquartile range / median)
  int samples = 0;

  bool operator==(const TimeSummary&) const = default;
};

struct DatabaseEntry {
  std::string device_name;  // "NVIDIA H200"
  std::string arch;         // "sm_90"
  std::string driver;       // "13.0" (driver API version), may be empty in entries of older tools
  Problem problem;
  ConfigurationValues configuration;
  TimeSummary time;
  double gflops = 0;  // 0 when the spec states no flop count
  double gbps = 0;
  std::string date;       // ISO 8601, UTC
  std::string spec_hash;  // compared with the description's: another value marks the entry stale
  std::string tool_version;

  bool operator==(const DatabaseEntry&) const = default;
};

struct KernelDatabase {
  std::string kernel;
  KernelDescription description;
  std::vector<DatabaseEntry> entries;
};

// Reading and writing. Errors carry the file name and, for JSON syntax errors, the byte offset.
class DatabaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

KernelDatabase parse_database(const std::string& json_text, const std::string& origin = "<memory>");
KernelDatabase read_database(const std::filesystem::path& file);
std::string database_json(const KernelDatabase& database);  // pretty, sorted keys, entries in a stable order

// Why an entry cannot be trusted, or "" when it is current: another spec hash, or an entry of an older format.
std::string stale_reason(const KernelDatabase& database, const DatabaseEntry& entry);

// "N=1048576,K=8" in the description's symbol order (symbols the description does not know follow, sorted).
std::string problem_text(const KernelDescription& description, const Problem& problem);
// Parses "N=1048576,K=8" (empty text: no symbols). Throws DatabaseError on malformed text.
Problem parse_problem_text(const std::string& text);

// ---------------------------------------------------------------- selection

struct DeviceIdentity {
  std::string name;  // as the driver reports it
  int arch_major = 0;
  int arch_minor = 0;
  // Device properties that expressions may read (sm_count, max_shared_memory_per_block, ...); a constraint that
  // reads a property missing here makes the candidate unusable, with the reason said.
  std::vector<std::pair<std::string, Value>> properties;
  std::string arch() const { return "sm_" + std::to_string(arch_major) + std::to_string(arch_minor); }
};

// problem_default: the first of the description's problem defaults whose condition holds and whose configuration is
// usable, taken where no entry is within nearest_problem_distance (it is preferred to an entry of a farther problem
// or another arch, and to the default configuration). none: no candidate is usable, not even the default
// configuration; the Selection holds no configuration.
enum class Rung {
  exact,
  same_arch_nearest_problem,
  same_arch_any_problem,
  same_major_arch,
  problem_default,
  default_configuration,
  none
};
// "exact", "same arch, nearest problem", ..., "the space's default for this problem", ..., "no usable configuration"
const char* rung_name(Rung rung);

struct SelectOptions {
  // How far a problem may be for the second rung: the sum over problem symbols of |log2(requested / tuned)|.
  // 2.0 accepts one symbol 4x off, or two symbols 2x off each.
  double nearest_problem_distance = 2.0;
  bool use_stale_entries = false;  // stale entries are skipped (and counted in the reason) unless this is set
};

struct Selection {
  ConfigurationValues configuration;   // empty when nothing is usable
  Rung rung = Rung::default_configuration;
  std::optional<DatabaseEntry> entry;  // the entry taken; empty on the last three rungs
  double problem_distance = 0;         // of the entry taken
  // One sentence a person can read: what was taken, and why. On Rung::none: the device, the problem
  // (problem_text), the constraint the default configuration breaks, and how many entries were unusable with one
  // example, e.g. "no usable configuration for NVIDIA H200 (sm_90) at M=1000,N=4096,K=4096: the default
  // configuration (space defaults): it breaks the constraint M % BM == 0; 1 entry unusable here, e.g. ...".
  std::string reason;

  bool usable() const { return rung != Rung::none; }
};

// The requested problem completed with the description's defaults for symbols it does not name.
Problem complete_problem(const KernelDescription& description, const Problem& requested);

// Why a configuration cannot run at a problem (completed with the description's defaults) on a device: "it breaks
// the constraint M % BM == 0", "it has no value for parameter BM", "its constraints cannot be checked here (...)";
// "" when every constraint holds. Names are bound in the order expressions read them: device properties, problem
// symbols, parameters, derived values.
std::string unusable_reason(const KernelDescription& description, const DeviceIdentity& device, const Problem& problem,
                            const ConfigurationValues& configuration);

// Walks the ladder. Entries that are stale, or whose configuration is unusable at the requested problem on this
// device (unusable_reason), are passed over (and counted in the reason); problem defaults and the default
// configuration are checked the same way, and when the default fails too the result is Rung::none with no
// configuration. Never throws for a missing or unusable entry.
Selection select(const KernelDatabase& database, const DeviceIdentity& device, const Problem& requested,
                 const SelectOptions& options = {});

}  // namespace kernlathe
