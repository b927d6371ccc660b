// The runtime library's floors (issue: runtime library), measured in one run on the GPU it runs on:
//   1. warm launch: host submission time of 100,000 launches through a BoundLaunch and through Kernel::launch
//      (binds every time), against a raw cuLaunchKernel of the same function with the same parameters;
//   2. cold start per kernel: from embedded cubins, from exported cubin files, from the disk cubin cache, and on a
//      miss with NVRTC (its time reported separately); the CUDA context exists before each clock starts;
//   3. each exported kernel launched through the runtime at its tuned problem, timed the way `tune` times (warm-up,
//      CUDA events around batches of launches, median until the spread is under 2% or 1 s), against the time its
//      database entry recorded;
//   4. each streamed kernel (--stream KERNEL=PATTERN: its .npy files) through StreamedKernel::run with the tuned
//      loader settings over as many items as it was tuned on, timed as `tune` times a pass (no checks, one warm-up
//      pass, the median of five), against the recorded end-to-end time, and with the naive loader for comparison.
// Usage: bench_runtime EXPORT_DIR [KERNEL ...] [--stream KERNEL=PATTERN ...]
//   (EXPORT_DIR from `tune export`; default: every kernel in it)
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "kernlathe/embedded.h"
#include "kernlathe/runtime.h"
#include "kernlathe/stream.h"
#include "kernlathe/timing.h"
#include "tuner/driver/cuda_driver.h"
#include "tuner/run/element_values.h"
#include "tuner/measure/measurement.h"
#include "tuner/runtime/kernel_plan.h"
#include "tuner/runtime/source_bundle.h"
#include "tuner/spec/spec_loader.h"

using namespace kernlathe;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

std::string read_file(const std::filesystem::path& path) {
  std::ifstream input(path, std::ios::binary);
  std::stringstream contents;
  contents << input.rdbuf();
  return contents.str();
}

// Buffers for every application argument of a kernel, filled as the kernel's spec (kernels/<name>.yaml) says, as the
// evaluation worker fills them: a tensor-core GEMM on constant inputs draws less power and runs up to 4% faster at
// the power cap than on the spec's random ones (H200, first version of this benchmark), which is not the comparison
// wanted. Outputs start zeroed; a kernel without a spec gets zeros.
struct Buffers {
  std::vector<CUdeviceptr> pointers;
  Arguments arguments;
  // `skip`: arguments the caller provides (a streamed kernel's input and output).
  explicit Buffers(const Kernel& kernel, const std::vector<std::string>& skip = {}) {
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    std::optional<KernelSpec> spec;
    try {
      spec = load_kernel_spec(find_spec(kernel.name()));
    } catch (const std::exception& error) {
      std::fprintf(stderr, "  %s: no spec (%s): buffers start zeroed\n", kernel.name().c_str(), error.what());
    }
    for (const auto& argument : kernel.application_arguments()) {
      if (argument.description.kind != "buffer") continue;
      if (std::find(skip.begin(), skip.end(), argument.description.name) != skip.end()) continue;
      std::size_t bytes = static_cast<std::size_t>(argument.count) * argument.element_bytes;
      CUdeviceptr pointer = 0;
      KERNLATHE_CUDA_CHECK(cuda.cuMemAlloc(&pointer, std::max<std::size_t>(bytes, 4)));
      KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8(pointer, 0, bytes));
      for (const Argument& declared : spec ? spec->arguments : std::vector<Argument>{}) {
        if (declared.name != argument.description.name || !declared.is_buffer || declared.role == Role::out) continue;
        std::vector<std::byte> contents = initial_contents(declared.dtype, argument.count, declared.init);
        KERNLATHE_CUDA_CHECK(cuda.cuMemcpyHtoD(pointer, contents.data(), contents.size()));
      }
      pointers.push_back(pointer);
      arguments.set(argument.description.name, reinterpret_cast<const void*>(pointer));
    }
    KERNLATHE_CUDA_CHECK(cuda.cuCtxSynchronize());
  }
  ~Buffers() {
    for (CUdeviceptr pointer : pointers) KERNLATHE_CUDA_CHECK_NOTHROW(gpu::cuda_driver().cuMemFree(pointer));
  }
};

