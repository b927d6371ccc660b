#include "tuner/cli/report_roofline.h"

#include <fmt/format.h>

#include <algorithm>

#include "tuner/common/error.h"
#include "tuner/measure/ceilings.h"
#include "tuner/record/run_metadata.h"
#include "tuner/session/tuning_session.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

// `recorded` (values of the recorded parameters, in their order) as a configuration of `space`: each of the spec's
// parameters by name, its default where the record has no such parameter. Nothing when the record holds a parameter
// the spec lacks or a value the spec does not offer.
std::optional<Configuration> configuration_by_name(const Space& space, const std::vector<Parameter>& recorded_parameters,
                                                   const Configuration& recorded) {
  for (const Parameter& parameter : recorded_parameters) {
    if (std::none_of(space.parameters.begin(), space.parameters.end(),
                     [&](const Parameter& declared) { return declared.name == parameter.name; }))
      return std::nullopt;
  }
  Configuration configuration;
  for (const Parameter& parameter : space.parameters) {
    Value value = parameter.default_value;
    for (std::size_t index = 0; index < recorded_parameters.size() && index < recorded.size(); ++index)
      if (recorded_parameters[index].name == parameter.name) value = recorded[index];
    if (std::find(parameter.values.begin(), parameter.values.end(), value) == parameter.values.end()) return std::nullopt;
    configuration.push_back(value);
  }
  return configuration;
}


namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const char* roof_name(ComputeRoof roof) {
  switch (roof) {
    case ComputeRoof::fma: return "fma";
    case ComputeRoof::tensor: return "tensor";
    case ComputeRoof::none: return "none";
  }
  return "none";
}

}  // namespace

std::optional<RooflineCeilings> recording_ceilings(const Recording& recording,
                                                   const std::vector<RooflineCeilings>& ceiling_files) {
  if (recording.arch.empty()) return std::nullopt;  // a T4 file: no run.json
  const std::vector<RunMetadata> runs = read_run_metadata(recording.source);
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    const Ceilings measured = ceilings_from_metadata(run->extra);
    if (measured.copy_gbps > 0) {
      RooflineCeilings ceilings;
      ceilings.gpu = recording.device;
      ceilings.copy_gbps = measured.copy_gbps;
      ceilings.fma_gflops = measured.fma_gflops;
      ceilings.tensor_gflops = measured.tensor_gflops;
      ceilings.tensor_source = measured.tensor_source;
      ceilings.source = fmt::format("run.json, measured at the start of the run of {}", run->started_at);
      return ceilings;
    }
  }
  const auto file = std::find_if(ceiling_files.begin(), ceiling_files.end(),
                                 [&](const RooflineCeilings& ceilings) { return ceilings.gpu == recording.device; });
  if (file != ceiling_files.end()) return *file;
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    const auto found = run->extra.find("copy_bandwidth_gbps");
    if (found == run->extra.end()) continue;
    double copy_gbps = 0;
    try {
      copy_gbps = std::stod(found->second);
    } catch (const std::exception&) {
      continue;  // not a number: as if absent
    }
    if (copy_gbps > 0) {
      RooflineCeilings ceilings;
      ceilings.gpu = recording.device;
      ceilings.copy_gbps = copy_gbps;
      ceilings.source = fmt::format("run.json copy_bandwidth_gbps, measured at the start of the run of {}",
                                    run->started_at);
      return ceilings;
    }
  }
  return std::nullopt;
}

ComputeRoof compute_roof_of(const KernelSpec& spec, std::string* why) {
  auto said = [&](ComputeRoof roof, std::string reason) {
    if (why) *why = std::move(reason);
    return roof;
  };
  if (spec.baseline.library == Baseline::Library::cublas) {
    const std::string& compute = spec.baseline.compute;
    if (compute == "f16" || compute == "bf16")
      return said(ComputeRoof::tensor, fmt::format("{} tensor-core GEMM: judged against the measured bf16 tensor-core "
                                                   "roof (f16 and bf16 run at the same rate)",
                                                   compute));
    if (compute == "tf32")
      return said(ComputeRoof::none, "tf32 tensor cores: no tf32 ceiling is measured (the tensor roof is bf16, "
                                     "twice tf32's rate), so only the memory roof applies");
  }
  return said(ComputeRoof::fma, "judged against the fp32 FMA roof");
}

