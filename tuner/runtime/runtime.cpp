#include "kernlathe/runtime.h"

#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "kernlathe/embedded.h"
#include "tuner/driver/cuda_driver.h"
#include "tuner/driver/tensor_map.h"
#include "tuner/nvrtc/cubin_cache.h"
#include "tuner/runtime/kernel_plan.h"
#include "tuner/runtime/launch_layout.h"
#include "tuner/runtime/program_cache.h"
#include "tuner/runtime/runtime_access.h"
#include "tuner/runtime/source_bundle.h"

namespace kernlathe {

namespace {

// Kernel parameters of any kind, a 128-byte CUtensorMap the largest, aligned as a CUtensorMap must be.
struct alignas(64) ParameterSlot {
  std::byte bytes[128];
};

void check(CUresult result, const char* call, const std::string& context) {
  if (result != CUDA_SUCCESS) throw RuntimeError(fmt::format("{}: {} failed: {}", context, call, gpu::cuda_error_name(result)));
}
#define KERNLATHE_RUNTIME_CHECK(call, context) check((call), #call, (context))

const gpu::CudaDriver& driver() {
  try {
    return gpu::cuda_driver();
  } catch (const std::exception& error) {
    throw RuntimeError(error.what());
  }
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void launch_function(CUfunction function, const LaunchShape& shape, CUstream_st* stream, void** parameters,
                     const std::string& kernel) {
  CUresult result = gpu::cuda_driver().cuLaunchKernel(function, shape.grid[0], shape.grid[1], shape.grid[2], shape.block[0],
                                                      shape.block[1], shape.block[2], shape.dynamic_shared_bytes, stream,
                                                      parameters, nullptr);
  if (result != CUDA_SUCCESS) throw RuntimeError(fmt::format("{}: cuLaunchKernel failed: {}", kernel, gpu::cuda_error_name(result)));
}

}  // namespace

const char* version() { return KERNLATHE_VERSION_STRING; }

const char* binary_source_name(BinarySource source) {
  switch (source) {
    case BinarySource::embedded: return "embedded";
    case BinarySource::exported: return "exported";
    case BinarySource::disk_cache: return "disk cache";
    case BinarySource::nvrtc: return "NVRTC";
  }
  return "?";
}

RuntimeOptions RuntimeOptions::from_export(const std::filesystem::path& directory) {
  RuntimeOptions options;
  options.databases = {directory / "database"};
  options.sources = directory / "sources";
  options.cubins = directory / "cubins";
  return options;
}

// ---------------------------------------------------------------- Arguments

Arguments& Arguments::set(const std::string& name, const void* device_pointer) {
  items_.push_back({name, true, device_pointer, {}});
  return *this;
}
Arguments& Arguments::set(const std::string& name, double scalar) {
  items_.push_back({name, false, nullptr, Value{scalar}});
  return *this;
}
Arguments& Arguments::set(const std::string& name, std::int64_t scalar) {
  items_.push_back({name, false, nullptr, Value{scalar}});
  return *this;
}

// ---------------------------------------------------------------- BoundLaunch

struct BoundLaunch::State {
  CUfunction function = nullptr;
  LaunchShape shape;
  std::vector<ParameterSlot> slots;
  std::vector<void*> parameters;
  std::string kernel;
};

BoundLaunch::BoundLaunch() = default;
BoundLaunch::~BoundLaunch() = default;
BoundLaunch::BoundLaunch(BoundLaunch&&) noexcept = default;
BoundLaunch& BoundLaunch::operator=(BoundLaunch&&) noexcept = default;

void BoundLaunch::launch(CUstream_st* stream) const {
  if (!state_) throw RuntimeError("launch of an empty BoundLaunch");
  // cuLaunchKernel copies the parameters' values: the slots are only read.
  launch_function(state_->function, state_->shape, stream, const_cast<void**>(state_->parameters.data()), state_->kernel);
}

// ---------------------------------------------------------------- Kernel

struct Kernel::State {
  std::string name;
  KernelPlan plan;
  LaunchShape shape;
  BinarySource source = BinarySource::nvrtc;
  double compile_ms = 0;
  double load_ms = 0;
  Kernel::FirstUseTimes first_use;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::vector<CUdeviceptr> scratch;  // per argument; 0 for arguments that are not scratch
  std::vector<Kernel::ApplicationArgument> application_arguments;

