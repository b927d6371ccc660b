// describe_kernel (spec -> database description) checked against what `tune` itself compiles and launches: the
// runtime's plan for a configuration must give the same compile request (so the same cubin cache key) and the same
// launch geometry as instantiate() and the spec's expressions.
#include "tuner/cache/kernel_description.h"

#include <gtest/gtest.h>

#include "tuner/compile/instantiate.h"
#include "tuner/runtime/kernel_plan.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

const std::filesystem::path source_directory = KERNLATHE_SOURCE_DIR;

DeviceIdentity identity_of(const DeviceProperties& properties) {
  DeviceIdentity identity{properties.name, properties.arch_major, properties.arch_minor, {}};
  for (auto& [name, value] : device_property_values(properties)) identity.properties.emplace_back(name, value);
  return identity;
}

Constants constants_of(const KernelSpec& spec, const DeviceProperties& device) {
  Constants constants = device_property_values(device);
  for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, Value{value});
  return constants;
}

std::int64_t integer_in(const Expression& expression, const Bindings& bindings, std::int64_t if_empty) {
  if (expression.empty()) return if_empty;
  Expression bound = expression;
  bound.bind(bindings.scope);
  return bound.evaluate_integer(bindings.slots);
}

// For several configurations of a shipped spec, the runtime's plan (from the description alone) matches the tuner.
void expect_plan_matches_tuner(const std::string& spec_name, int configurations) {
  SCOPED_TRACE(spec_name);
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / (spec_name + ".yaml"));
  DeviceProperties device = device_profile("sm_90");
  SpaceEnumerator space(spec.space, constants_of(spec, device));
  KernelDatabase database;
  database.kernel = spec.name;
  database.description = describe_kernel(spec, space);
  TemplateSource source = read_template_source(spec.template_file);
  SelectOptions options;
  const std::uint64_t step = std::max<std::uint64_t>(1, space.valid_count() / static_cast<std::uint64_t>(configurations));
  for (std::uint64_t index = 0; index < space.valid_count(); index += step) {
    Configuration configuration = space.at(index);
    // One entry, for this device and problem: the plan takes it through the exact rung.
    DatabaseEntry entry;
    entry.device_name = device.name;
    entry.arch = "sm_90";
    for (const auto& [symbol, value] : spec.problem) entry.problem[symbol] = value;
    entry.configuration = configuration_values(spec.space, configuration);
    entry.spec_hash = database.description.spec_hash;
    database.entries = {entry};

    KernelPlan plan = plan_kernel(database, source, identity_of(device), {}, options);
    ASSERT_EQ(plan.selection.rung, Rung::exact) << plan.selection.reason;
    CompileRequest expected = instantiate(spec, space, configuration, "sm_90");
    EXPECT_EQ(plan.request.source, expected.source) << to_string(spec.space, configuration);
    EXPECT_EQ(plan.request.name_expression, expected.name_expression);
    EXPECT_EQ(plan.request.options, expected.options);
    EXPECT_EQ(plan.request.arch, expected.arch);
    EXPECT_EQ(plan.request.headers, expected.headers);

    Bindings bindings = space.bindings(configuration);
    for (std::size_t axis = 0; axis < 3; ++axis) {
      EXPECT_EQ(plan.grid[axis], integer_in(spec.launch.grid[axis], bindings, 1));
      EXPECT_EQ(plan.block[axis], integer_in(spec.launch.block[axis], bindings, 1));
    }
    EXPECT_EQ(plan.dynamic_shared_bytes, integer_in(spec.launch.dynamic_shared_bytes, bindings, 0));
    for (std::size_t index_argument = 0; index_argument < spec.arguments.size(); ++index_argument) {
      const Argument& argument = spec.arguments[index_argument];
      const ArgumentPlan& planned = plan.arguments[index_argument];
      if (argument.is_buffer) {
        EXPECT_EQ(planned.count, integer_in(argument.count, bindings, 0)) << argument.name;
      }
      if (argument.tensor_map) {
        for (std::size_t axis = 0; axis < argument.tensor_map->box.size(); ++axis)
          EXPECT_EQ(planned.box[axis], integer_in(argument.tensor_map->box[axis], bindings, 0)) << argument.name;
        ASSERT_EQ(planned.strides.size(), argument.tensor_map->strides.size()) << argument.name;
        for (std::size_t axis = 0; axis < argument.tensor_map->strides.size(); ++axis)
          EXPECT_EQ(planned.strides[axis], integer_in(argument.tensor_map->strides[axis], bindings, 0)) << argument.name;
      }
    }
    // Streamed specs: the loader settings `tune` measured this configuration with, and the items it streamed.
    ASSERT_EQ(plan.stream.has_value(), spec.stream.enabled);
    if (spec.stream.enabled) {
      const LoaderExpressions& loader = spec.loader;
      LoaderSettings expected{integer_in(loader.pinned, bindings, 0) != 0,
                              static_cast<int>(integer_in(loader.workers, bindings, 1)),
                              static_cast<int>(integer_in(loader.prefetch, bindings, 1)),
                              static_cast<int>(integer_in(loader.streams, bindings, 1)),
                              integer_in(loader.batch, bindings, 1),
                              integer_in(loader.chunk_bytes, bindings, 0)};
      EXPECT_EQ(plan.stream->loader, expected) << to_string(spec.space, configuration);
      std::vector<std::int64_t> shape;
      for (const Expression& dimension : spec.stream.item_shape) shape.push_back(integer_in(dimension, bindings, 0));
      EXPECT_EQ(plan.stream->input_item.shape, shape);
      EXPECT_EQ(plan.stream->tuned_items, integer_in(spec.stream.items, bindings, 0));
    }
  }
}