Json roofline_json(const Recording& recording, const LandscapeSummary& landscape, const fs::path& kernels_directory,
                   const std::vector<RooflineCeilings>& ceiling_files) {
  if (recording.arch.empty())
    return Json{{"unavailable", "a community T4 file: no spec metrics and no ceilings of its GPU"}};
  const std::optional<RooflineCeilings> ceilings = recording_ceilings(recording, ceiling_files);
  if (!ceilings)
    return Json{{"unavailable", fmt::format("no ceilings of {}: its run.json records none (runs before the ceilings "
                                            "were recorded) and no --ceilings file names it",
                                            recording.device)}};
  const fs::path spec_file = kernels_directory / (recording.kernel + ".yaml");
  std::error_code error;
  if (recording.kernel.empty() || !fs::is_regular_file(spec_file, error))
    return Json{{"unavailable", fmt::format("no spec {} to take metrics.flops and metrics.bytes from", spec_file.string())}};
  try {
    std::string problem = recording.problem;
    const KernelSpec kernel = load_kernel_spec(spec_file, parse_problem_overrides(problem));
    if (kernel.metrics.flops.empty() || kernel.metrics.bytes.empty())
      return Json{{"unavailable", fmt::format("{} states no metrics.flops or no metrics.bytes: no arithmetic intensity",
                                              spec_file.string())}};
    // The best configuration in the spec's parameters: a parameter the spec gained since the record was written
    // (GEMM's WG_SPLIT_K) takes its default, which is what the recorded kernels ran with.
    std::optional<Configuration> best = configuration_by_name(kernel.space, recording.parameters,
                                                              landscape.best_configuration);
    if (!best) {
      std::vector<std::string> spec_names, recorded_names;
      for (const Parameter& parameter : kernel.space.parameters) spec_names.push_back(parameter.name);
      for (const Parameter& parameter : recording.parameters) recorded_names.push_back(parameter.name);
      return Json{{"unavailable", fmt::format("{} declares the parameters {}, the record holds {}", spec_file.string(),
                                              fmt::join(spec_names, ", "), fmt::join(recorded_names, ", "))}};
    }
    const SpaceEnumerator space(kernel.space, run_constants(kernel, device_profile(recording.arch)));
    const double flops = evaluate_metric(kernel.metrics.flops, space, *best);
    const double bytes = evaluate_metric(kernel.metrics.bytes, space, *best);
    std::string why;
    ComputeRoof roof = compute_roof_of(kernel, &why);
    if (roof != ComputeRoof::none && compute_roof_gflops(*ceilings, roof) <= 0) {
      why = fmt::format("no {} ceiling recorded for {}, so only the memory roof applies",
                        roof == ComputeRoof::tensor ? "tensor-core" : "fp32 FMA", recording.device);
      roof = ComputeRoof::none;
    }
    const RooflinePoint point = place_on_roofline(flops, bytes, landscape.best_ms, *ceilings, roof);
    return Json{{"gpu", recording.device},
                {"label", recording.problem.empty() ? recording.kernel : recording.kernel + " " + recording.problem},
                {"ceilings", {{"copy_gbps", ceilings->copy_gbps},
                              {"fma_gflops", ceilings->fma_gflops},
                              {"tensor_gflops", ceilings->tensor_gflops},
                              {"tensor_source", ceilings->tensor_source},
                              {"source", ceilings->source}}},
                {"compute_roof", roof_name(roof)},
                {"compute_roof_note", why},
                {"flops", flops},
                {"bytes", bytes},
                {"time_ms", landscape.best_ms},
                {"intensity", point.intensity},
                {"gflops", point.gflops},
                {"attainable_gflops", point.attainable_gflops},
                {"fraction", point.fraction},
                // Without a compute roof the copy roof is only an upper bound: the kernel may be compute-bound.
                {"bound", roof == ComputeRoof::none ? "unknown" : point.memory_bound ? "memory" : "compute"}};
  } catch (const TunerError& problem) {
    return Json{{"unavailable", fmt::format("{}: {}", spec_file.string(), problem.what())}};
  }
}

}  // namespace kernlathe
