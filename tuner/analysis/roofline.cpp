#include "tuner/analysis/roofline.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tuner/common/error.h"

namespace kernlathe {

double compute_roof_gflops(const RooflineCeilings& ceilings, ComputeRoof roof) {
  switch (roof) {
    case ComputeRoof::fma: return ceilings.fma_gflops;
    case ComputeRoof::tensor: return ceilings.tensor_gflops;
    case ComputeRoof::tf32: return ceilings.tensor_gflops / 2;
    case ComputeRoof::none: return 0;
  }
  return 0;
}

namespace {

std::string rate(double gflops) {
  return gflops >= 1e3 ? fmt::format("{:.1f} TFLOP/s", gflops / 1e3) : fmt::format("{:.1f} GFLOP/s", gflops);
}

}  // namespace

std::string roof_description(const RooflinePoint& point, const RooflineCeilings& ceilings, ComputeRoof roof) {
  if (point.memory_bound)
    return fmt::format("the memory roof (device copy {:.1f} GB/s x {:.4g} flop/B = {})", ceilings.copy_gbps,
                       point.intensity, rate(point.attainable_gflops));
  const std::string tensor_source = ceilings.tensor_source.empty() ? "bf16" : ceilings.tensor_source;
  switch (roof) {
    case ComputeRoof::fma: return fmt::format("the fp32 FMA roof ({})", rate(point.attainable_gflops));
    case ComputeRoof::tensor:
      return fmt::format("the tensor-core roof ({}, {})", tensor_source, rate(point.attainable_gflops));
    case ComputeRoof::tf32:
      return fmt::format("the tf32 tensor-core roof (half of {}: {})", tensor_source, rate(point.attainable_gflops));
    case ComputeRoof::none: break;
  }
  return fmt::format("the roof ({})", rate(point.attainable_gflops));
}

std::string above_roof_warning(const RooflinePoint& point, const RooflineCeilings& ceilings, ComputeRoof roof) {
  if (!point.above_roof) return "";
  return fmt::format("measured {}, {:.1f}% of {}: a point above its roof means that roof does not bound this kernel "
                     "(another compute roof applies, or the ceiling was measured low); shown as 100%",
                     rate(point.gflops), 100 * point.measured_fraction, roof_description(point, ceilings, roof));
}

RooflinePoint place_on_roofline(double flops, double bytes, double time_ms, const RooflineCeilings& ceilings,
                                ComputeRoof roof) {
  if (!(flops > 0) || !(bytes > 0) || !(time_ms > 0) || !std::isfinite(flops) || !std::isfinite(bytes) ||
      !std::isfinite(time_ms))
    throw InputError(fmt::format("a roofline point needs positive flops, bytes and time (got {}, {}, {} ms)", flops,
                                 bytes, time_ms));
  if (!(ceilings.copy_gbps > 0))
    throw InputError(fmt::format("the ceilings of {} hold no copy bandwidth", ceilings.gpu));
  RooflinePoint point;
  point.intensity = flops / bytes;
  point.gflops = flops / (time_ms * 1e-3) / 1e9;
  const double memory_roof = ceilings.copy_gbps * point.intensity;  // GB/s x flop/B = GFLOP/s
  const double compute_roof = compute_roof_gflops(ceilings, roof);
  point.memory_bound = compute_roof <= 0 || memory_roof <= compute_roof;
  point.attainable_gflops = point.memory_bound ? memory_roof : compute_roof;
  point.measured_fraction = point.gflops / point.attainable_gflops;
  point.above_roof = point.measured_fraction > 1;
  point.fraction = std::min(point.measured_fraction, 1.0);
  return point;
}

namespace {

double ceiling_number(const nlohmann::json& object, const char* key, const std::filesystem::path& file) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return 0;
  if (!found->is_number() || found->get<double>() < 0 || !std::isfinite(found->get<double>()))
    throw InputError(fmt::format("{}: \"{}\" must be a non-negative number (GB/s or GFLOP/s), not {}", file.string(),
                                 key, found->dump()));
  return found->get<double>();
}

}  // namespace

std::vector<RooflineCeilings> read_ceiling_files(const std::vector<std::filesystem::path>& files) {
  std::vector<RooflineCeilings> all;
  for (const std::filesystem::path& file : files) {
    std::ifstream stream(file);
    if (!stream) throw InputError(fmt::format("{}: cannot read the ceiling file", file.string()));
    nlohmann::json object;
    try {
      object = nlohmann::json::parse(stream);
    } catch (const nlohmann::json::parse_error& error) {
      throw InputError(fmt::format("{}: not JSON ({})", file.string(), error.what()));
    }
    if (!object.is_object()) throw InputError(fmt::format("{}: a ceiling file is one JSON object", file.string()));
    if (!object.contains("gpu") || !object["gpu"].is_string() || object["gpu"].get<std::string>().empty())
      throw InputError(fmt::format("{}: \"gpu\" must name the GPU the ceilings were measured on, as run.json's "
                                   "gpu_name (\"NVIDIA H200\")",
                                   file.string()));
    RooflineCeilings ceilings;
    ceilings.gpu = object["gpu"].get<std::string>();
    ceilings.copy_gbps = ceiling_number(object, "copy_gbps", file);
    ceilings.fma_gflops = ceiling_number(object, "fma_gflops", file);
    ceilings.tensor_gflops = ceiling_number(object, "tensor_gflops", file);
    if (object.contains("tensor_source") && object["tensor_source"].is_string())
      ceilings.tensor_source = object["tensor_source"].get<std::string>();
    if (!(ceilings.copy_gbps > 0))
      throw InputError(fmt::format("{}: \"copy_gbps\" (the device copy bandwidth) is missing or 0: without it there "
                                   "is no memory roof",
                                   file.string()));
    ceilings.source = file.filename().string();
    if (object.contains("measured") && object["measured"].is_string())
      ceilings.source += fmt::format(", measured {}", object["measured"].get<std::string>());
    if (std::any_of(all.begin(), all.end(), [&](const RooflineCeilings& other) { return other.gpu == ceilings.gpu; }))
      throw InputError(fmt::format("{}: a ceiling file given earlier already names {}", file.string(), ceilings.gpu));
    all.push_back(std::move(ceilings));
  }
  return all;
}

}  // namespace kernlathe