  ~State() {
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    for (CUdeviceptr pointer : scratch) {
      if (pointer != 0) KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuMemFree(pointer));
    }
    if (module != nullptr) KERNLATHE_CUDA_CHECK_NOTHROW(cuda.cuModuleUnload(module));
  }
};

Kernel::Kernel(std::unique_ptr<State> state) : state_(std::move(state)) {}
Kernel::~Kernel() = default;
const std::string& Kernel::name() const { return state_->name; }
const Problem& Kernel::problem() const { return state_->plan.problem; }
const Selection& Kernel::selection() const { return state_->plan.selection; }
const LaunchShape& Kernel::shape() const { return state_->shape; }
BinarySource Kernel::binary_source() const { return state_->source; }
double Kernel::compile_ms() const { return state_->compile_ms; }
double Kernel::load_ms() const { return state_->load_ms; }
const Kernel::FirstUseTimes& Kernel::first_use() const { return state_->first_use; }
const std::vector<Kernel::ApplicationArgument>& Kernel::application_arguments() const { return state_->application_arguments; }

namespace {

// The address a buffer parameter takes under a layout: the application's pointer, or the kernel's scratch buffer.
CUdeviceptr buffer_address(const LaunchLayout& layout, std::size_t index, std::span<const void* const> pointers,
                           const std::vector<CUdeviceptr>& scratch) {
  const ParameterSource& source = layout.parameters[index];
  if (source.fill == ParameterFill::scratch) return scratch[index];
  return reinterpret_cast<CUdeviceptr>(pointers[source.position]);
}

// Writes parameter `index` of a launch into its slot: an address, a scalar (given or the default) or a tensor map.
void write_parameter(const std::string& kernel, const std::vector<ArgumentPlan>& planned,
                     const std::vector<CUdeviceptr>& scratch, const LaunchLayout& layout, std::size_t index,
                     std::span<const void* const> pointers, std::span<const Value> scalars, ParameterSlot& slot) {
  const ArgumentPlan& argument = planned[index];
  const ParameterSource& source = layout.parameters[index];
  std::byte* storage = slot.bytes;
  switch (source.fill) {
    case ParameterFill::pointer:
    case ParameterFill::scratch: {
      CUdeviceptr address = buffer_address(layout, index, pointers, scratch);
      std::memcpy(storage, &address, sizeof address);
      return;
    }
    case ParameterFill::scalar: store_scalar(argument.description, scalars[source.position], storage, kernel); return;
    case ParameterFill::default_scalar: store_scalar(argument.description, argument.default_value, storage, kernel); return;
    case ParameterFill::tensor_map: {
      const ArgumentPlan& buffer = planned[source.position];
      gpu::TensorMapShape shape{buffer.description.dtype, argument.dims, argument.box, argument.swizzle_bytes,
                                argument.strides};
      std::string why = gpu::encode_tensor_map(*reinterpret_cast<CUtensorMap*>(storage), shape,
                                               buffer_address(layout, source.position, pointers, scratch));
      if (!why.empty()) throw RuntimeError(fmt::format("{}: tensor map '{}' cannot be encoded: {}", kernel, argument.description.name, why));
      return;
    }
  }
}

}  // namespace

BoundLaunch Kernel::bind(const Arguments& arguments) const {
  const State& kernel = *state_;
  const auto& planned = kernel.plan.arguments;
  std::vector<std::string_view> pointer_names, scalar_names;
  std::vector<const void*> pointers;
  std::vector<Value> scalars;
  for (const Arguments::Item& item : arguments.items()) {
    if (item.is_pointer) {
      pointer_names.push_back(item.name);
      pointers.push_back(item.pointer);
    } else {
      scalar_names.push_back(item.name);
      scalars.push_back(item.scalar);
    }
  }
  LaunchLayout layout = resolve_launch_layout(kernel.name, planned, pointer_names, scalar_names);

  BoundLaunch bound;
  bound.state_ = std::make_unique<BoundLaunch::State>();
  BoundLaunch::State& state = *bound.state_;
  state.function = kernel.function;
  state.shape = kernel.shape;
  state.kernel = kernel.name;
  state.slots.resize(planned.size());
  for (std::size_t index = 0; index < planned.size(); ++index) {
    std::memset(state.slots[index].bytes, 0, sizeof state.slots[index].bytes);
    write_parameter(kernel.name, planned, kernel.scratch, layout, index, pointers, scalars, state.slots[index]);
    state.parameters.push_back(state.slots[index].bytes);
  }
  return bound;
}

// ---------------------------------------------------------------- PreparedLaunch

namespace {
constexpr CUdeviceptr never_encoded = ~CUdeviceptr{0};  // no buffer lives at the last address
}  // namespace

struct PreparedLaunch::State {
  const std::vector<ArgumentPlan>* planned = nullptr;  // the Kernel's, which outlives this
  const std::vector<CUdeviceptr>* scratch = nullptr;
  CUfunction function = nullptr;
  LaunchShape shape;
  std::string kernel;
  LaunchLayout layout;
  std::vector<std::size_t> per_launch;   // parameters written at each launch: pointers and given scalars
  std::vector<std::size_t> tensor_maps;  // tensor-map parameters, encoded again when their buffer moved
  std::vector<ParameterSlot> slots;
  std::vector<void*> parameters;
  std::vector<CUdeviceptr> encoded_for;  // per parameter: the buffer address its tensor map was encoded for
  std::mutex mutex;                      // launches from several threads take turns at the slots
};

PreparedLaunch::PreparedLaunch() = default;
PreparedLaunch::~PreparedLaunch() = default;
PreparedLaunch::PreparedLaunch(PreparedLaunch&&) noexcept = default;
PreparedLaunch& PreparedLaunch::operator=(PreparedLaunch&&) noexcept = default;

std::size_t PreparedLaunch::pointer_count() const { return state_ ? state_->layout.pointer_count : 0; }
std::size_t PreparedLaunch::scalar_count() const { return state_ ? state_->layout.scalar_count : 0; }

void PreparedLaunch::launch(std::span<const void* const> pointers, std::span<const Value> scalars,
                            CUstream_st* stream) const {
  if (!state_) throw RuntimeError("launch of an empty PreparedLaunch");
  State& state = *state_;
  if (pointers.size() != state.layout.pointer_count || scalars.size() != state.layout.scalar_count) {
    throw RuntimeError(fmt::format("{}: a prepared launch takes {} pointers and {} scalars, it was given {} and {}",
                                   state.kernel, state.layout.pointer_count, state.layout.scalar_count,
                                   pointers.size(), scalars.size()));
  }
  std::lock_guard lock(state.mutex);
  for (std::size_t index : state.per_launch) {
    write_parameter(state.kernel, *state.planned, *state.scratch, state.layout, index, pointers, scalars, state.slots[index]);
  }
  for (std::size_t index : state.tensor_maps) {
    CUdeviceptr address = buffer_address(state.layout, state.layout.parameters[index].position, pointers, *state.scratch);
    if (address == state.encoded_for[index]) continue;
    write_parameter(state.kernel, *state.planned, *state.scratch, state.layout, index, pointers, scalars, state.slots[index]);
    state.encoded_for[index] = address;
  }
  launch_function(state.function, state.shape, stream, state.parameters.data(), state.kernel);
}

PreparedLaunch Kernel::prepare(const std::vector<std::string>& pointer_names,
                               const std::vector<std::string>& scalar_names) const {
  const State& kernel = *state_;
  std::vector<std::string_view> pointer_views(pointer_names.begin(), pointer_names.end());
  std::vector<std::string_view> scalar_views(scalar_names.begin(), scalar_names.end());
  PreparedLaunch prepared;
  prepared.state_ = std::make_unique<PreparedLaunch::State>();
  PreparedLaunch::State& state = *prepared.state_;
  state.layout = resolve_launch_layout(kernel.name, kernel.plan.arguments, pointer_views, scalar_views);
  state.planned = &kernel.plan.arguments;
  state.scratch = &kernel.scratch;
  state.function = kernel.function;
  state.shape = kernel.shape;
  state.kernel = kernel.name;
  state.slots.resize(kernel.plan.arguments.size());
  state.encoded_for.assign(kernel.plan.arguments.size(), never_encoded);
  for (std::size_t index = 0; index < state.slots.size(); ++index) {
    std::memset(state.slots[index].bytes, 0, sizeof state.slots[index].bytes);
    state.parameters.push_back(state.slots[index].bytes);
    switch (state.layout.parameters[index].fill) {
      case ParameterFill::pointer:
      case ParameterFill::scalar: state.per_launch.push_back(index); break;
      case ParameterFill::tensor_map: state.tensor_maps.push_back(index); break;
      case ParameterFill::default_scalar:
      case ParameterFill::scratch:  // written once: neither changes between launches
        write_parameter(kernel.name, kernel.plan.arguments, kernel.scratch, state.layout, index, {}, {}, state.slots[index]);
        break;
    }
  }
  return prepared;
}

// ---------------------------------------------------------------- Runtime

struct Runtime::State {
  RuntimeOptions options;
  std::map<std::string, KernelDatabase> databases;
  std::map<std::string, KernelSources> embedded_sources;
  // Sources read from RuntimeOptions::sources, once per kernel: a kernel asked for at another problem reads, parses
  // and hashes nothing again (gemm_bf16 from an export: about 0.6 ms, half of its first plan, on a 2-core x86 CPU;
  // benchmarks/bench_runtime_plan.cpp). Entries are never replaced, so references to them stay valid.
  std::map<std::string, KernelSources> file_sources;
  // Embedded kernels are parsed on first use, so a Runtime in an application that embeds many kernels starts in
  // the time of the ones it launches (cold start from embedded cubins, H200: parsing all seven exported kernels on
  // construction cost 1-2 ms per Runtime).
  std::map<std::string, const EmbeddedKernel*> embedded;
  std::mutex database_mutex;
  std::vector<std::string> warnings;
  std::unique_ptr<ProgramCache> programs;

