#pragma once
// kernlathe's runtime: picks the tuned configuration of a kernel for the GPU it runs on, compiles it on first use
// (or takes an embedded or cached cubin) and launches it with the kernel's own launch geometry.
//
//   kernlathe::Runtime runtime(kernlathe::RuntimeOptions::from_export("export"));
//   const kernlathe::Kernel& saxpy = runtime.kernel("saxpy", {{"N", n}});
//   std::printf("%s\n", saxpy.selection().reason.c_str());   // which rung of the ladder, and why
//   saxpy.launch(kernlathe::Arguments().set("x", x).set("y", y).set("a", 2.5), stream);
//
// Thread-safe: many threads may ask for the same kernel at once; it is selected, compiled and loaded once. The
// returned Kernel lives as long as the Runtime. Launches are asynchronous on the given stream (CUstream or
// cudaStream_t; nullptr is the legacy default stream).
//
// The runtime works in the device's primary context (the one the CUDA runtime API uses): it retains it while the
// Runtime lives and makes it current in each thread that calls kernel(). A thread that only launches needs that
// context current (any CUDA runtime call on the device makes it so, or one call of kernel() from that thread). The driver is loaded at run time: a program linked to
// kernlathe starts on machines without an NVIDIA driver and gets a kernlathe::RuntimeError when it asks for a
// kernel there. This header includes no CUDA header.

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernlathe/database.h"
#include "kernlathe/version.h"

struct CUstream_st;  // CUstream and cudaStream_t are pointers to it

namespace kernlathe {

// The version of the linked library ("0.1.0"); compare with KERNLATHE_VERSION_STRING from <kernlathe/version.h>.
const char* version();

class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RuntimeOptions {
  // Database files (<kernel>.json) or directories of them: `tune export`'s database/ folder, or results/best.
  // Embedded databases (kernlathe/embedded.h) are consulted first; a file's entries are added to them.
  std::vector<std::filesystem::path> databases;
  // Where template sources live: a directory of <kernel>.source.json bundles written by `tune export`. Not needed
  // for kernels whose sources are embedded. A kernel's sources are read the first time it is asked for and kept for
  // the Runtime's life.
  std::filesystem::path sources;
  // Cubins written by `tune export` (<key>.cubin and <key>.name): consulted after embedded cubins, before the disk
  // cache and NVRTC.
  std::filesystem::path cubins;
  // The disk cubin cache shared with `tune`: empty means $XDG_CACHE_HOME/kernlathe/cubins or
  // ~/.cache/kernlathe/cubins; "-" disables it.
  std::filesystem::path cubin_cache;
  int device = 0;  // CUDA device ordinal
  SelectOptions select;

  // The layout `tune export -o DIR` writes: DIR/database, DIR/sources and DIR/cubins.
  static RuntimeOptions from_export(const std::filesystem::path& directory);
};

// Where a kernel's binary came from on first use.
enum class BinarySource { embedded, exported, disk_cache, nvrtc };
const char* binary_source_name(BinarySource source);  // "embedded", "exported", "disk cache", "NVRTC"

struct LaunchShape {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t dynamic_shared_bytes = 0;
};

// The values a launch needs, by argument name: device pointers for buffers, numbers for scalars. Scalars that are
// not set take the kernel's default (an expression of the problem, e.g. n = N); scratch buffers and tensor maps are
// the runtime's own. Setting a name the kernel does not have is an error at bind time.
class Arguments {
 public:
  Arguments& set(const std::string& name, const void* device_pointer);
  Arguments& set(const std::string& name, double scalar);
  Arguments& set(const std::string& name, std::int64_t scalar);
  Arguments& set(const std::string& name, int scalar) { return set(name, static_cast<std::int64_t>(scalar)); }

  struct Item {
    std::string name;
    bool is_pointer = false;
    const void* pointer = nullptr;
    Value scalar;
  };
  const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<Item> items_;
};

class Kernel;
struct RuntimeAccess;  // the library's own access to the classes' state (tuner/runtime/runtime_access.h)

// A launch with every parameter prepared (tensor maps encoded, scalars converted): launching it is one
// cuLaunchKernel. Valid while its Kernel lives; the buffers it points to must outlive the launches.
class BoundLaunch {
 public:
  BoundLaunch();
  ~BoundLaunch();
  BoundLaunch(BoundLaunch&&) noexcept;
  BoundLaunch& operator=(BoundLaunch&&) noexcept;
  void launch(CUstream_st* stream = nullptr) const;

