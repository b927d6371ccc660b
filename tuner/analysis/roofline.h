#pragma once
// The roofline of `tune report` (issue 15): a configuration's performance (flops / time) against the ceilings
// measured on its GPU at its arithmetic intensity (the spec's flops / bytes). Plain numbers in, plain numbers out;
// which ceilings a recording gets and which compute roof applies are decided by the caller.
//
// Ceiling files (`tune report --ceilings FILE`) hold what `tune ceilings --json` prints plus the GPU's name, for
// records whose run.json predates the ceilings:
//   {"gpu": "NVIDIA H200", "measured": "2026-11-24 03:05 UTC, commit b72c1ce", "copy_gbps": 4239.6,
//    "fma_gflops": 64655.9, "tensor_gflops": 887596.2, "tensor_source": "cuBLAS 13.1.0 bf16 8192^3", ...}

#include <filesystem>
#include <string>
#include <vector>

namespace kernlathe {

// The roofs of one GPU. 0 is "not measured": the roof is not drawn.
struct RooflineCeilings {
  std::string gpu;            // as run.json's gpu_name ("NVIDIA H200")
  double copy_gbps = 0;       // device copy, bytes read + written per second: the memory roof
  double fma_gflops = 0;      // fp32 FMA: the compute roof of SIMT kernels
  double tensor_gflops = 0;   // cuBLAS bf16 GEMM: the compute roof of 16-bit tensor-core kernels
  std::string tensor_source;  // "cuBLAS 13.1.0 bf16 8192^3"
  std::string source;         // where the figures come from, as the chart says it ("run.json of the run", a file)

  bool operator==(const RooflineCeilings&) const = default;
};

// Which compute roof a kernel is judged against: fp32 FMA on CUDA cores, 16-bit (f16, bf16) tensor cores, tf32 tensor
// cores.
enum class ComputeRoof { none, fma, tensor, tf32 };

// One configuration placed on the roofline.
struct RooflinePoint {
  double intensity = 0;          // flops / bytes
  double gflops = 0;             // flops / time
  double attainable_gflops = 0;  // min(copy roof x intensity, compute roof), the copy roof alone without a compute roof
  double fraction = 0;           // gflops / attainable_gflops, at most 1 (see above_roof)
  double measured_fraction = 0;  // gflops / attainable_gflops as measured, above 1 when above_roof
  bool above_roof = false;       // measured above the roof that bounds it: that roof is wrong for this kernel
  bool memory_bound = false;     // the memory roof is the lower one at this intensity
};

// The compute roof's figure in GFLOP/s (0 where none applies or it was not measured). tf32 is half the measured
// 16-bit tensor roof: dense tf32 runs at half the f16/bf16 rate on sm_80, sm_86, sm_89 and sm_90 (no tf32 ceiling
// is measured).
double compute_roof_gflops(const RooflineCeilings& ceilings, ComputeRoof roof);

// The roof's name as a chart or a warning says it: "the fp32 FMA roof (64.7 TFLOP/s)", "the tensor-core roof (cuBLAS
// 13.1.0 bf16 8192^3, 887.6 TFLOP/s)", "the memory roof (device copy 4239.6 GB/s x 2.25 flop/B = 9.5 TFLOP/s)".
std::string roof_description(const RooflinePoint& point, const RooflineCeilings& ceilings, ComputeRoof roof);

// Empty for a point at or under its roof; otherwise a warning that names the roof, the measured figure and its
// fraction of the roof (a point above its roof means the roof does not apply to this kernel or was measured low),
// and that the fraction shown is capped at 100%.
std::string above_roof_warning(const RooflinePoint& point, const RooflineCeilings& ceilings, ComputeRoof roof);

// flops and bytes of one execution, its time in ms. InputError when flops, bytes or the time are not positive or the
// ceilings hold no copy figure. A point above the roof that bounds it gets fraction 1 and above_roof.
RooflinePoint place_on_roofline(double flops, double bytes, double time_ms, const RooflineCeilings& ceilings,
                                ComputeRoof roof);

// Every ceiling file, in order. InputError naming the file for one that cannot be read, is not a JSON object, has no
// "gpu" name or no positive "copy_gbps", holds a ceiling that is not a non-negative number, or names a GPU an earlier
// file named.
std::vector<RooflineCeilings> read_ceiling_files(const std::vector<std::filesystem::path>& files);

}  // namespace kernlathe