  std::mutex mutex;
  std::optional<DeviceIdentity> identity;
  CUdevice device = 0;
  CUcontext primary_context = nullptr;
  std::map<std::string, std::shared_future<std::shared_ptr<Kernel>>> kernels;

  void add_database(KernelDatabase database) {
    auto [found, inserted] = databases.try_emplace(database.kernel, database);
    if (inserted) return;
    // A kernel known twice (embedded and a file, or two files): one description, the entries of both. Entries
    // measured against another description are stale and pass over in selection.
    for (DatabaseEntry& entry : database.entries) found->second.entries.push_back(std::move(entry));
  }

  void load_file(const std::filesystem::path& file) {
    try {
      add_database(read_database(file));
    } catch (const std::exception& error) {
      warnings.push_back(error.what());
    }
  }

  // The device's primary context (the one the CUDA runtime API uses), retained for the Runtime's lifetime and made
  // current in the calling thread.
  void make_context_current() {
    const gpu::CudaDriver& cuda = driver();
    if (primary_context == nullptr) {
      KERNLATHE_RUNTIME_CHECK(cuda.cuDevicePrimaryCtxRetain(&primary_context, device), "kernlathe runtime");
    }
    // Set even when it looks current already: a primary context released to zero by an earlier Runtime and retained
    // again keeps its handle, while the thread's binding to it went stale (CUDA_ERROR_CONTEXT_IS_DESTROYED, H200).
    KERNLATHE_RUNTIME_CHECK(cuda.cuCtxSetCurrent(primary_context), "kernlathe runtime");
  }

