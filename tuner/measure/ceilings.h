#pragma once
// The ceilings results are divided by, measured on the device a run uses rather than taken from a data sheet:
//   copy      device-to-device copy of 1 GiB, bytes read + written per second (memory-bound kernels);
//   h2d       one large copy from pinned host memory to the device (streamed workloads' input);
//   duplex    host-to-device and device-to-host copies at once, both directions' bytes (streamed input + output);
//   fma       fp32 FMA throughput of a kernel of independent FMA chains filling every SM (compute-bound SIMT);
//   tensor    the fastest tensor-core GEMM available to measure: cuBLAS bf16 at 8192^3 with fp32 accumulation (the
//             tuned GEMM templates reach 95-101% of it, so it is the ceiling they are judged against).
// A run records them in run.json (ceiling_metadata); `tune ceilings` prints them; reports draw rooflines with them.

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <cuda.h>

#include "tuner/spec/model.h"

namespace kernlathe {

struct Ceilings {
  double copy_gbps = 0;
  double pinned_h2d_gbps = 0;
  double pinned_duplex_gbps = 0;
  double fma_gflops = 0;
  double tensor_gflops = 0;
  std::string tensor_source;  // "cuBLAS 13.0.2 bf16 8192^3"; empty when cuBLAS could not be loaded
  std::string failures;       // what could not be measured and why ("; "-separated), empty when all were

  bool operator==(const Ceilings&) const = default;
};

// run.json entries ("ceiling_copy_gbps", ...) and back; a missing entry reads as 0 (not measured).
std::map<std::string, std::string> ceiling_metadata(const Ceilings& ceilings);
Ceilings ceilings_from_metadata(const std::map<std::string, std::string>& extra);

// Measures every ceiling on the device of the current context, with work on `stream`. A ceiling that cannot be
// measured (cuBLAS missing, too little memory) is left 0 and named in failures; driver errors throw. The FMA
// kernel compiles (or comes from the cubin cache in cubin_cache) on a thread while the copies are measured, and
// the pinned host-to-device and duplex copies share one pinned buffer: with nothing cached, the ceilings took
// 0.84 s of a run's start-up on the H200. `parts`, when given, receives each ceiling's seconds, in order.
Ceilings measure_ceilings(CUstream stream, const DeviceProperties& device, const std::filesystem::path& cubin_cache,
                          std::vector<std::pair<std::string, double>>* parts = nullptr);

// The device-to-device copy ceiling alone (run at every setup): 1 GiB or a quarter of the free memory, median of 9
// copies after 2 warm-up copies.
double measure_copy_gbps(CUstream stream);

}  // namespace kernlathe