 private:
  friend class Kernel;
  friend struct RuntimeAccess;
  struct State;
  std::unique_ptr<State> state_;
};

// A launch whose argument layout is resolved once (Kernel::prepare): which kernel parameter each of the
// application's pointers and scalars fills, the defaults of the scalars it does not set and the scratch buffers are
// written when it is prepared. A launch writes the given addresses and numbers into the parameter slots and calls
// cuLaunchKernel, no name looked up and nothing allocated; a tensor map is encoded again only when its buffer's
// address changed. For a caller that launches one kernel many times with new buffers from a language where each call
// costs (kernlathe.torch's eager path, held to 3 us per call over Kernel::launch by issue 34). Launches from several
// threads take turns. Valid while its Kernel lives; the buffers must outlive the launches.
class PreparedLaunch {
 public:
  PreparedLaunch();
  ~PreparedLaunch();
  PreparedLaunch(PreparedLaunch&&) noexcept;
  PreparedLaunch& operator=(PreparedLaunch&&) noexcept;

  std::size_t pointer_count() const;  // as many as the pointer names it was prepared with
  std::size_t scalar_count() const;
  // pointers and scalars in the order of the names given to Kernel::prepare. Throws RuntimeError when their counts
  // differ from the names', a tensor map cannot be encoded or the launch fails.
  void launch(std::span<const void* const> pointers, std::span<const Value> scalars,
              CUstream_st* stream = nullptr) const;

 private:
  friend class Kernel;
  struct State;
  std::unique_ptr<State> state_;
};

class Kernel {
 public:
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  const std::string& name() const;
  const Problem& problem() const;           // the requested problem, completed with the kernel's defaults
  const Selection& selection() const;       // the configuration, the rung of the ladder and why
  const LaunchShape& shape() const;
  BinarySource binary_source() const;
  double compile_ms() const;                // NVRTC time on first use; 0 when the binary was embedded or cached
  double load_ms() const;                   // selection, module load and set-up, NVRTC excluded
  // Where first use spent its time: selection and plan (expressions; reading the sources when they are files not
  // read before), getting the binary (embedded lookup, file read, or NVRTC), module load, and the whole of kernel()
  // for this kernel.
  struct FirstUseTimes {
    double plan_ms = 0;
    double binary_ms = 0;
    double module_load_ms = 0;
    double total_ms = 0;
  };
  const FirstUseTimes& first_use() const;
  // Arguments the application provides, in the kernel's order (buffers and scalars; scratch and tensor maps are
  // not listed), with what a buffer must hold at this kernel's problem.
  struct ApplicationArgument {
    ArgumentDescription description;
    std::int64_t count = 0;         // buffers: elements
    std::size_t element_bytes = 0;  // buffers: bytes per element
    Value default_value;            // scalars: the value used when the application sets none
  };
  const std::vector<ApplicationArgument>& application_arguments() const;

  BoundLaunch bind(const Arguments& arguments) const;  // throws RuntimeError naming a missing or unknown argument
  void launch(const Arguments& arguments, CUstream_st* stream = nullptr) const { bind(arguments).launch(stream); }
  // A launch for the application's arguments by these names (every buffer among them; scalars left out take their
  // defaults): throws the RuntimeError bind() would for a name that is unknown, given twice or of the wrong kind, or
  // a buffer left out.
  PreparedLaunch prepare(const std::vector<std::string>& pointer_names,
                         const std::vector<std::string>& scalar_names = {}) const;

 private:
  friend class Runtime;
  friend struct RuntimeAccess;
  struct State;
  explicit Kernel(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The kernel for a problem (symbols not named take the kernel's defaults): selected, compiled and loaded on the
  // first call for (name, problem), returned from memory afterwards. Throws RuntimeError when no database knows
  // the kernel, its sources are missing, it fails to compile, or there is no GPU; and, before compiling anything,
  // when no configuration is usable at the problem on this device (select() gives Rung::none): the message names
  // the kernel, the problem, the constraint the default breaks and how many stored entries were unusable.
  const Kernel& kernel(const std::string& name, const Problem& problem = {});

  // What kernel() would take, without compiling or loading anything (needs the device's identity, so a GPU).
  // Throws the same RuntimeError as kernel() when no configuration is usable, so it never returns Rung::none.
  Selection select(const std::string& name, const Problem& problem = {});

  DeviceIdentity device();                 // the device's name, arch and properties (a GPU is needed)
  std::vector<std::string> kernels() const;  // names known to the loaded databases
  const KernelDatabase& database(const std::string& name);  // throws RuntimeError for an unknown kernel
  // Databases that could not be read (corrupt, unreadable, of a newer format), one line each: the runtime goes on
  // with the others, and kernel() names these when no database knows the kernel asked for.
  const std::vector<std::string>& warnings() const;

 private:
  friend struct RuntimeAccess;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kernlathe
