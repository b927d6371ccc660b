#include "tuner/report/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <regex>

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
    case ComputeRoof::tf32: return "tf32";
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

namespace {

bool template_uses_tensor_cores(const std::filesystem::path& template_file) {
  std::ifstream stream(template_file);
  if (!stream) return false;
  const std::string text{std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
  // The instructions (and the headers named after them) only tensor-core code uses; `\b` keeps "gamma" out.
  static const std::regex tensor_core_words(R"(\b(wgmma|wmma|mma|mma_sync)\b)");
  return std::regex_search(text, tensor_core_words);
}

ComputeRoof roof_of_math(const std::string& math) {
  if (math == "fma") return ComputeRoof::fma;
  if (math == "tf32") return ComputeRoof::tf32;
  if (math == "f16" || math == "bf16") return ComputeRoof::tensor;
  return ComputeRoof::none;
}

bool is_floating_point(Dtype dtype) {
  return dtype == Dtype::f16 || dtype == Dtype::bf16 || dtype == Dtype::f32 || dtype == Dtype::f64;
}

}  // namespace

ComputeRoof compute_roof_of(const KernelSpec& spec, std::string* why) {
  auto said = [&](ComputeRoof roof, std::string reason) {
    if (why) *why = std::move(reason);
    return roof;
  };
  const char* tensor_note = "the measured 16-bit tensor-core roof (f16 and bf16 run at the same rate)";
  const char* tf32_note = "the tf32 tensor-core roof, half the measured 16-bit one (no tf32 ceiling is measured)";
  auto roof_note = [&](ComputeRoof roof) -> std::string {
    return roof == ComputeRoof::fma ? "the fp32 FMA roof" : roof == ComputeRoof::tf32 ? tf32_note : tensor_note;
  };
  if (!spec.metrics.math.empty()) {
    const ComputeRoof roof = roof_of_math(spec.metrics.math);
    return said(roof, fmt::format("metrics.math is {}: judged against {}", spec.metrics.math, roof_note(roof)));
  }
  if (spec.baseline.library == Baseline::Library::cublas) {
    const std::string& compute = spec.baseline.compute;
    const ComputeRoof roof = compute == "f32" ? ComputeRoof::fma : roof_of_math(compute);
    return said(roof, fmt::format("no metrics.math; its cuBLAS baseline computes in {}: judged against {}", compute,
                                  roof_note(roof)));
  }
  // Nothing stated: the input buffers' element type and whether the template issues tensor-core instructions.
  bool any_input = false, all_16_bit = true, any_f32 = false;
  Dtype input_type = Dtype::f32;
  for (const Argument& argument : spec.arguments) {
    if (!argument.is_buffer || argument.role == Role::out || !is_floating_point(argument.dtype)) continue;
    any_input = true;
    input_type = argument.dtype;
    all_16_bit = all_16_bit && (argument.dtype == Dtype::f16 || argument.dtype == Dtype::bf16);
    any_f32 = any_f32 || argument.dtype == Dtype::f32;
  }
  if (!any_input || !template_uses_tensor_cores(spec.template_file))
    return said(ComputeRoof::fma, "no metrics.math; its template issues no tensor-core instruction: judged against "
                                  "the fp32 FMA roof");
  if (all_16_bit)
    return said(ComputeRoof::tensor, fmt::format("no metrics.math; {} inputs and a template with tensor-core "
                                                 "instructions: judged against {}",
                                                 dtype_name(input_type), tensor_note));
  return said(ComputeRoof::none, fmt::format("no metrics.math; {} inputs and a template with tensor-core "
                                             "instructions could run fp32 FMA or tf32: state metrics.math; only the "
                                             "memory roof applies",
                                             any_f32 ? "fp32" : dtype_name(input_type)));
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
                        roof == ComputeRoof::fma ? "fp32 FMA" : "tensor-core", recording.device);
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
                {"measured_fraction", point.measured_fraction},
                {"roof", roof_description(point, *ceilings, roof)},
                {"warning", above_roof_warning(point, *ceilings, roof)},
                // Without a compute roof the copy roof is only an upper bound: the kernel may be compute-bound.
                {"bound", roof == ComputeRoof::none ? "unknown" : point.memory_bound ? "memory" : "compute"}};
  } catch (const TunerError& problem) {
    return Json{{"unavailable", fmt::format("{}: {}", spec_file.string(), problem.what())}};
  }
}

}  // namespace kernlathe
