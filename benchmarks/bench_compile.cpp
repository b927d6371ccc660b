// Compile throughput: N distinct configurations compiled serially in this process, then through the compile pool
// with J worker processes (cold cache each time), then once more through the pool with a warm cache.
//
//   bench_compile --jobs 16 --count 64 [--template tests/data/compile/gemm_like.cu] [--arch sm_90]
//                 [--worker build/tune]
//
// The pool target on the 16-core GPU host is >= 8x the serial rate with 16 jobs.
//
// NVRTC 12.9+ keeps its own compilation cache through the driver (~/.nv/ComputeCache) where a driver is
// installed: on the GPU host a second compile of the same source took 12 ms instead of 345 ms. The benchmark
// therefore sets CUDA_CACHE_DISABLE=1 (inherited by the workers; --nvrtc-cache keeps NVRTC's cache) and gives
// every pass its own source text, so no pass is served by another's work.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tuner/compile/compile_pool.h"
#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Template arguments of gemm_like.cu that fit 48 KiB of static shared memory and 32..1024 threads.
std::vector<std::string> gemm_like_arguments() {
  std::vector<std::string> arguments;
  for (int block_m : {32, 64, 128}) {
    for (int block_n : {32, 64, 128}) {
      for (int block_k : {8, 16, 32}) {
        for (int thread_m : {2, 4, 8}) {
          for (int thread_n : {2, 4, 8}) {
            for (bool double_buffer : {false, true}) {
              int threads = (block_m / thread_m) * (block_n / thread_n);
              int shared_bytes = (double_buffer ? 2 : 1) * block_k * (block_m + block_n + 2) * 4;
              if (threads < 32 || threads > 1024 || shared_bytes > 48 * 1024) continue;
              arguments.push_back(fmt::format("{}, {}, {}, {}, {}, {}", block_m, block_n, block_k, thread_m, thread_n,
                                              double_buffer ? "true" : "false"));
            }
          }
        }
      }
    }
  }
  return arguments;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Compile throughput of NVRTC in-process versus the compile pool"};
  int jobs = 0;
  int count = 128;  // enough rounds per worker that the last, unevenly sized compiles do not dominate
  std::string template_path = std::string(KERNLATHE_SOURCE_DIR) + "/tests/data/compile/gemm_like.cu";
  std::string entry = "gemm_like";
  std::string arch = "sm_90";
  std::string worker = TUNE_BINARY;
  bool per_config = true;
  app.add_option("--jobs", jobs, "compiler processes (0: one per core)");
  app.add_option("--count", count, "distinct configurations to compile")->check(CLI::PositiveNumber);
  app.add_option("--template", template_path, "template file")->check(CLI::ExistingFile);
  app.add_option("--entry", entry, "entry point; gemm_like gets template arguments, others are used as named");
  app.add_option("--arch", arch, "real architecture, e.g. sm_90");
  app.add_option("--worker", worker, "executable that runs `__compile-worker` (the tune binary)");
  app.add_flag("!--no-per-config", per_config, "do not print one line per configuration");
  bool nvrtc_cache = false;
  app.add_flag("--nvrtc-cache", nvrtc_cache, "leave NVRTC's own compilation cache on");
  CLI11_PARSE(app, argc, argv);
  // Read by NVRTC when it first initialises, so before any NVRTC call; the workers inherit it.
  if (!nvrtc_cache) ::setenv("CUDA_CACHE_DISABLE", "1", 1);

  std::ifstream template_stream(template_path);
  std::stringstream template_text;
  template_text << template_stream.rdbuf();
  std::vector<std::string> argument_sets = entry == "gemm_like" ? gemm_like_arguments() : std::vector<std::string>{};
  while (!argument_sets.empty() && std::gcd(argument_sets.size(), std::size_t{97}) != 1) argument_sets.pop_back();
  auto make_requests = [&](const std::string& pass) {
    std::vector<kernlathe::CompileRequest> requests;
    for (int index = 0; index < count; ++index) {
      kernlathe::CompileRequest request;
      request.source_name = std::filesystem::path(template_path).filename().string();
      // BENCH_VARIANT makes every cache key differ even when the argument sets repeat; BENCH_PASS keeps one
      // pass (and one run) from reusing another's compiles in NVRTC's own cache.
      request.source = fmt::format(
          "#define ALPHA 1.0f\n#define BENCH_VARIANT {}\n#define BENCH_PASS {}_{}\n#line 1 \"{}\"\n{}", index, pass,
          ::getpid(), request.source_name, template_text.str());
      // A stride coprime with the number of argument sets walks through all of them, so a short run still mixes
      // small and large tiles instead of taking the first few neighbours.
      std::size_t argument_index =
          (static_cast<std::size_t>(index) * 97) % std::max<std::size_t>(argument_sets.size(), 1);
      request.name_expression =
          argument_sets.empty() ? entry : fmt::format("{}<{}>", entry, argument_sets[argument_index]);
      request.arch = arch;
      request.options = {"--std=c++17", "--gpu-architecture=" + arch};
      if (std::string include = kernlathe::cuda_include_directory(); !include.empty()) {
        request.options.push_back("-I" + include);
      }
      requests.push_back(std::move(request));
    }
    return requests;
  };
  std::vector<kernlathe::CompileRequest> serial_requests = make_requests("serial");
  std::vector<kernlathe::CompileRequest> requests = make_requests("pool");

  std::filesystem::path scratch =
      std::filesystem::temp_directory_path() / fmt::format("tuner-bench-compile-{}", ::getpid());
  std::filesystem::remove_all(scratch);

  std::fprintf(stderr, "NVRTC %s, %d configurations of %s for %s, NVRTC's own cache %s\n",
               kernlathe::nvrtc_version().c_str(), count, template_path.c_str(), arch.c_str(), nvrtc_cache ? "on" : "off");
  // The pool starts first, as in a tuning session, where its processes start while the space is enumerated;
  // they sit idle during the serial pass.
  kernlathe::CompilePoolOptions options;
  options.jobs = jobs;
  options.cache_dir = scratch / "pool";
  options.worker_executable = worker;
  auto pool_start = Clock::now();
  std::optional<kernlathe::CompilePool> pool;
  pool.emplace(options);
  double pool_start_ms = seconds_since(pool_start) * 1e3;

  // One compile outside the timing: the first NVRTC call in a process loads and initialises the library.
  kernlathe::CompileRequest warm_up = make_requests("warm_up").front();
  kernlathe::compile_cubin(warm_up, scratch / "warm-up");

  std::vector<kernlathe::CompileResult> serial_results;
  auto serial_start = Clock::now();
  for (const auto& request : serial_requests) {
    serial_results.push_back(kernlathe::compile_cubin(request, scratch / "serial"));
  }
  double serial_seconds = seconds_since(serial_start);

  std::vector<kernlathe::CompileResult> pool_results;
  int pool_jobs = pool->jobs();
  // Cold cache: every request goes to a worker process. The first compile in each worker includes NVRTC's
  // initialisation, which the serial pass's warm-up excluded.
  auto cold_start = Clock::now();
  std::vector<std::future<kernlathe::CompileResult>> futures;
  for (const auto& request : requests) futures.push_back(pool->submit(request));
  for (auto& future : futures) pool_results.push_back(future.get());
  double pool_seconds = seconds_since(cold_start);

  auto warm_start = Clock::now();
  futures.clear();
  for (const auto& request : requests) futures.push_back(pool->submit(request));
  int warm_hits = 0;
  for (auto& future : futures) warm_hits += future.get().cached ? 1 : 0;
  double warm_seconds = seconds_since(warm_start);
  if (warm_hits != count) std::fprintf(stderr, "warning: only %d of %d warm lookups hit the cache\n", warm_hits, count);
  pool.reset();

  int failures = 0;
  double serial_total_ms = 0;
  double pool_total_ms = 0;
  for (int index = 0; index < count; ++index) {
    const auto& serial = serial_results[index];
    const auto& pooled = pool_results[index];
    if (!serial.ok || !pooled.ok) {
      ++failures;
      std::fprintf(stderr, "config %d failed: %s\n", index, (serial.ok ? pooled.error : serial.error).c_str());
    }
    serial_total_ms += serial.compile_ms;
    pool_total_ms += pooled.compile_ms;
    if (per_config) {
      std::printf("%4d  %-48s serial %8.1f ms  pool %8.1f ms\n", index, requests[index].name_expression.c_str(),
                  serial.compile_ms, pooled.compile_ms);
    }
  }
  double serial_rate = count / serial_seconds;
  double pool_rate = count / pool_seconds;
  std::printf("serial:     %6.2f configs/s  (%.1f ms per config)\n", serial_rate, serial_total_ms / count);
  std::printf("pool x%-3d   %6.2f configs/s  (%.1f ms per config inside a worker)\n", pool_jobs, pool_rate,
              pool_total_ms / count);
  std::printf("speed-up:   %6.2fx  (pool start-up, not counted: %.1f ms)\n", pool_rate / serial_rate, pool_start_ms);
  std::printf("warm cache: %6.0f configs/s\n", count / warm_seconds);
  std::filesystem::remove_all(scratch);
  return failures == 0 ? 0 : 1;
}