  const DeviceIdentity& device_identity() {
    if (identity) return *identity;
    const gpu::CudaDriver& cuda = driver();
    int count = 0;
    KERNLATHE_RUNTIME_CHECK(cuda.cuDeviceGetCount(&count), "kernlathe runtime");
    if (options.device < 0 || options.device >= count)
      throw RuntimeError(fmt::format("kernlathe runtime: device {} does not exist ({} devices)", options.device, count));
    KERNLATHE_RUNTIME_CHECK(cuda.cuDeviceGet(&device, options.device), "kernlathe runtime");
    char name[256] = {};
    KERNLATHE_RUNTIME_CHECK(cuda.cuDeviceGetName(name, sizeof name, device), "kernlathe runtime");
    auto attribute = [&](CUdevice_attribute which) {
      int value = 0;
      KERNLATHE_RUNTIME_CHECK(cuda.cuDeviceGetAttribute(&value, which, device), "kernlathe runtime");
      return std::int64_t{value};
    };
    DeviceIdentity found;
    found.name = name;
    found.arch_major = static_cast<int>(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
    found.arch_minor = static_cast<int>(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    // The names and meanings `tune` gives expressions (tuner/spec/model.h, device_property_values).
    found.properties = {
        {"max_threads_per_block", attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)},
        {"max_shared_memory_per_block", attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)},
        {"max_shared_memory_per_sm", attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)},
        {"max_registers_per_block", attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)},
        {"max_registers_per_sm", attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)},
        {"max_threads_per_sm", attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)},
        {"max_blocks_per_sm", attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)},
        {"sm_count", attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)},
        {"warp_size", attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE)},
        {"arch_major", std::int64_t{found.arch_major}},
        {"arch_minor", std::int64_t{found.arch_minor}},
        {"arch", std::int64_t{10 * found.arch_major + found.arch_minor}},
    };
    identity = std::move(found);
    return *identity;
  }

  // The device's identity (queried once) with a context current in the calling thread.
  DeviceIdentity prepare_thread() {
    std::lock_guard lock(mutex);
    DeviceIdentity found = device_identity();
    make_context_current();
    return found;
  }

  const KernelDatabase& database_of(const std::string& name) {
    std::lock_guard lock(database_mutex);
    if (auto pending = embedded.find(name); pending != embedded.end()) {
      const EmbeddedKernel* kernel = pending->second;
      embedded.erase(pending);
      try {
        KernelDatabase parsed = parse_database(kernel->database_json, fmt::format("embedded database of {}", name));
        embedded_sources.emplace(name, parse_source_bundle(kernel->source_json, fmt::format("embedded sources of {}", name)));
        // The embedded description comes first; entries that files added for the same kernel follow.
        if (auto found = databases.find(name); found != databases.end()) {
          for (DatabaseEntry& entry : found->second.entries) parsed.entries.push_back(std::move(entry));
          found->second = std::move(parsed);
        } else {
          databases.emplace(name, std::move(parsed));
        }
      } catch (const std::exception& error) {
        warnings.push_back(error.what());
      }
    }
    auto found = databases.find(name);
    if (found != databases.end()) return found->second;
    std::string known;
    for (const auto& [kernel, unused] : databases) known += (known.empty() ? "" : ", ") + kernel;
    std::string message = fmt::format("kernlathe runtime: no database knows the kernel '{}' (known: {})", name,
                                      known.empty() ? "none" : known);
    for (const std::string& warning : warnings) message += "\n  not read: " + warning;
    throw RuntimeError(message);
  }

  const KernelSources& sources_of(const KernelDatabase& database) {
    {
      std::lock_guard lock(database_mutex);
      if (auto found = embedded_sources.find(database.kernel); found != embedded_sources.end()) return found->second;
      if (auto found = file_sources.find(database.kernel); found != file_sources.end()) return found->second;
    }
    if (options.sources.empty()) {
      throw RuntimeError(fmt::format("{}: its sources are not embedded and RuntimeOptions::sources names no directory",
                                     database.kernel));
    }
    // Read without the lock, so other kernels are not held up; of two threads that read the same files, the first
    // to finish is kept.
    KernelSources read = read_kernel_sources(options.sources, database.kernel, database.description.template_name);
    std::lock_guard lock(database_mutex);
    return file_sources.try_emplace(database.kernel, std::move(read)).first->second;
  }

  std::shared_ptr<Kernel> build(const std::string& name, const Problem& problem) {
    auto start = std::chrono::steady_clock::now();
    const KernelDatabase& database = database_of(name);
    const DeviceIdentity device_found = prepare_thread();
    auto state = std::make_unique<Kernel::State>();
    state->name = name;
    auto step = std::chrono::steady_clock::now();
    state->plan = plan_kernel(database, sources_of(database), device_found, problem, options.select);
    const KernelPlan& plan = state->plan;
    state->first_use.plan_ms = milliseconds_since(step);

    step = std::chrono::steady_clock::now();
    std::shared_ptr<const ProgramBinary> program = programs->get(plan.request, plan.embedded_key);
    state->source = program->source;
    state->compile_ms = program->compile_ms;
    state->first_use.binary_ms = milliseconds_since(step);

    const gpu::CudaDriver& cuda = driver();
    step = std::chrono::steady_clock::now();
    KERNLATHE_RUNTIME_CHECK(cuda.cuModuleLoadData(&state->module, program->image.data()), name);
    KERNLATHE_RUNTIME_CHECK(cuda.cuModuleGetFunction(&state->function, state->module, program->lowered_name.c_str()), name);
    state->first_use.module_load_ms = milliseconds_since(step);
    int static_shared = 0;
    KERNLATHE_RUNTIME_CHECK(cuda.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, state->function), name);
    // Above 48 KiB in all (static included) a kernel must opt in to its dynamic shared memory, or it fails to launch.
    constexpr std::int64_t default_shared_limit = 48 * 1024;
    if (static_shared + plan.dynamic_shared_bytes > default_shared_limit) {
      KERNLATHE_RUNTIME_CHECK(cuda.cuFuncSetAttribute(state->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                      static_cast<int>(plan.dynamic_shared_bytes)), name);
    }
    for (int axis = 0; axis < 3; ++axis) {
      state->shape.grid[static_cast<std::size_t>(axis)] = static_cast<std::uint32_t>(plan.grid[static_cast<std::size_t>(axis)]);
      state->shape.block[static_cast<std::size_t>(axis)] = static_cast<std::uint32_t>(plan.block[static_cast<std::size_t>(axis)]);
    }
    state->shape.dynamic_shared_bytes = static_cast<std::uint32_t>(plan.dynamic_shared_bytes);

    state->scratch.assign(plan.arguments.size(), 0);
    for (std::size_t index = 0; index < plan.arguments.size(); ++index) {
      const ArgumentPlan& argument = plan.arguments[index];
      if (argument.description.kind == "tensor_map") continue;
      if (!argument.description.scratch) {
        state->application_arguments.push_back({argument.description, argument.count, argument.element_bytes, argument.default_value});
        continue;
      }
      std::size_t bytes = static_cast<std::size_t>(argument.count) * argument.element_bytes;
      KERNLATHE_RUNTIME_CHECK(cuda.cuMemAlloc(&state->scratch[index], std::max<std::size_t>(bytes, 1)), name);
      KERNLATHE_RUNTIME_CHECK(cuda.cuMemsetD8(state->scratch[index], 0, bytes), name);
    }
    state->first_use.total_ms = milliseconds_since(start);
    state->load_ms = state->first_use.total_ms - state->compile_ms;
    return std::shared_ptr<Kernel>(new Kernel(std::move(state)));
  }
};

