#include "tuner/spec/kernel_spec_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <system_error>
#include <utility>

#include "tuner/spec/argument_reader.h"
#include "tuner/spec/name_resolution.h"
#include "tuner/spec/nvrtc_options.h"
#include "tuner/spec/path_names.h"
#include "tuner/spec/space_reader.h"
#include "tuner/spec/stream_section.h"

namespace kernlathe::spec_loading {
namespace {

std::array<Expression, 3> read_dimensions(const Document& document, const YAML::Node& node, const std::string& what) {
  std::vector<Expression> items = read_expression_list(document, node, what);
  if (items.empty() || items.size() > 3) {
    document.fail(node, fmt::format("{} has {} entries; give 1 to 3 (x, y, z)", what, items.size()));
  }
  std::array<Expression, 3> dimensions;
  for (std::size_t axis = 0; axis < 3; ++axis) {
    dimensions[axis] = axis < items.size() ? items[axis] : Expression::constant(std::int64_t{1});
  }
  return dimensions;
}

LaunchGeometry read_launch(const Document& document, const YAML::Node& node) {
  Fields fields(document, node, "launch");
  fields.allow_only({"grid", "block", "shared_memory"});
  LaunchGeometry launch;
  launch.grid = read_dimensions(document, fields.require("grid"), "launch.grid");
  launch.block = read_dimensions(document, fields.require("block"), "launch.block");
  launch.dynamic_shared_bytes = Expression::constant(std::int64_t{0});
  if (auto shared = fields.find("shared_memory")) {
    launch.dynamic_shared_bytes = read_expression(document, *shared, "launch.shared_memory");
  }
  return launch;
}

// One configuration of verify.reference: named parameter values, each a value of its parameter.
std::map<std::string, Value> read_reference_values(const Document& document, const YAML::Node& node, const Space& space) {
  std::vector<std::string> parameter_names;
  for (const Parameter& parameter : space.parameters) parameter_names.push_back(parameter.name);
  std::map<std::string, Value> values;
  Fields entries(document, node, "verify.reference");
  for (const Fields::Entry& entry : entries.entries()) {
    auto parameter = std::find_if(space.parameters.begin(), space.parameters.end(),
                                  [&](const Parameter& candidate) { return candidate.name == entry.key; });
    if (parameter == space.parameters.end()) {
      document.fail(entry.key_node, fmt::format("verify.reference names '{}', which is not a parameter of the "
                                                "space{}",
                                                entry.key, did_you_mean(entry.key, parameter_names)));
    }
    std::string what = fmt::format("verify.reference value of '{}'", entry.key);
    Value value = read_parameter_value(document, entry.value, parameter->type, what);
    if (std::find(parameter->values.begin(), parameter->values.end(), value) == parameter->values.end()) {
      document.fail(entry.value, fmt::format("{} is {}, which is not one of the parameter's values", what,
                                             expr::to_string(value)));
    }
    values[entry.key] = std::move(value);
  }
  return values;
}

Verification read_verification(const Document& document, const YAML::Node& node, const Space& space) {
  Fields fields(document, node, "verify");
  fields.allow_only({"reference", "tolerance", "enabled"});
  Verification verification;
  if (auto enabled = fields.find("enabled")) verification.enabled = read_bool(document, *enabled, "verify.enabled");
  if (auto reference = fields.find("reference"); reference && reference->IsScalar()) {
    if (reference->Scalar() != "baseline") {
      document.fail(*reference, fmt::format("verify.reference is '{}'; write `baseline` (the spec's baseline "
                                            "computes the reference), a mapping of parameter values or a list of them",
                                            reference->Scalar()));
    }
    verification.reference_is_baseline = true;
  } else if (reference && reference->IsSequence()) {
    verification.reference_where = document.where(*reference);
    if (reference->size() == 0)
      document.fail(*reference, "verify.reference is an empty list; name one configuration at least");
    for (std::size_t index = 0; index < reference->size(); ++index) {
      std::map<std::string, Value> values = read_reference_values(document, (*reference)[index], space);
      if (index == 0) verification.reference = std::move(values);
      else verification.reference_alternatives.push_back(std::move(values));
    }
  } else if (reference) {
    verification.reference_where = document.where(*reference);
    verification.reference = read_reference_values(document, *reference, space);
  }
  if (auto tolerance = fields.find("tolerance")) {
    Fields entries(document, *tolerance, "verify.tolerance");
    for (const Fields::Entry& entry : entries.entries()) {
      Dtype dtype = read_dtype(document, entry.key_node, "verify.tolerance key");
      std::string what = fmt::format("verify.tolerance.{}", entry.key);
      Fields bounds(document, entry.value, what);
      bounds.allow_only({"relative", "absolute"});
      Tolerance result = verification.tolerance_for(dtype);
      for (auto [key, target] : {std::pair{"relative", &result.relative}, std::pair{"absolute", &result.absolute}}) {
        if (auto bound = bounds.find(key)) {
          *target = read_number(document, *bound, what + "." + key);
          if (*target < 0) document.fail(*bound, fmt::format("{}.{} is negative", what, key));
        }
      }
      verification.tolerance[dtype] = result;
    }
  }
  return verification;
}

// baseline: {library: cublas, operation: gemm, compute: f16, m: M, n: N, k: K, a: a, b: b, c: c, alpha: alpha,
//            beta: beta}
Baseline read_baseline(const Document& document, const YAML::Node& node, const std::vector<Argument>& arguments) {
  Fields fields(document, node, "baseline");
  fields.allow_only({"library", "operation", "compute", "m", "n", "k", "transpose_b", "a", "b", "c", "alpha", "beta"});
  Baseline baseline;
  baseline.where = document.where(node);
  read_choice(document, fields.require("library"), "baseline.library", {"cublas"});
  baseline.library = Baseline::Library::cublas;
  baseline.operation = read_choice(document, fields.require("operation"), "baseline.operation", {"gemm"});
  baseline.compute = read_choice(document, fields.require("compute"), "baseline.compute", {"f32", "tf32", "f16", "bf16"});
  baseline.m = read_expression(document, fields.require("m"), "baseline.m");
  baseline.n = read_expression(document, fields.require("n"), "baseline.n");
  baseline.k = read_expression(document, fields.require("k"), "baseline.k");
  if (std::optional<YAML::Node> transpose_b = fields.find("transpose_b")) {
    baseline.transpose_b = read_expression(document, *transpose_b, "baseline.transpose_b");
  }
  // Names another argument of the spec: a buffer for a, b, c; a scalar for alpha, beta.
  auto read_argument_name = [&](const char* key, bool buffer) {
    YAML::Node name_node = fields.require(key);
    std::string name = read_name(document, name_node, fmt::format("baseline.{}", key));
    std::vector<std::string> candidates;
    for (const Argument& argument : arguments)
      if (buffer ? argument.is_buffer : argument.is_scalar()) candidates.push_back(argument.name);
    if (!contains(candidates, name)) {
      document.fail(name_node, fmt::format("baseline.{} is '{}', which is not a {} argument of the spec{}; {} "
                                           "arguments: {}",
                                           key, name, buffer ? "buffer" : "scalar", did_you_mean(name, candidates),
                                           buffer ? "buffer" : "scalar",
                                           candidates.empty() ? "none" : comma_list(candidates)));
    }
    return name;
  };
  baseline.a = read_argument_name("a", true);
  baseline.b = read_argument_name("b", true);
  baseline.c = read_argument_name("c", true);
  baseline.alpha = read_argument_name("alpha", false);
  baseline.beta = read_argument_name("beta", false);
  return baseline;
}

void apply_overrides(KernelSpec& spec, const ProblemOverrides& overrides) {
  std::vector<std::string> symbols;
  for (const auto& [symbol, value] : spec.problem) symbols.push_back(symbol);
  for (const auto& override_entry : overrides) {
    const std::string& name = override_entry.first;
    const std::int64_t value = override_entry.second;
    auto found = std::find_if(spec.problem.begin(), spec.problem.end(),
                              [&](const auto& entry) { return entry.first == name; });
    if (found == spec.problem.end()) {
      std::string known = symbols.empty() ? "it declares none" : "its symbols are " + comma_list(symbols);
      throw InputError(fmt::format("--problem {}={}: {} has no problem symbol '{}'{}; {}", name, value,
                                   spec.file.string(), name, did_you_mean(name, symbols), known));
    }
    if (value < 0) {
      throw InputError(fmt::format("--problem {}={}: {} is negative; problem symbols are sizes and counts", name,
                                   value, name));
    }
    found->second = value;
  }
}

// The entry point must name a kernel of the template: NVRTC reports a name it cannot find as an error about
// __nv_name_map, which says nothing about the spec. A textual check: the name (its last component, for a qualified
// ns::kernel) appears in the template as a whole identifier.
void check_entry_in_template(const Document& document, const YAML::Node& entry_node, const std::string& entry,
                             const std::filesystem::path& template_file) {
  std::string_view last = entry;
  if (std::size_t colons = last.rfind("::"); colons != std::string_view::npos) last.remove_prefix(colons + 2);
  std::string_view qualifier = std::string_view(entry).substr(0, entry.size() - last.size());
  bool well_formed = is_identifier(last);
  for (std::size_t start = 0; well_formed && start < qualifier.size();) {
    std::size_t colons = qualifier.find("::", start);
    std::string_view part = qualifier.substr(start, colons - start);
    well_formed = (part.empty() && start == 0) || is_identifier(part);
    start = colons + 2;
  }
  if (!well_formed) {
    document.fail(entry_node, fmt::format("entry '{}' is not a kernel name: use the name of a __global__ function "
                                          "or function template of the template (template arguments go in "
                                          "template_arguments)",
                                          entry));
  }
  const std::string text = read_whole_file(template_file);
  auto is_word_character = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = text.find(last); at != std::string::npos; at = text.find(last, at + 1)) {
    const bool starts_word = at == 0 || !is_word_character(text[at - 1]);
    const bool ends_word = at + last.size() == text.size() || !is_word_character(text[at + last.size()]);
    if (starts_word && ends_word) return;
  }
  // The names of the template's kernels, for a suggestion: the identifier before the first '(' after __global__.
  std::vector<std::string> kernels;
  for (std::size_t at = text.find("__global__"); at != std::string::npos; at = text.find("__global__", at + 1)) {
    std::size_t parenthesis = text.find('(', at);
    if (parenthesis == std::string::npos) break;
    std::size_t end = parenthesis;
    while (end > at && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
    std::size_t begin = end;
    while (begin > at && is_word_character(text[begin - 1])) --begin;
    if (begin < end) kernels.push_back(text.substr(begin, end - begin));
  }
  document.fail(entry_node, fmt::format("entry '{}' does not appear in the template {} as an identifier{}; entry "
                                        "names the template's kernel ({})",
                                        entry, template_file.string(), did_you_mean(last, kernels),
                                        kernels.empty() ? "the template declares no __global__ function"
                                                        : "kernels found: " + comma_list(kernels)));
}

}  // namespace

KernelSpec read_kernel_spec(const Document& document, const YAML::Node& root, const ProblemOverrides& overrides) {
  Fields fields(document, root, "the kernel spec");
  fields.allow_only({"name", "template", "entry", "template_arguments", "arch_specific", "space", "problem",
                     "arguments", "launch", "compile_options", "verify", "metrics", "baseline", "loader", "stream"});
  KernelSpec spec;
  spec.file = document.file();
  const std::filesystem::path directory = document.file().parent_path();

  YAML::Node name_node = fields.require("name");
  spec.name = read_text(document, name_node, "name");
  check_path_name(spec.name, "kernel name", document.where(name_node));
  YAML::Node entry_node = fields.require("entry");
  spec.entry_point = read_text(document, entry_node, "entry");

  YAML::Node template_node = fields.require("template");
  spec.template_file = (directory / read_text(document, template_node, "template")).lexically_normal();
  std::error_code error;
  if (!std::filesystem::is_regular_file(spec.template_file, error)) {
    document.fail(template_node, fmt::format("template file '{}' {} (paths in a spec are relative to the spec file)",
                                             spec.template_file.string(), why_not_a_file(spec.template_file)));
  }
  check_entry_in_template(document, entry_node, spec.entry_point, spec.template_file);

  if (auto problem = fields.find("problem")) {
    std::vector<std::string> device_names = device_property_names();
    Fields entries(document, *problem, "problem");
    for (const Fields::Entry& entry : entries.entries()) {
      std::string symbol = read_name(document, entry.key_node, "problem symbol");
      if (contains(device_names, symbol)) {
        document.fail(entry.key_node, fmt::format("problem symbol '{}' has the name of a device property; rename it",
                                                  symbol));
      }
      std::int64_t value = read_integer(document, entry.value, fmt::format("problem symbol '{}'", symbol));
      if (value < 0) {
        document.fail(entry.value, fmt::format("problem symbol '{}' is {}; problem symbols are sizes and counts and "
                                               "may not be negative",
                                               symbol, value));
      }
      spec.problem.emplace_back(symbol, value);
    }
  }
  spec.declared_problem = spec.problem;
  apply_overrides(spec, overrides);

  YAML::Node space_node = fields.require("space");
  if (space_node.IsMap()) {
    spec.space = read_space(document, space_node);
  } else {
    std::filesystem::path space_file = (directory / read_text(document, space_node, "space")).lexically_normal();
    if (!std::filesystem::is_regular_file(space_file, error)) {
      document.fail(space_node, fmt::format("space file '{}' {} (paths in a spec are relative to the spec file; or "
                                            "write the space inline as a mapping)",
                                            space_file.string(), why_not_a_file(space_file)));
    }
    spec.space = parse_space_document(read_whole_file(space_file), space_file);
  }
  if (spec.space.name.empty()) spec.space.name = spec.name;

  if (auto arguments = fields.find("template_arguments")) {
    spec.template_arguments = read_expression_list(document, *arguments, "template_arguments");
  }
  if (auto arch_specific = fields.find("arch_specific")) {
    spec.needs_arch_specific = read_bool(document, *arch_specific, "arch_specific");
  }
  for (const YAML::Node& item : read_list(document, fields.require("arguments"), "arguments")) {
    spec.arguments.push_back(read_argument(document, item, spec.arguments.size(), spec.arguments));
  }
  spec.launch = read_launch(document, fields.require("launch"));
  if (auto options = fields.find("compile_options")) {
    for (const YAML::Node& item : read_list(document, *options, "compile_options")) {
      std::string option = read_text(document, item, "a compile option");
      if (std::optional<std::string> problem = compile_option_problem(option)) {
        document.fail(item, fmt::format("compile option '{}' is not allowed: {}; a spec may pass {}", option, *problem,
                                        allowed_compile_options_summary()));
      }
      spec.compile_options.push_back(std::move(option));
    }
  }
  if (auto verify = fields.find("verify")) spec.verification = read_verification(document, *verify, spec.space);
  if (auto baseline = fields.find("baseline")) spec.baseline = read_baseline(document, *baseline, spec.arguments);
  if (spec.verification.reference_is_baseline && !spec.baseline.present()) {
    document.fail(fields.require("verify"), "verify.reference is `baseline`, but the spec has no baseline: section");
  }
  if (auto metrics = fields.find("metrics")) {
    Fields entries(document, *metrics, "metrics");
    entries.allow_only({"flops", "bytes", "math"});
    if (auto flops = entries.find("flops")) spec.metrics.flops = read_expression(document, *flops, "metrics.flops");
    if (auto bytes = entries.find("bytes")) spec.metrics.bytes = read_expression(document, *bytes, "metrics.bytes");
    if (auto math = entries.find("math"))
      spec.metrics.math = read_choice(document, *math, "metrics.math", {"fma", "tf32", "f16", "bf16"});
  }
  if (auto stream = fields.find("stream")) spec.stream = read_stream(document, *stream, spec.arguments);
  if (auto loader = fields.find("loader"); loader && spec.stream.enabled) read_loader_settings(document, *loader, spec.loader);
  if (auto loader = fields.find("loader")) {
    Fields entries(document, *loader, "loader");
    for (const Fields::Entry& entry : entries.entries()) {
      if (!entry.value.IsNull() && !entry.value.IsScalar()) {
        document.fail(entry.value, fmt::format("loader setting '{}' must be a single value, found {}", entry.key,
                                               describe(entry.value)));
      }
      spec.loader.settings[entry.key] = entry.value.IsNull() ? "" : entry.value.Scalar();
    }
  }

  check_names(spec);
  if (spec.stream.enabled) check_stream_names(spec);
  spec.space.streamed = spec.stream.enabled;
  return spec;
}

}  // namespace kernlathe::spec_loading
