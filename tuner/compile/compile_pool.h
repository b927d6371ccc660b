#pragma once
// Compiles configurations ahead of measurement, several at a time.
//
// NVRTC does not scale with threads inside one process (16 threads: 1.06x on the 16-core GPU host) but does
// across processes (16 processes: ~12x), so the pool runs `jobs` compiler processes (`tune __compile-worker`,
// compile_worker.h), each fed by one dispatcher thread from a shared FIFO queue. Workers write cubins into the
// cache directory themselves; the pool looks the cache up before dispatching, so a hit costs no process round
// trip. A worker that dies (signal, abort) fails only the request it held and is restarted for the next one.

#include <cstddef>
#include <filesystem>
#include <future>
#include <memory>

#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"

namespace kernlathe {

struct CompilePoolOptions {
  int jobs = 0;  // 0: host_compile_jobs()
  std::filesystem::path cache_dir;  // empty: <temp>/tuner-cubins
  // The `tune` binary (or any program that runs compile_worker_main for the argument "__compile-worker").
  // Empty: compile in the dispatcher threads of this process instead, which works anywhere but does not scale.
  std::filesystem::path worker_executable;
  bool use_cache = true;  // false: compile even when the cache holds the cubin (the result is stored again)
};

// Compile processes by default: one per core this process may run on (its CPU affinity, which a container or
// taskset narrows), at least one.
int host_compile_jobs();

// How many configurations the run loop keeps queued, compiled or compiling, ahead of `lanes` devices measuring
// (tuner/session/measurement_lanes.h) fed by a pool of `jobs` processes (0: nothing to compile, a replay).
std::size_t compile_lookahead(int jobs, std::size_t lanes);

class CompilePool {
 public:
  // Throws TunerError when the worker executable is given but cannot be executed, or the cache directory
  // cannot be created. The worker processes start right away; one that dies is restarted on its next request.
  explicit CompilePool(CompilePoolOptions options);
  // Requests still queued complete with ok=false ("compile pool shut down"); workers busy compiling are killed.
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Never throws for a bad configuration: compile errors and dead workers arrive as results with ok=false.
  std::future<CompileResult> submit(CompileRequest request);
  int jobs() const;
  const std::filesystem::path& cache_dir() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kernlathe