Runtime::Runtime(RuntimeOptions options) : state_(std::make_unique<State>()) {
  State& state = *state_;
  state.options = std::move(options);
  for (const EmbeddedKernel* kernel : embedded_kernels()) state.embedded.emplace(kernel->name, kernel);
  for (const std::filesystem::path& path : state.options.databases) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      std::vector<std::filesystem::path> files;
      for (const auto& item : std::filesystem::directory_iterator(path, error)) {
        std::string file_name = item.path().filename().string();
        if (item.path().extension() == ".json" && file_name.find(".source.json") == std::string::npos) files.push_back(item.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& file : files) state.load_file(file);
    } else if (std::filesystem::exists(path, error)) {
      state.load_file(path);
    } else {
      state.warnings.push_back(fmt::format("{}: no such file or directory", path.string()));
    }
  }
  std::filesystem::path cache = state.options.cubin_cache;
  if (cache.empty()) cache = default_cubin_cache_dir();
  if (cache == "-") cache.clear();
  state.programs = std::make_unique<ProgramCache>(cache, state.options.cubins);
}

Runtime::~Runtime() {
  if (!state_) return;
  state_->kernels.clear();  // modules and scratch buffers go before the context is released
  if (state_->primary_context != nullptr) KERNLATHE_CUDA_CHECK_NOTHROW(gpu::cuda_driver().cuDevicePrimaryCtxRelease(state_->device));
}