TEST(KernelDescription, RuntimePlanMatchesTheTunerOnShippedSpecs) {
  for (const char* name : {"saxpy", "softmax", "layernorm", "transpose", "conv3x3", "reduce_sum", "gemm_bf16", "gemm_f32",
                           "conv3x3_stream_small", "conv3x3_stream_large", "attention_bf16"})
    expect_plan_matches_tuner(name, 12);
}

const ArgumentDescription& argument_named(const KernelDescription& description, const std::string& name) {
  for (const ArgumentDescription& argument : description.arguments)
    if (argument.name == name) return argument;
  throw std::out_of_range("no argument " + name);
}

const ArgumentPlan& planned_argument(const KernelPlan& plan, const std::string& name) {
  for (const ArgumentPlan& argument : plan.arguments)
    if (argument.description.name == name) return argument;
  throw std::out_of_range("no argument " + name);
}

// Attention on views into Llama-3-8B's fused QKV projection output (issue 33): the tensor maps' strides go from the
// spec into the description, through the database JSON that `tune export` writes, and into the runtime's plan.
TEST(KernelDescription, TensorMapStridesReachTheRuntimeThroughTheDatabaseJson) {
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "attention_bf16.yaml");
  const std::map<std::string, std::int64_t> fused{{"BATCH", 2},  {"SEQ", 1000},          {"HEADS", 32},
                                                  {"KV_HEADS", 8}, {"LAYOUT", 1},         {"Q_ROW_STRIDE", 6144},
                                                  {"KV_ROW_STRIDE", 6144}};
  for (auto& [symbol, value] : spec.problem)
    if (fused.contains(symbol)) value = fused.at(symbol);
  const DeviceProperties device = device_profile("sm_90");
  SpaceEnumerator space(spec.space, constants_of(spec, device));
  KernelDatabase database;
  database.kernel = spec.name;
  database.description = describe_kernel(spec, space);
  const ArgumentDescription& described = argument_named(database.description, "q_map");
  ASSERT_EQ(described.strides.size(), 3u);
  EXPECT_EQ(described.strides[0], "HEAD_DIM");

  const KernelDatabase parsed = parse_database(database_json(database), "attention_bf16.json");
  for (const char* name : {"q_map", "k_map", "v_map"})
    EXPECT_EQ(argument_named(parsed.description, name).strides, argument_named(database.description, name).strides) << name;

  Problem requested(fused.begin(), fused.end());
  KernelPlan plan = plan_kernel(parsed, read_template_source(spec.template_file), identity_of(device), requested);
  EXPECT_EQ(planned_argument(plan, "q_map").dims, (std::vector<std::int64_t>{128, 32, 1000, 2}));
  EXPECT_EQ(planned_argument(plan, "q_map").strides, (std::vector<std::int64_t>{128, 6144, 6144000}));
  EXPECT_EQ(planned_argument(plan, "k_map").dims, (std::vector<std::int64_t>{128, 8, 1000, 2}));
  EXPECT_EQ(planned_argument(plan, "v_map").strides, (std::vector<std::int64_t>{128, 6144, 6144000}));
  // The buffers `tune` allocates for this problem hold every row at its stride.
  EXPECT_EQ(planned_argument(plan, "q").count, 2 * 1000 * 6144);
  EXPECT_EQ(planned_argument(plan, "k").count, 2 * 1000 * 6144);
  EXPECT_EQ(planned_argument(plan, "o").count, 2 * 1000 * 32 * 128);
  // The reference path reads the strides compiled in.
  EXPECT_NE(plan.request.source.find("#define AT_Q_ROW_STRIDE 6144"), std::string::npos);
  EXPECT_NE(plan.request.source.find("#define AT_KV_ROW_STRIDE 6144"), std::string::npos);

  // Packed BHSD at the same shape: the strides of the dense tensor [head_dim, rows, heads, batch].
  Problem bhsd = requested;
  bhsd["LAYOUT"] = bhsd["Q_ROW_STRIDE"] = bhsd["KV_ROW_STRIDE"] = 0;
  KernelPlan packed = plan_kernel(parsed, read_template_source(spec.template_file), identity_of(device), bhsd);
  EXPECT_EQ(planned_argument(packed, "q_map").strides, (std::vector<std::int64_t>{128, 1000 * 128, 32 * 1000 * 128}));
  EXPECT_EQ(planned_argument(packed, "q").count, 2 * 1000 * 32 * 128);
  EXPECT_NE(packed.request.source.find("#define AT_Q_ROW_STRIDE 4096"), std::string::npos);  // 32 heads of 128
}