// Registers the exported cubins and database of a kernel as if compiled in by `tune export --embed` (the same
// registry and lookup; only the file read happens before the clock).
void register_as_embedded(const std::filesystem::path& export_dir, const std::string& kernel) {
  static std::vector<std::unique_ptr<std::string>> storage;
  static std::vector<std::unique_ptr<std::vector<EmbeddedCubin>>> cubin_lists;
  static std::vector<std::unique_ptr<EmbeddedKernel>> kernels;
  auto keep = [&](std::string text) { storage.push_back(std::make_unique<std::string>(std::move(text))); return storage.back().get(); };
  auto cubins = std::make_unique<std::vector<EmbeddedCubin>>();
  for (const auto& file : std::filesystem::directory_iterator(export_dir / "cubins")) {
    if (file.path().extension() != ".cubin") continue;
    const std::string* key = keep(file.path().stem().string());
    const std::string* name = keep(read_file(std::filesystem::path(file.path()).replace_extension(".name")));
    const std::string* bytes = keep(read_file(file.path()));
    cubins->push_back({key->c_str(), name->c_str(), reinterpret_cast<const unsigned char*>(bytes->data()), bytes->size()});
  }
  const std::string* database = keep(read_file(export_dir / "database" / (kernel + ".json")));
  const std::string* sources = keep(read_file(export_dir / "sources" / (kernel + ".source.json")));
  kernels.push_back(std::make_unique<EmbeddedKernel>(EmbeddedKernel{keep(kernel)->c_str(), database->c_str(), sources->c_str(), cubins->data(), cubins->size()}));
  cubin_lists.push_back(std::move(cubins));
  register_embedded_kernel(*kernels.back());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_runtime EXPORT_DIR [KERNEL ...]\n");
    return 2;
  }
  const std::filesystem::path export_dir = argv[1];
  std::vector<std::string> kernels;
  std::map<std::string, std::string> stream_files;  // streamed kernel -> glob of its items
  for (int index = 2; index < argc; ++index) {
    std::string argument = argv[index];
    if (argument == "--stream" && index + 1 < argc) {
      std::string pair = argv[++index];
      std::size_t equals = pair.find('=');
      if (equals == std::string::npos) {
        std::fprintf(stderr, "bench_runtime: --stream takes KERNEL=PATTERN, got '%s'\n", pair.c_str());
        return 2;
      }
      stream_files[pair.substr(0, equals)] = pair.substr(equals + 1);
    } else {
      kernels.push_back(argument);
    }
  }
  if (kernels.empty()) {
    for (const auto& file : std::filesystem::directory_iterator(export_dir / "database")) kernels.push_back(file.path().stem().string());
    std::sort(kernels.begin(), kernels.end());
  }
  for (const auto& [name, unused] : stream_files)  // streamed kernels get the cold-start figures too
    if (std::find(kernels.begin(), kernels.end(), name) == kernels.end()) kernels.push_back(name);
  try {
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    const std::filesystem::path disk_cache = std::filesystem::temp_directory_path() / fmt::format("bench-runtime-cache-{}", ::getpid());
    std::filesystem::remove_all(disk_cache);

    // A runtime that creates the context and holds it (as an application's CUDA runtime does), so no cold start
    // below pays for creating it.
    Runtime warm_up(RuntimeOptions::from_export(export_dir));
    warm_up.kernel(kernels.front());
    DeviceIdentity device = warm_up.device();
    std::printf("device: %s (%s), kernlathe %s\n\n", device.name.c_str(), device.arch().c_str(), version());

    // ---- 2. cold start: NVRTC miss, then the disk cache it filled, then exported cubin files, then embedded.
    struct Cold {
      double nvrtc_total = 0, nvrtc_compile = 0, disk = 0, exported = 0, embedded = 0;
      Kernel::FirstUseTimes embedded_parts;
    };
    std::map<std::string, Cold> cold;
    auto first_use = [&](const std::string& kernel, RuntimeOptions options, BinarySource expected, double* compile_ms,
                         Kernel::FirstUseTimes* parts = nullptr) {
      auto start = Clock::now();
      Runtime runtime(std::move(options));
      const Kernel& loaded = runtime.kernel(kernel);
      double elapsed = ms_since(start);
      if (parts) *parts = loaded.first_use();
      if (loaded.binary_source() != expected)
        std::fprintf(stderr, "  %s: expected the %s path, took %s\n", kernel.c_str(), binary_source_name(expected),
                     binary_source_name(loaded.binary_source()));
      if (compile_ms) *compile_ms = loaded.compile_ms();
      return elapsed;
    };
    RuntimeOptions files = RuntimeOptions::from_export(export_dir);
    files.cubins.clear();
    for (const std::string& kernel : kernels) {
      Cold& times = cold[kernel];
      std::filesystem::remove_all(disk_cache);
      RuntimeOptions miss = files;
      miss.cubin_cache = disk_cache;
      times.nvrtc_total = first_use(kernel, miss, BinarySource::nvrtc, &times.nvrtc_compile);
      times.disk = first_use(kernel, miss, BinarySource::disk_cache, nullptr);
      RuntimeOptions exported = files;
      exported.cubins = export_dir / "cubins";
      exported.cubin_cache = "-";
      times.exported = first_use(kernel, exported, BinarySource::exported, nullptr);
    }
    for (const std::string& kernel : kernels) register_as_embedded(export_dir, kernel);
    RuntimeOptions embedded_only;  // no files named: the registry alone
    embedded_only.cubin_cache = "-";
    for (const std::string& kernel : kernels)
      cold[kernel].embedded = first_use(kernel, embedded_only, BinarySource::embedded, nullptr, &cold[kernel].embedded_parts);
    std::printf("cold start, first kernel() of a new Runtime, ms (the CUDA context exists before each clock starts):\n");
    std::printf("%-16s %9s %9s %11s %11s %12s   %s\n", "kernel", "embedded", "exported", "disk cache", "NVRTC miss",
                "NVRTC alone", "embedded: plan / binary / module load");
    for (const std::string& kernel : kernels) {
      const Cold& times = cold[kernel];
      std::printf("%-16s %9.2f %9.2f %11.2f %11.1f %12.1f   %.2f / %.2f / %.2f\n", kernel.c_str(), times.embedded,
                  times.exported, times.disk, times.nvrtc_total, times.nvrtc_compile, times.embedded_parts.plan_ms,
                  times.embedded_parts.binary_ms, times.embedded_parts.module_load_ms);
    }

    // ---- 1. warm launch overhead: saxpy-like smallest kernel first in the list, 100 batches of 1,000 launches each way.
    Runtime runtime(embedded_only);
    const std::string launch_kernel = std::find(kernels.begin(), kernels.end(), "saxpy") != kernels.end() ? "saxpy" : kernels.front();
    const Kernel& kernel = runtime.kernel(launch_kernel);
    Buffers buffers(kernel);
    BoundLaunch bound = kernel.bind(buffers.arguments);
    // The raw path: the same cubin loaded by hand, the same parameters, one cuLaunchKernel per launch.
    CUfunction raw_function = nullptr;
    CUmodule raw_module = nullptr;
    {
      // The cubin the runtime took, found through the same plan: its embedded key names the exported file.
      KernelPlan plan = plan_kernel(runtime.database(launch_kernel),
                                    read_kernel_sources(export_dir / "sources", launch_kernel, ""), device, {});
      std::string image = read_file(export_dir / "cubins" / (plan.embedded_key + ".cubin"));
      std::string name = read_file(export_dir / "cubins" / (plan.embedded_key + ".name"));
      KERNLATHE_CUDA_CHECK(cuda.cuModuleLoadData(&raw_module, image.data()));
      KERNLATHE_CUDA_CHECK(cuda.cuModuleGetFunction(&raw_function, raw_module, name.c_str()));
    }
    const auto& shape = kernel.shape();
    // The parameters the runtime binds (buffers and scalars of f32, i32 and i64), written out by hand.
    const auto& application = kernel.application_arguments();
    std::vector<std::vector<std::byte>> raw_storage;
    std::vector<void*> raw_parameters;
    std::size_t buffer_index = 0;
    for (const auto& argument : application) {
      std::vector<std::byte> bytes(8);
      if (argument.description.kind == "buffer") {
        std::memcpy(bytes.data(), &buffers.pointers[buffer_index++], sizeof(CUdeviceptr));
      } else if (argument.description.dtype == "i64") {
        std::int64_t value = std::get<std::int64_t>(argument.default_value);
        std::memcpy(bytes.data(), &value, sizeof value);
      } else if (argument.description.dtype == "i32") {
        auto value = static_cast<std::int32_t>(std::get<std::int64_t>(argument.default_value));
        std::memcpy(bytes.data(), &value, sizeof value);
      } else {
        float value = static_cast<float>(std::holds_alternative<double>(argument.default_value) ? std::get<double>(argument.default_value)
                                                                                                 : static_cast<double>(std::get<std::int64_t>(argument.default_value)));
        std::memcpy(bytes.data(), &value, sizeof value);
      }
      raw_storage.push_back(std::move(bytes));
    }
    for (auto& bytes : raw_storage) raw_parameters.push_back(bytes.data());
    CUstream stream = nullptr;
    KERNLATHE_CUDA_CHECK(cuda.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    constexpr int batches = 100, per_batch = 1000;
    std::vector<double> raw_us, bound_us, bind_us;
    for (int round = 0; round < batches; ++round) {
      // Interleaved, so both ways see the same clocks; each batch waits for the GPU before its clock starts.
      KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream));
      auto start = Clock::now();
      for (int index = 0; index < per_batch; ++index)
        KERNLATHE_CUDA_CHECK(cuda.cuLaunchKernel(raw_function, shape.grid[0], shape.grid[1], shape.grid[2], shape.block[0], shape.block[1],
                                                 shape.block[2], shape.dynamic_shared_bytes, stream, raw_parameters.data(), nullptr));
      raw_us.push_back(ms_since(start) * 1000 / per_batch);
      KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream));
      start = Clock::now();
      for (int index = 0; index < per_batch; ++index) bound.launch(stream);
      bound_us.push_back(ms_since(start) * 1000 / per_batch);
      KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream));
      start = Clock::now();
      for (int index = 0; index < per_batch / 10; ++index) kernel.launch(buffers.arguments, stream);
      bind_us.push_back(ms_since(start) * 1000 / (per_batch / 10));
    }
    KERNLATHE_CUDA_CHECK(cuda.cuStreamSynchronize(stream));
    TimeStatistics raw = summarise(raw_us), through_bound = summarise(bound_us), through_bind = summarise(bind_us);
    std::printf("\nwarm launch, host submission per launch (%s, grid %u x block %u; median of %d batches of %d):\n",
                launch_kernel.c_str(), shape.grid[0], shape.block[0], batches, per_batch);
    std::printf("  raw cuLaunchKernel      %.3f us\n", raw.median_ms);
    std::printf("  BoundLaunch::launch     %.3f us   (+%.3f us; floor +0.5)\n", through_bound.median_ms, through_bound.median_ms - raw.median_ms);
    std::printf("  Kernel::launch (binds)  %.3f us   (+%.3f us)\n", through_bind.median_ms, through_bind.median_ms - raw.median_ms);
    if (raw_module) cuda.cuModuleUnload(raw_module);

    // ---- 3. time through the runtime against the recorded time of the entry it selected
    // `tune` measuring the same configuration again in this session (benchmarks/runtime_bench.sh writes
    // REMEASURED: kernel and median ms per line), so drift between machines and sessions is out of the comparison.
    std::map<std::string, double> remeasured;
    if (const char* file = std::getenv("REMEASURED"); file && *file) {
      std::ifstream input(file);
      std::string name;
      double ms = 0;
      while (input >> name >> ms) remeasured[name] = ms;
    }
    std::printf("\nthrough the runtime vs `tune` (same device, the entry's problem; ratio = runtime / tune):\n");
    std::printf("%-16s %-14s %11s %13s %7s %15s %7s\n", "kernel", "rung", "runtime ms", "recorded ms", "ratio",
                "tune again ms", "ratio");
    for (const std::string& name : kernels) {
      const Kernel& tuned = runtime.kernel(name);
      if (runtime.database(name).description.stream) continue;  // a batch of items per launch: section 4
      if (!tuned.selection().entry) {
        std::printf("%-16s %-26s (no entry: nothing recorded to compare with)\n", name.c_str(), rung_name(tuned.selection().rung));
        continue;
      }
      Buffers inputs(tuned);
      BoundLaunch launch = tuned.bind(inputs.arguments);
      // The one harness tune times candidates with (include/kernlathe/timing.h, KernelTimer underneath).
      const LaunchTiming time = time_launches(stream, [&] { launch.launch(stream); });
      double recorded = tuned.selection().entry->time.median_ms;
      double again = remeasured.count(name) ? remeasured[name] : 0;
      std::printf("%-16s %-14s %11.4f %13.4f %7.3f %15s %7s\n", name.c_str(), rung_name(tuned.selection().rung),
                  time.median_ms, recorded, time.median_ms / recorded, again > 0 ? fmt::format("{:.4f}", again).c_str() : "-",
                  again > 0 ? fmt::format("{:.3f}", time.median_ms / again).c_str() : "-");
    }
    KERNLATHE_CUDA_CHECK(cuda.cuStreamDestroy(stream));
    std::filesystem::remove_all(disk_cache);

    // ---- 4. streamed kernels: a whole pass through the pipeline against the recorded pass.
    if (!stream_files.empty()) {
      std::printf("\nstreamed through the runtime vs `tune` (the tuned items from the same files; ratio = runtime / tune,"
                  " median of 5 passes after one warm-up):\n");
      std::printf("%-22s %-14s %11s %13s %7s %15s %7s %12s %12s %9s\n", "kernel", "rung", "runtime ms", "recorded ms",
                  "ratio", "tune again ms", "ratio", "items/s", "naive ms", "speed-up");
    }
    for (const auto& [name, pattern] : stream_files) {
      StreamedKernel streamed(runtime, name);
      const Selection& selection = streamed.kernel().selection();
      std::int64_t items = streamed.tuned_items();
      auto source = open_item_files(files_matching(pattern), streamed.input_item(), FileFormat::npy, items);
      // Every other application argument (the filter): zeros, as the evaluation worker's timing passes do not
      // depend on its values.
      Buffers others(streamed.kernel(), {streamed.input_argument(), streamed.output_argument()});
      auto passes = [&](int count) {
        std::vector<double> ms;
        streamed.run(*source, others.arguments, nullptr);  // warm-up: page cache, staging buffers, clocks
        for (int pass = 0; pass < count; ++pass) ms.push_back(streamed.run(*source, others.arguments, nullptr).seconds * 1e3);
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
      };
      const LoaderSettings tuned_loader = streamed.loader();
      double tuned_ms = passes(5);
      streamed.set_loader({false, 1, 1, 1, tuned_loader.batch, 0});
      double naive_ms = passes(5);
      streamed.set_loader(tuned_loader);
      double recorded = selection.entry ? selection.entry->time.median_ms : 0;
      double again = remeasured.count(name) ? remeasured[name] : 0;
      std::printf("%-22s %-14s %11.2f %13s %7s %15s %7s %12.0f %12.2f %8.1fx   %s\n", name.c_str(), rung_name(selection.rung),
                  tuned_ms, recorded > 0 ? fmt::format("{:.2f}", recorded).c_str() : "-",
                  recorded > 0 ? fmt::format("{:.3f}", tuned_ms / recorded).c_str() : "-",
                  again > 0 ? fmt::format("{:.2f}", again).c_str() : "-",
                  again > 0 ? fmt::format("{:.3f}", tuned_ms / again).c_str() : "-",
                  static_cast<double>(items) / (tuned_ms / 1e3), naive_ms, naive_ms / tuned_ms, tuned_loader.to_string().c_str());
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_runtime: %s\n", error.what());
    return 1;
  }
  return 0;
}