const Kernel& Runtime::kernel(const std::string& name, const Problem& problem) {
  State& state = *state_;
  std::string key = name + "|";
  for (const auto& [symbol, value] : problem) key += fmt::format("{}={},", symbol, value);
  std::shared_future<std::shared_ptr<Kernel>> future;
  std::promise<std::shared_ptr<Kernel>> promise;
  bool builder = false;
  {
    std::lock_guard lock(state.mutex);
    auto found = state.kernels.find(key);
    if (found != state.kernels.end()) {
      future = found->second;
    } else {
      future = promise.get_future().share();
      state.kernels.emplace(key, future);
      builder = true;
    }
  }
  if (builder) {
    try {
      // Other threads asking for the same kernel wait on the future; other kernels build at the same time.
      promise.set_value(state.build(name, problem));
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::lock_guard lock(state.mutex);
      state.kernels.erase(key);
    }
  }
  const Kernel& kernel = *future.get();
  if (!builder) state.prepare_thread();  // launches from this thread need the context current too
  return kernel;
}

Selection Runtime::select(const std::string& name, const Problem& problem) {
  const KernelDatabase& database = state_->database_of(name);
  return select_usable(database, device(), problem, state_->options.select);
}

DeviceIdentity Runtime::device() {
  std::lock_guard lock(state_->mutex);
  return state_->device_identity();
}

std::vector<std::string> Runtime::kernels() const {
  std::lock_guard lock(state_->database_mutex);
  std::set<std::string> names;
  for (const auto& [name, unused] : state_->databases) names.insert(name);
  for (const auto& [name, unused] : state_->embedded) names.insert(name);
  return {names.begin(), names.end()};
}

const KernelDatabase& Runtime::database(const std::string& name) { return state_->database_of(name); }
const std::vector<std::string>& Runtime::warnings() const { return state_->warnings; }

// ---------------------------------------------------------------- RuntimeAccess

const KernelPlan& RuntimeAccess::plan(const Kernel& kernel) { return kernel.state_->plan; }
CUfunction RuntimeAccess::function(const Kernel& kernel) { return kernel.state_->function; }
CUcontext RuntimeAccess::context(Runtime& runtime) {
  runtime.state_->prepare_thread();
  return runtime.state_->primary_context;
}
const std::vector<void*>& RuntimeAccess::parameters(const BoundLaunch& launch) {
  if (!launch.state_) throw RuntimeError("parameters of an empty BoundLaunch");
  return launch.state_->parameters;
}

}  // namespace kernlathe