TEST(KernelDescription, TensorMapsWithoutStridesWriteNoStridesKey) {
  // Descriptions of kernels whose maps are dense stay as they were before strides existed.
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "gemm_bf16.yaml");
  SpaceEnumerator space(spec.space, constants_of(spec, device_profile("sm_90")));
  KernelDatabase database;
  database.kernel = spec.name;
  database.description = describe_kernel(spec, space);
  EXPECT_EQ(argument_named(database.description, "a_map").strides, std::vector<std::string>{});
  EXPECT_EQ(database_json(database).find("\"strides\""), std::string::npos);
}

TEST(KernelDescription, DescribesTypesArgumentsAndTheDefault) {
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "gemm_bf16.yaml");
  SpaceEnumerator space(spec.space, constants_of(spec, device_profile("sm_90")));
  KernelDescription description = describe_kernel(spec, space);
  EXPECT_EQ(description.kernel, "gemm_bf16");
  EXPECT_EQ(description.template_name, "gemm.cu");
  EXPECT_TRUE(description.arch_specific);
  EXPECT_EQ(description.spec_hash, spec_hash(spec));
  EXPECT_EQ(description.template_hash.size(), 16u);
  ASSERT_EQ(description.arguments.size(), spec.arguments.size());
  EXPECT_EQ(description.arguments[0].kind, "scalar");
  EXPECT_EQ(description.arguments[0].value, "M");
  EXPECT_EQ(description.arguments[5].kind, "buffer");
  EXPECT_EQ(description.arguments[5].dtype, "bf16");
  EXPECT_EQ(description.arguments[8].kind, "tensor_map");
  EXPECT_EQ(description.arguments[8].buffer, "a");
  std::optional<Configuration> fallback = configuration_from_values(spec.space, description.default_configuration);
  ASSERT_TRUE(fallback);
  EXPECT_TRUE(space.is_valid(*fallback)) << description.default_origin;
  // Every parameter is typed as the space declares it.
  for (std::size_t index = 0; index < spec.space.parameters.size(); ++index)
    EXPECT_EQ(description.parameters[index].values, spec.space.parameters[index].values);
}

TEST(KernelDescription, HashCoversEveryIncludedHeader) {
  TemplateSource source = read_template_source(source_directory / "templates" / "gemm.cu");
  ASSERT_GE(source.headers.size(), 3u);  // gemm/common.cuh, simt.cuh, mma_sync.cuh, wgmma.cuh and templates/common/
  std::string before = template_hash(source);
  source.headers.back().second += "\n// an edit of an included header\n";
  EXPECT_NE(template_hash(source), before);
}

TEST(KernelDescription, ConfigurationFromValuesRejectsUndeclaredValues) {
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "saxpy.yaml");
  ConfigurationValues values = configuration_values(spec.space, {});
  EXPECT_EQ(configuration_from_values(spec.space, values), std::nullopt);  // nothing given
  SpaceEnumerator space(spec.space, constants_of(spec, device_profile("sm_90")));
  values = configuration_values(spec.space, space.at(0));
  ASSERT_TRUE(configuration_from_values(spec.space, values));
  values.begin()->second = std::int64_t{12345};  // not one of the declared values
  EXPECT_EQ(configuration_from_values(spec.space, values), std::nullopt);
}

