#pragma once
// The roofline data of `tune report` (and of `tune analyze`): which measured ceilings each recording is placed
// against, which compute roof its kernel is judged by, and its best configuration's point (arithmetic intensity from
// the spec's metrics.flops / metrics.bytes, as `tune run` computes GFLOP/s and GB/s). scripts/report/plots.py draws
// what this computes; tune analyze prints it.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/analysis/landscape.h"
#include "tuner/analysis/recording.h"
#include "tuner/analysis/roofline.h"
#include "tuner/spec/model.h"

namespace kernlathe {

// The ceilings of a project record, first found of: the ceiling_* entries of run.json (the newest run that recorded
// them, measured at its start); the ceiling file (from --ceilings) naming the record's GPU; run.json's
// copy_bandwidth_gbps (runs before the ceilings were recorded: a memory roof only). nullopt for T4 files and
// records with none of these.
std::optional<RooflineCeilings> recording_ceilings(const Recording& recording,
                                                   const std::vector<RooflineCeilings>& ceiling_files);

// The compute roof of a kernel (issue 31: attention was placed against the fp32 FMA roof at "1030.7% of attainable"),
// first found of: the spec's metrics.math (fma; tf32; f16 or bf16: the 16-bit tensor-core roof); its cuBLAS
// baseline's compute type; inferred, where the spec says neither, from its input buffers and template: the 16-bit
// tensor roof for f16/bf16 inputs to a template that issues tensor-core instructions (wgmma, mma), none (memory roof
// only) for other inputs to such a template, the fp32 FMA roof otherwise. why (when given) says which and why.
ComputeRoof compute_roof_of(const KernelSpec& spec, std::string* why = nullptr);

// The roofline of one recording for plots.py: {"unavailable": reason} where the record has no ceilings, no spec
// under kernels_directory, a spec with other parameters or without metrics.flops and metrics.bytes; otherwise the
// ceilings with their source, the compute roof, and the best configuration's flops, bytes, time, intensity,
// GFLOP/s, attainable GFLOP/s at its intensity and the fraction of it (at most 1; measured_fraction as measured),
// the roof that bounds it ("roof", as a sentence names it), a "warning" (empty unless the point is above that roof),
// and which roof bounds it ("memory", "compute", or "unknown" where no compute roof applies and the memory roof
// alone is drawn).
nlohmann::ordered_json roofline_json(const Recording& recording, const LandscapeSummary& landscape,
                                     const std::filesystem::path& kernels_directory,
                                     const std::vector<RooflineCeilings>& ceiling_files);

}  // namespace kernlathe