TEST(KernelDescription, TheProblemDefaultsAreTheSpecFilesNotTheTunedProblems) {
  // Tuned with --problem B_LAYOUT=1, the description still says B_LAYOUT defaults to 0: an application that leaves
  // B_LAYOUT out passes B stored K x N, and must not be served as if it were N x K.
  const KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "gemm_bf16.yaml", {{"M", 16}, {"B_LAYOUT", 1}});
  SpaceEnumerator space(spec.space, constants_of(spec, device_profile("sm_90")));
  const KernelDescription description = describe_kernel(spec, space);
  std::map<std::string, std::int64_t> defaults;
  for (const auto& symbol : description.problem) defaults[symbol.first] = symbol.second;
  EXPECT_EQ(defaults.at("B_LAYOUT"), 0);
  EXPECT_EQ(defaults.at("M"), 4096);
}

TEST(KernelDescription, ProblemDefaultsAreTheirValuesOverTheSpaceDefaults) {
  // spaces/gemm.yaml's decode default (results/linear_workload/2026-11-29-h200-c9fd0ac-decode-configurations.txt).
  const KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "gemm_bf16.yaml");
  SpaceEnumerator space(spec.space, constants_of(spec, device_profile("sm_90")));
  const KernelDescription description = describe_kernel(spec, space);
  ASSERT_EQ(description.problem_defaults.size(), 2u);
  const ProblemDefaultDescription& decode = description.problem_defaults[0];
  EXPECT_EQ(decode.when, "M <= 128 and INPUT_KIND in [2, 3]");
  ASSERT_EQ(decode.configuration.size(), spec.space.parameters.size());
  EXPECT_EQ(decode.configuration.at("PATH"), Value{std::string("wgmma")});
  EXPECT_EQ(decode.configuration.at("WG_BM"), Value{std::int64_t{64}});
  EXPECT_EQ(decode.configuration.at("WG_BN"), Value{std::int64_t{128}});
  EXPECT_EQ(decode.configuration.at("WG_STAGES"), Value{std::int64_t{8}});
  EXPECT_EQ(decode.configuration.at("WG_CONSUMERS"), Value{std::int64_t{1}});
  EXPECT_EQ(decode.configuration.at("WG_PERSISTENT"), Value{false});
  EXPECT_EQ(decode.configuration.at("WG_PINGPONG"), Value{false});
  EXPECT_EQ(decode.configuration.at("WG_SPLIT_K"), Value{std::int64_t{1}});
  EXPECT_EQ(decode.configuration.at("BLOCKS_PER_SM"), Value{std::int64_t{1}});
  EXPECT_EQ(decode.configuration.at("BM"), Value{std::int64_t{128}});  // not named: the space's default
  EXPECT_EQ(decode.configuration.at("WG_SPREAD"), Value{false});
  // Usable where it applies: a 16-row nn.Linear GEMM on an H200.
  const Problem decode_problem{{"M", 16}, {"N", 6144}, {"K", 4096}, {"B_LAYOUT", 1}};
  EXPECT_EQ(unusable_reason(description, identity_of(named_device_profile("NVIDIA H200")), decode_problem,
                            decode.configuration),
            "");
  // Then any other 16-bit problem: the QKV projection's tuned winner, usable at a ragged nn.Linear problem on an H200
  // where the space's declared defaults (simt) break a constraint, and passed over on sm_80 (no wgmma there).
  const ProblemDefaultDescription& wide = description.problem_defaults[1];
  EXPECT_EQ(wide.when, "INPUT_KIND in [2, 3]");
  EXPECT_EQ(wide.configuration.at("PATH"), Value{std::string("wgmma")});
  EXPECT_EQ(wide.configuration.at("WG_BM"), Value{std::int64_t{128}});
  EXPECT_EQ(wide.configuration.at("WG_PINGPONG"), Value{true});
  EXPECT_EQ(wide.configuration.at("WG_STAGES"), Value{std::int64_t{5}});
  const Problem ragged{{"M", 1000}, {"N", 4000}, {"K", 4096}, {"B_LAYOUT", 1}};
  EXPECT_EQ(unusable_reason(description, identity_of(named_device_profile("NVIDIA H200")), ragged, wide.configuration),
            "");
  EXPECT_NE(unusable_reason(description, identity_of(device_profile("sm_80")), ragged, wide.configuration), "");
  // gemm_f32 carries it too, and its condition never holds there (INPUT_KIND 0).
  const KernelSpec f32 = load_kernel_spec(source_directory / "kernels" / "gemm_f32.yaml");
  EXPECT_EQ(describe_kernel(f32, SpaceEnumerator(f32.space, constants_of(f32, device_profile("sm_90")))).problem_defaults,
            description.problem_defaults);
}

}  // namespace
}  // namespace kernlathe
