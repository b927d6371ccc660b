// The runtime library on a real GPU: every shipped kernel, launched through kernlathe::Runtime with its stored
// best configuration, verifies against the spec's reference (the reference configuration, also launched through the
// runtime, or cuBLAS for GEMM); an arch missing from the database falls back to the default configuration and still
// verifies; another device of the same arch finds the entry through the arch rung and says so.
// Skips, saying why, where there is no driver or device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "gpu_test_support.h"
#include "kernlathe/runtime.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/driver/cuda_driver.h"
#include "tuner/gpu/cublas.h"
#include "tuner/gpu/device.h"
#include "tuner/run/element_values.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

const std::filesystem::path source_directory = from_environment("KERNLATHE_SOURCE_DIR", KERNLATHE_SOURCE_DIR);

struct DeviceMemory {
  CUdeviceptr pointer = 0;
  std::size_t bytes = 0;
  explicit DeviceMemory(std::size_t size) : bytes(size) { KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuMemAlloc(&pointer, std::max<std::size_t>(size, 1))); }
  ~DeviceMemory() { KERNLATHE_CUDA_CHECK_NOTHROW(gpu::cuda_driver().cuMemFree(pointer)); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void upload(const std::vector<std::byte>& data) const { KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuMemcpyHtoD(pointer, data.data(), data.size())); }
  std::vector<std::byte> download() const {
    std::vector<std::byte> data(bytes);
    KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuMemcpyDtoH(data.data(), pointer, bytes));
    return data;
  }
};

// A temporary directory holding one database file.
struct TemporaryDatabase {
  std::filesystem::path directory;
  TemporaryDatabase(const KernelDatabase& database, const std::string& label) {
    directory = std::filesystem::temp_directory_path() / fmt::format("kernlathe-runtime-test-{}-{}-{}", ::getpid(), database.kernel, label);
    std::filesystem::create_directories(directory);
    std::ofstream(directory / (database.kernel + ".json")) << database_json(database);
  }
  ~TemporaryDatabase() { std::filesystem::remove_all(directory); }
};

class RuntimeOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      properties_ = gpu::query_device(0);
    } catch (const NoGpuError& error) {
      GTEST_SKIP() << "no usable GPU: " << error.what();
    }
    cubin_cache_ = std::filesystem::temp_directory_path() / fmt::format("kernlathe-runtime-test-cubins-{}", ::getpid());
    // As an application that uses the CUDA runtime holds the primary context, the test holds it across Runtimes.
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    KERNLATHE_CUDA_CHECK(cuda.cuDeviceGet(&device_, 0));
    KERNLATHE_CUDA_CHECK(cuda.cuDevicePrimaryCtxRetain(&context_, device_));
    KERNLATHE_CUDA_CHECK(cuda.cuCtxSetCurrent(context_));
  }
  void TearDown() override {
    std::filesystem::remove_all(cubin_cache_);
    if (context_ != nullptr) KERNLATHE_CUDA_CHECK_NOTHROW(gpu::cuda_driver().cuDevicePrimaryCtxRelease(device_));
  }

  // Attention (issue 33) at one problem of 8 query heads and a batch of 2, one wgmma configuration (assignment on the
  // space's defaults, AT_KV_SHARE share) launched through the runtime and compared element by element with the
  // reference path's output on the same inputs.
  struct AttentionProblem {
    std::int64_t sequence, kv_heads, layout, causal, cached, head_dim, share;
  };
  void verify_attention(const char* name, const AttentionProblem& problem,
                        const std::vector<std::pair<std::string, Value>>& assignment) {
    KernelSpec spec = load_kernel_spec(source_directory / "kernels" / (std::string(name) + ".yaml"));
    for (auto& [symbol, value] : spec.problem) {
      if (symbol == "BATCH") value = 2;
      if (symbol == "HEADS") value = 8;
      if (symbol == "KV_HEADS") value = problem.kv_heads;
      if (symbol == "SEQ") value = problem.sequence;
      if (symbol == "CACHED") value = problem.cached;
      if (symbol == "LAYOUT") value = problem.layout;
      if (symbol == "CAUSAL") value = problem.causal;
      if (symbol == "HEAD_DIM") value = problem.head_dim;
    }
    SpaceEnumerator space(spec.space, constants(spec));
    ConfigurationValues values = configuration_values(spec.space, space.default_configuration());
    values["PATH"] = std::string("wgmma");
    values["AT_KV_SHARE"] = problem.share;
    for (const auto& [parameter, value] : assignment) values[parameter] = value;
    std::optional<Configuration> configuration = configuration_from_values(spec.space, values);
    ASSERT_TRUE(configuration.has_value()) << name;
    SCOPED_TRACE(fmt::format("{} SEQ={} CACHED={} HEADS=8 KV_HEADS={} LAYOUT={} CAUSAL={} HEAD_DIM={} {}", name,
                             problem.sequence, problem.cached, problem.kv_heads, problem.layout, problem.causal,
                             problem.head_dim, to_string(spec.space, *configuration)));
    ASSERT_TRUE(space.is_valid(*configuration));
    auto got = run_through_runtime(spec, database_with(spec, space, *configuration, properties_.name, properties_.arch_name()));
    Configuration reference = space.default_configuration();
    for (const auto& [parameter, value] : spec.verification.reference)
      for (std::size_t at = 0; at < spec.space.parameters.size(); ++at)
        if (spec.space.parameters[at].name == parameter) reference[at] = value;
    auto expected = run_through_runtime(spec, database_with(spec, space, reference, properties_.name, properties_.arch_name()));
    const double worst = expect_outputs_match(spec, got, expected);
    std::printf("[ runtime  ] %s SEQ=%lld CACHED=%lld KV_HEADS=%lld LAYOUT=%lld CAUSAL=%lld HEAD_DIM=%lld %s verified, "
                "largest relative error %.2e\n",
                name, static_cast<long long>(problem.sequence), static_cast<long long>(problem.cached),
                static_cast<long long>(problem.kv_heads), static_cast<long long>(problem.layout),
                static_cast<long long>(problem.causal), static_cast<long long>(problem.head_dim),
                to_string(spec.space, *configuration).c_str(), worst);
  }

  Constants constants(const KernelSpec& spec) const {
    Constants values = device_property_values(properties_);
    for (const auto& [symbol, value] : spec.problem) values.emplace_back(symbol, Value{value});
    return values;
  }

  // The configuration stored in results/best for this arch and the spec's default problem when it is still a valid
  // configuration of the space (entries may predate the current space), else one from the middle of the space.
  Configuration stored_or_middle(const KernelSpec& spec, const SpaceEnumerator& space) const {
    try {
      KernelDatabase stored = read_database(source_directory / "results" / "best" / (spec.name + ".json"));
      Problem problem(spec.problem.begin(), spec.problem.end());
      for (const DatabaseEntry& entry : stored.entries) {
        if (entry.arch != properties_.arch_name() || entry.problem != problem) continue;
        if (auto configuration = configuration_from_values(spec.space, entry.configuration); configuration && space.is_valid(*configuration))
          return *configuration;
      }
    } catch (const std::exception&) {
    }
    return space.at(space.valid_count() / 2);
  }

  KernelDatabase database_with(const KernelSpec& spec, const SpaceEnumerator& space, const Configuration& configuration,
                               const std::string& device_name, const std::string& arch) const {
    KernelDatabase database;
    database.kernel = spec.name;
    database.description = describe_kernel(spec, space);
    DatabaseEntry entry;
    entry.device_name = device_name;
    entry.arch = arch;
    entry.problem = Problem(spec.problem.begin(), spec.problem.end());
    entry.configuration = configuration_values(spec.space, configuration);
    entry.spec_hash = database.description.spec_hash;
    entry.time = {1.0, 0, 1};
    database.entries = {entry};
    return database;
  }

  // Launches the kernel through a Runtime over database, on buffers filled as the spec says (outputs poisoned),
  // and returns every buffer's contents afterwards, by argument index.
  std::map<std::size_t, std::vector<std::byte>> run_through_runtime(const KernelSpec& spec, const KernelDatabase& database,
                                                                   Selection* selection = nullptr) {
    TemporaryDatabase files(database, std::to_string(counter_++));
    RuntimeOptions options;
    options.databases = {files.directory};
    options.sources = spec.template_file.parent_path();
    options.cubin_cache = cubin_cache_;
    Runtime runtime(options);
    // The problem is passed whole: the database's description keeps the spec file's defaults, not this test's sizes.
    Problem problem;
    for (const auto& [symbol, value] : spec.problem) problem[symbol] = value;
    const Kernel& kernel = runtime.kernel(spec.name, problem);
    if (selection) *selection = kernel.selection();
    std::map<std::size_t, std::unique_ptr<DeviceMemory>> memory;
    Arguments arguments;
    Bindings bindings = SpaceEnumerator(spec.space, constants(spec)).bindings(*configuration_from_values(spec.space, kernel.selection().configuration));
    for (std::size_t index = 0; index < spec.arguments.size(); ++index) {
      const Argument& argument = spec.arguments[index];
      if (!argument.is_buffer || argument.scratch) continue;
      Expression count = argument.count;
      count.bind(bindings.scope);
      std::int64_t elements = count.evaluate_integer(bindings.slots);
      auto buffer = std::make_unique<DeviceMemory>(static_cast<std::size_t>(elements) * dtype_size(argument.dtype));
      if (argument.role == Role::out) {
        std::vector<std::byte> poison(buffer->bytes, std::byte{poison_byte});
        buffer->upload(poison);
      } else {
        buffer->upload(initial_contents(argument.dtype, elements, argument.init));
      }
      arguments.set(argument.name, reinterpret_cast<const void*>(buffer->pointer));
      memory[index] = std::move(buffer);
    }
    kernel.launch(arguments);
    KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuCtxSynchronize());
    std::map<std::size_t, std::vector<std::byte>> results;
    for (auto& [index, buffer] : memory) results[index] = buffer->download();
    // Index 1000: cuBLAS's C on the same inputs, for every spec with a GEMM baseline (a fused spec's test adds its
    // epilogue to it).
    if (spec.baseline.present()) results[1000] = cublas_reference(spec, bindings, memory);
    return results;
  }

  // GEMM's reference: cuBLAS on the same inputs, into a separate C.
  std::vector<std::byte> cublas_reference(const KernelSpec& spec, const Bindings& bindings,
                                          const std::map<std::size_t, std::unique_ptr<DeviceMemory>>& memory) {
    auto index_of = [&](const std::string& name) {
      for (std::size_t index = 0; index < spec.arguments.size(); ++index)
        if (spec.arguments[index].name == name) return index;
      return std::size_t{0};
    };
    auto integer = [&](Expression expression) {
      expression.bind(bindings.scope);
      return expression.evaluate_integer(bindings.slots);
    };
    const Baseline& baseline = spec.baseline;
    const DeviceMemory& c = *memory.at(index_of(baseline.c));
    DeviceMemory reference(c.bytes);
    gpu::GemmProblem problem;
    problem.compute = baseline.compute;
    problem.input = spec.arguments[index_of(baseline.a)].dtype;
    problem.output = spec.arguments[index_of(baseline.c)].dtype;
    problem.m = integer(baseline.m), problem.n = integer(baseline.n), problem.k = integer(baseline.k);
    problem.transpose_b = !baseline.transpose_b.empty() && integer(baseline.transpose_b) != 0;
    problem.alpha = 1, problem.beta = 0;
    problem.a = memory.at(index_of(baseline.a))->pointer;
    problem.b = memory.at(index_of(baseline.b))->pointer;
    problem.c = reference.pointer;
    gpu::Cublas cublas(nullptr);
    cublas.gemm(problem);
    KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuCtxSynchronize());
    return reference.download();
  }

  // Every output of `got` within the spec's tolerance of `expected`; returns the largest relative error seen.
  double expect_outputs_match(const KernelSpec& spec, const std::map<std::size_t, std::vector<std::byte>>& got,
                              const std::map<std::size_t, std::vector<std::byte>>& expected) {
    double worst = 0;
    for (std::size_t index = 0; index < spec.arguments.size(); ++index) {
      const Argument& argument = spec.arguments[index];
      if (!argument.is_buffer || argument.scratch || argument.role == Role::in) continue;
      const std::vector<std::byte>& mine = got.at(index);
      const std::vector<std::byte>& theirs = spec.verification.reference_is_baseline ? expected.at(1000) : expected.at(index);
      Tolerance tolerance = spec.verification.tolerance_for(argument.dtype);
      const std::size_t size = dtype_size(argument.dtype);
      std::size_t failures = 0;
      for (std::size_t element = 0; element < mine.size() / size; ++element) {
        double a = load_element(argument.dtype, mine.data() + element * size);
        double b = load_element(argument.dtype, theirs.data() + element * size);
        double error = std::abs(a - b);
        if (!(error <= tolerance.absolute + tolerance.relative * std::abs(b))) {
          if (failures++ < 3) ADD_FAILURE() << spec.name << " " << argument.name << "[" << element << "] = " << a << ", expected " << b;
        }
        if (std::abs(b) > 1e-3) worst = std::max(worst, error / std::abs(b));
      }
      EXPECT_EQ(failures, 0u) << spec.name << " " << argument.name;
    }
    return worst;
  }

  // The expected outputs of a bias + residual GEMM spec, computed on the host in double precision from the inputs
  // the kernel read: C[row][column] = sum_k A[row][k] B(k, column) + bias[column] + residual[row][column], B stored
  // K x N or, with B_LAYOUT 1, N x K. (cuBLAS's C, already rounded to bf16, plus the addends would round twice: up
  // to half an ulp of the product where bias and residual cancel it, more than the tolerance near zero.)
  std::map<std::size_t, std::vector<std::byte>> with_bias_and_residual(const KernelSpec& spec,
                                                                     std::map<std::size_t, std::vector<std::byte>> got) {
    auto index_of = [&](const std::string& name) {
      for (std::size_t index = 0; index < spec.arguments.size(); ++index)
        if (spec.arguments[index].name == name) return index;
      ADD_FAILURE() << spec.name << " has no argument " << name;
      return std::size_t{0};
    };
    std::map<std::string, std::int64_t> problem(spec.problem.begin(), spec.problem.end());
    const std::int64_t m = problem.at("M"), n = problem.at("N"), k = problem.at("K");
    const bool b_is_n_by_k = problem.at("B_LAYOUT") == 1;
    const std::size_t c = index_of("c");
    const Dtype dtype = spec.arguments[c].dtype;
    const std::size_t size = dtype_size(dtype);
    auto element = [&](const char* name, std::int64_t index) {
      return load_element(dtype, got.at(index_of(name)).data() + static_cast<std::size_t>(index) * size);
    };
    std::vector<std::byte> expected(static_cast<std::size_t>(m * n) * size);
    for (std::int64_t row = 0; row < m; ++row) {
      for (std::int64_t column = 0; column < n; ++column) {
        double sum = element("bias", column) + element("residual", row * n + column);
        for (std::int64_t depth = 0; depth < k; ++depth)
          sum += element("a", row * k + depth) * element("b", b_is_n_by_k ? column * k + depth : depth * n + column);
        store_element(dtype, sum, expected.data() + static_cast<std::size_t>(row * n + column) * size);
      }
    }
    got[c] = std::move(expected);
    return got;
  }

  void verify_kernel(const std::string& name) {
    SCOPED_TRACE(name);
    KernelSpec spec = load_kernel_spec(source_directory / "kernels" / (name + ".yaml"));
    SpaceEnumerator space(spec.space, constants(spec));
    Configuration tuned = stored_or_middle(spec, space);
    Selection selection;
    auto got = run_through_runtime(spec, database_with(spec, space, tuned, properties_.name, properties_.arch_name()), &selection);
    EXPECT_EQ(selection.rung, Rung::exact) << selection.reason;
    std::map<std::size_t, std::vector<std::byte>> expected = got;
    if (!spec.verification.reference_is_baseline) {
      Configuration reference = space.default_configuration();
      for (const auto& [parameter, value] : spec.verification.reference)
        for (std::size_t index = 0; index < spec.space.parameters.size(); ++index)
          if (spec.space.parameters[index].name == parameter) reference[index] = value;
      expected = run_through_runtime(spec, database_with(spec, space, reference, properties_.name, properties_.arch_name()));
    }
    double worst = expect_outputs_match(spec, got, expected);
    std::printf("[ runtime  ] %-16s %s verified, largest relative error %.2e\n", name.c_str(),
                to_string(spec.space, tuned).c_str(), worst);
  }

  DeviceProperties properties_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::filesystem::path cubin_cache_;
  int counter_ = 0;
};

TEST_F(RuntimeOnDevice, EveryShippedKernelVerifiesThroughTheRuntime) {
  for (const char* name : {"saxpy", "vector_add", "reduce_sum", "reduce_sum_bf16", "softmax", "softmax_bf16", "layernorm",
                           "layernorm_bf16", "rmsnorm", "rmsnorm_bf16", "transpose", "conv3x3", "gemm_f32", "gemm_tf32",
                           "gemm_f16", "gemm_bf16", "gemm_decode_bf16", "attention_bf16", "attention_f16"}) {
    verify_kernel(name);
  }
}

// GEMM at shapes no tile divides, from one row to 16384, in both layouts of B (issue 30): wgmma configurations of
// every kind (64- to 256-row and -column tiles, one and two consumers, ping-pong, clusters, persistent or not,
// split-K), each launched through the runtime with an exact entry at the shape and checked element by element against
// cuBLAS on the same inputs, or, for the fused bias + residual spec, against a double-precision host product (C is
// poisoned first, so an element never written fails). Where the space refuses a configuration at a shape (tf32 takes
// B stored K x N only, split-K few rows only) it is skipped, and the test counts what it verified.
TEST_F(RuntimeOnDevice, GemmVerifiesAtRaggedShapesInBothLayouts) {
  if (properties_.arch_major != 9) GTEST_SKIP() << "the wgmma path needs sm_90 (this device is " << properties_.arch_name() << ")";
  struct Shape {
    std::int64_t m, n, k, layout;
  };
  // K a multiple of 8 (TMA's 16-byte row pitch for 16-bit inputs); N too where B is stored K x N (layout 0).
  const std::vector<Shape> shapes = {{1, 8, 8, 0},         {1, 3, 8, 1},          {16, 200, 72, 1},   {100, 136, 4104, 0},
                                     {1000, 4000, 4096, 1}, {1000, 4000, 4096, 0}, {300, 1001, 520, 1}, {16384, 1024, 256, 1},
                                     {256, 520, 4096, 1}};  // two tile rows: split-K with a cluster of two
  using Assignment = std::vector<std::pair<std::string, Value>>;
  const std::vector<Assignment> configurations = {
      {{"WG_BM", std::int64_t{128}}, {"WG_BN", std::int64_t{256}}, {"WG_STAGES", std::int64_t{4}}, {"WG_CONSUMERS", std::int64_t{2}}},
      {{"WG_BM", std::int64_t{128}}, {"WG_BN", std::int64_t{128}}, {"WG_STAGES", std::int64_t{5}}, {"WG_CONSUMERS", std::int64_t{2}},
       {"WG_PINGPONG", true}},
      {{"WG_BM", std::int64_t{64}}, {"WG_BN", std::int64_t{64}}, {"WG_STAGES", std::int64_t{6}}, {"WG_CONSUMERS", std::int64_t{1}},
       {"WG_PERSISTENT", false}},
      {{"WG_BM", std::int64_t{128}}, {"WG_BN", std::int64_t{256}}, {"WG_STAGES", std::int64_t{3}}, {"WG_CONSUMERS", std::int64_t{2}},
       {"WG_CLUSTER", std::int64_t{2}}},
      {{"WG_BM", std::int64_t{256}}, {"WG_BN", std::int64_t{128}}, {"WG_STAGES", std::int64_t{3}}, {"WG_CONSUMERS", std::int64_t{2}}},
      // C staged in shared memory and copied out by the TMA unit (WG_STORE bulk): cooperative and ping-pong; where n
      // is not a multiple of 8 (3, 1001 columns) the kernel stores directly, and tf32 holds it at direct.
      {{"WG_BM", std::int64_t{128}}, {"WG_BN", std::int64_t{256}}, {"WG_STAGES", std::int64_t{3}}, {"WG_CONSUMERS", std::int64_t{2}},
       {"WG_STORE", std::string("bulk")}},
      {{"WG_BM", std::int64_t{128}}, {"WG_BN", std::int64_t{128}}, {"WG_STAGES", std::int64_t{4}}, {"WG_CONSUMERS", std::int64_t{2}},
       {"WG_PINGPONG", true}, {"WG_CLUSTER", std::int64_t{2}}, {"WG_STORE", std::string("bulk")}},
      // Split-K (M <= 256 only): each tile's K blocks shared by 4 or 8 work items (more than some shapes have).
      {{"WG_BM", std::int64_t{64}}, {"WG_BN", std::int64_t{64}}, {"WG_STAGES", std::int64_t{6}}, {"WG_CONSUMERS", std::int64_t{1}},
       {"WG_SPLIT_K", std::int64_t{4}}},
      {{"WG_BM", std::int64_t{128}}, {"WG_BN", std::int64_t{128}}, {"WG_STAGES", std::int64_t{4}}, {"WG_CONSUMERS", std::int64_t{2}},
       {"WG_SPLIT_K", std::int64_t{8}}},
  };
  int verified = 0;
  for (const char* name : {"gemm_bf16", "gemm_f16", "gemm_tf32", "gemm_bf16_bias_residual"}) {
    for (const Shape& shape : shapes) {
      if (std::string(name) == "gemm_tf32" && shape.layout == 1) continue;  // the space has nothing there (tf32 takes K x N)
      KernelSpec spec = load_kernel_spec(source_directory / "kernels" / (std::string(name) + ".yaml"));
      // The fused spec's reference is computed on the host: the small shapes only.
      if (!spec.verification.reference_is_baseline && shape.m * shape.n * shape.k > 200'000'000) continue;
      for (auto& [symbol, value] : spec.problem) {
        if (symbol == "M") value = shape.m;
        if (symbol == "N") value = shape.n;
        if (symbol == "K") value = shape.k;
        if (symbol == "B_LAYOUT") value = shape.layout;
      }
      SpaceEnumerator space(spec.space, constants(spec));
      for (const Assignment& assignment : configurations) {
        ConfigurationValues values = configuration_values(spec.space, space.default_configuration());
        values["PATH"] = std::string("wgmma");
        values["BLOCKS_PER_SM"] = std::int64_t{1};
        for (const auto& [parameter, value] : assignment) values[parameter] = value;
        std::optional<Configuration> configuration = configuration_from_values(spec.space, values);
        ASSERT_TRUE(configuration.has_value()) << name;
        if (!space.is_valid(*configuration)) continue;
        SCOPED_TRACE(fmt::format("{} M={} N={} K={} B_LAYOUT={} {}", name, shape.m, shape.n, shape.k, shape.layout,
                                 to_string(spec.space, *configuration)));
        auto got = run_through_runtime(spec, database_with(spec, space, *configuration, properties_.name, properties_.arch_name()));
        expect_outputs_match(spec, got, spec.verification.reference_is_baseline ? got : with_bias_and_residual(spec, got));
        ++verified;
      }
    }
  }
  std::printf("[ runtime  ] GEMM at ragged shapes, both layouts: %d kernels verified\n", verified);
  // 3 specs x 8 shapes and the fused spec x 5 small shapes, 7 configurations each (and split-K's two at few rows),
  // less what the space refuses (tf32 takes B stored K x N only, a cluster of two needs N's 128-byte boxes to split
  // evenly).
  EXPECT_GE(verified, 80);
}

// The decode GEMM (kernels/gemm_decode_bf16.yaml, issue 30) at rows from 1 to 64 and columns and K that no block
// or chunk divides: a spread of its configurations (every column width, warp count and chunk count appears), each
// launched through the runtime with an exact entry and checked element by element against cuBLAS on the same
// inputs (C poisoned first).
TEST_F(RuntimeOnDevice, GemmDecodeVerifiesAtRaggedShapes) {
  if (properties_.arch_major < 8) GTEST_SKIP() << "mma.sync with bf16 needs sm_80 (this device is " << properties_.arch_name() << ")";
  struct Shape {
    std::int64_t m, n, k;
  };
  const std::vector<Shape> shapes = {{1, 4000, 4104}, {7, 200, 72}, {16, 6144, 4096}, {33, 1001, 520}, {64, 4096, 14336}};
  int verified = 0;
  for (const Shape& shape : shapes) {
    KernelSpec spec = load_kernel_spec(source_directory / "kernels/gemm_decode_bf16.yaml");
    for (auto& [symbol, value] : spec.problem) {
      if (symbol == "M") value = shape.m;
      if (symbol == "N") value = shape.n;
      if (symbol == "K") value = shape.k;
    }
    SpaceEnumerator space(spec.space, constants(spec));
    for (std::uint64_t index = verified % 5; index < space.valid_count(); index += 9) {
      const Configuration configuration = space.at(index);
      SCOPED_TRACE(fmt::format("gemm_decode_bf16 M={} N={} K={} {}", shape.m, shape.n, shape.k,
                               to_string(spec.space, configuration)));
      auto got = run_through_runtime(spec, database_with(spec, space, configuration, properties_.name, properties_.arch_name()));
      expect_outputs_match(spec, got, got);
      ++verified;
    }
  }
  std::printf("[ runtime  ] decode GEMM at ragged shapes: %d kernels verified\n", verified);
  EXPECT_GE(verified, 40);
}

// Attention as models run it (issue 33): sequences 1, 63, 1000 and 4096 + 77 (no tile divides them), each with
// grouped-query ratios 1, 4 and 8 (8 query heads over 8, 2 and 1 key/value heads), each sequence and each ratio in
// both layouts (BHSD and BSHD), causal and not, and a prefill of 63 and 1000 queries against 1000 cached keys. Each
// problem launches one wgmma configuration through the runtime (the four kinds in turn: two consumers taking turns
// over 128-key tiles, three persistent consumers taking turns over 64-key tiles in "tiles" order, where causal
// masking has the first consumers skip up to two tiles, one consumer with the products one after another, two
// persistent consumers over 64-key tiles) and compares every output element with the
// reference path's (fp32 on CUDA cores) on the same inputs; outputs are poisoned first, so a row never stored fails.
// Three problems at head dimension 96 (the wgmma path computes 128 columns, the last 32 TMA's zeros, and stores 96).
TEST_F(RuntimeOnDevice, AttentionVerifiesAtRaggedSequencesGroupedHeadsAndBothLayouts) {
  if (properties_.arch_major != 9) GTEST_SKIP() << "the wgmma path needs sm_90 (this device is " << properties_.arch_name() << ")";
  struct Problem {
    std::int64_t sequence, kv_heads, layout, causal, cached, head_dim = 128;
  };
  std::vector<Problem> problems;
  const std::int64_t sequences[] = {1, 63, 1000, 4096 + 77};
  const std::int64_t kv_heads[] = {8, 2, 1};
  for (std::size_t s = 0; s < 4; ++s)
    for (std::size_t g = 0; g < 3; ++g)  // every sequence and every ratio in both layouts, causal and not
      problems.push_back({sequences[s], kv_heads[g], static_cast<std::int64_t>((s / 2 + g) % 2), static_cast<std::int64_t>(g % 2 == s % 2), 0});
  problems.push_back({63, 2, 1, 1, 1000});
  problems.push_back({1000, 8, 0, 1, 1000});
  problems.push_back({1000, 2, 1, 1, 0, 96});
  problems.push_back({63, 8, 0, 0, 0, 96});
  problems.push_back({4096 + 77, 1, 1, 1, 0, 96});
  using Assignment = std::vector<std::pair<std::string, Value>>;
  const std::vector<Assignment> configurations = {
      {{"AT_CONSUMERS", std::int64_t{2}}, {"AT_BN", std::int64_t{128}}, {"AT_PINGPONG", true}, {"AT_PERSISTENT", false}},
      {{"AT_CONSUMERS", std::int64_t{3}}, {"AT_BN", std::int64_t{64}}, {"AT_STAGES", std::int64_t{3}}, {"AT_PINGPONG", true},
       {"AT_PERSISTENT", true}, {"AT_ORDER", std::string("tiles")}},
      {{"AT_CONSUMERS", std::int64_t{1}}, {"AT_BN", std::int64_t{128}}, {"AT_OVERLAP", false}, {"AT_PINGPONG", false}},
      {{"AT_CONSUMERS", std::int64_t{2}}, {"AT_BN", std::int64_t{64}}, {"AT_PERSISTENT", true}, {"AT_STAGES", std::int64_t{3}}},
  };
  int verified = 0;
  for (std::size_t index = 0; index < problems.size(); ++index) {
    const Problem& problem = problems[index];
    const char* name = index % 2 == 0 ? "attention_bf16" : "attention_f16";
    verify_attention(name, {problem.sequence, problem.kv_heads, problem.layout, problem.causal, problem.cached,
                            problem.head_dim, 1},
                     configurations[index % configurations.size()]);
    if (HasFatalFailure()) return;
    ++verified;
  }
  EXPECT_EQ(verified, 17);
}

// Grouped-query heads in thread-block clusters (AT_KV_SHARE): clusters of 2 and 4 blocks, each K / V tile loaded once
// per cluster and multicast, at grouped-query ratios 4 and 8 (8 query heads over 2 and 1 key/value heads), sequences
// 1, 63, 1000 and 4096 + 77, each (cluster size, ratio) causal and not and in both layouts; then clusters of 8 (the
// whole group of 8) with cached keys, and head dimensions 64 and 96. The kinds take turns: two consumers taking turns
// over 128-key tiles, one block per query tile ("heads" order: the cluster spans a query tile's heads); three
// persistent consumers taking turns over 64-key tiles in "tiles" order; one consumer with the products in turn in
// "tiles" order; two persistent consumers over 64-key tiles in "heads" order. Every output element is compared with
// the reference path's (fp32 on CUDA cores) on the same inputs, outputs poisoned first.
TEST_F(RuntimeOnDevice, AttentionWithKvSharingClustersVerifies) {
  if (properties_.arch_major != 9) GTEST_SKIP() << "the wgmma path needs sm_90 (this device is " << properties_.arch_name() << ")";
  struct Problem {
    std::int64_t sequence, kv_heads, layout, causal, share, cached = 0, head_dim = 128;
  };
  std::vector<Problem> problems;
  const std::int64_t sequences[] = {1, 63, 1000, 4096 + 77};
  const std::int64_t kv_heads[] = {2, 1};  // ratios 4 and 8
  for (std::size_t s = 0; s < 4; ++s)
    for (std::size_t g = 0; g < 2; ++g)  // each (share, ratio) causal and not, in both layouts
      problems.push_back({sequences[s], kv_heads[g], static_cast<std::int64_t>((s / 2 + g) % 2),
                          static_cast<std::int64_t>(s / 2), (s + g) % 2 == 0 ? 2 : 4});
  problems.push_back({63, 1, 1, 1, 8, 1000});
  problems.push_back({1000, 1, 0, 0, 8, 0, 64});
  problems.push_back({1000, 2, 1, 1, 4, 3000, 96});
  problems.push_back({4096 + 77, 1, 0, 1, 8, 0, 64});
  using Assignment = std::vector<std::pair<std::string, Value>>;
  const std::vector<Assignment> configurations = {
      {{"AT_CONSUMERS", std::int64_t{2}}, {"AT_BN", std::int64_t{128}}, {"AT_PINGPONG", true}, {"AT_PERSISTENT", false}},
      {{"AT_CONSUMERS", std::int64_t{3}}, {"AT_BN", std::int64_t{64}}, {"AT_STAGES", std::int64_t{3}}, {"AT_PINGPONG", true},
       {"AT_PERSISTENT", true}, {"AT_ORDER", std::string("tiles")}},
      {{"AT_CONSUMERS", std::int64_t{1}}, {"AT_BN", std::int64_t{128}}, {"AT_OVERLAP", false}, {"AT_PINGPONG", false},
       {"AT_ORDER", std::string("tiles")}},
      {{"AT_CONSUMERS", std::int64_t{2}}, {"AT_BN", std::int64_t{64}}, {"AT_PERSISTENT", true}, {"AT_STAGES", std::int64_t{3}}},
  };
  int verified = 0;
  for (std::size_t index = 0; index < problems.size(); ++index) {
    const Problem& problem = problems[index];
    const char* name = index % 2 == 0 ? "attention_bf16" : "attention_f16";
    verify_attention(name, {problem.sequence, problem.kv_heads, problem.layout, problem.causal, problem.cached,
                            problem.head_dim, problem.share},
                     configurations[index % configurations.size()]);
    if (HasFatalFailure()) return;
    ++verified;
  }
  EXPECT_EQ(verified, 12);
}

// q, k and v as views into one fused QKV projection output (issue 33): Llama-3-8B's heads (32 query, 8 key/value, 128
// elements each: token rows of 6144 elements, q at element 0, k at 4096, v at 5120), BSHD, at ragged sequences 1000
// and 63. Each configuration (a wgmma one and the reference path) runs on the packed tensors through the runtime and
// then on the views of one fused buffer holding the same values, rows given by Q_ROW_STRIDE and KV_ROW_STRIDE: the
// outputs must be the same bits, and the wgmma output must match the packed reference within the spec's tolerance.
TEST_F(RuntimeOnDevice, AttentionOnViewsIntoAFusedQkvBufferMatchesThePackedRun) {
  if (properties_.arch_major != 9) GTEST_SKIP() << "the wgmma path needs sm_90 (this device is " << properties_.arch_name() << ")";
  constexpr std::int64_t batch = 2, heads = 32, kv_heads = 8, head_dim = 128, row = (heads + 2 * kv_heads) * head_dim;
  int compared = 0;
  for (const std::int64_t sequence : {std::int64_t{1000}, std::int64_t{63}}) {
    for (const std::int64_t causal : {std::int64_t{0}, std::int64_t{1}}) {
      KernelSpec packed_spec = load_kernel_spec(source_directory / "kernels" / "attention_bf16.yaml");
      for (auto& [symbol, value] : packed_spec.problem) {
        if (symbol == "BATCH") value = batch;
        if (symbol == "HEADS") value = heads;
        if (symbol == "KV_HEADS") value = kv_heads;
        if (symbol == "HEAD_DIM") value = head_dim;
        if (symbol == "SEQ") value = sequence;
        if (symbol == "LAYOUT") value = 1;
        if (symbol == "CAUSAL") value = causal;
      }
      KernelSpec fused_spec = packed_spec;
      for (auto& [symbol, value] : fused_spec.problem)
        if (symbol == "Q_ROW_STRIDE" || symbol == "KV_ROW_STRIDE") value = row;
      std::size_t q_index = 0, k_index = 0, v_index = 0, o_index = 0;
      for (std::size_t index = 0; index < packed_spec.arguments.size(); ++index) {
        const std::string& name = packed_spec.arguments[index].name;
        if (name == "q") q_index = index;
        if (name == "k") k_index = index;
        if (name == "v") v_index = index;
        if (name == "o") o_index = index;
      }
      // The packed run's inputs, as run_through_runtime fills them, copied row by row into one fused buffer.
      const std::int64_t tokens = batch * sequence;
      auto contents = [&](std::size_t index, std::int64_t per_token) {
        const Argument& argument = packed_spec.arguments[index];
        return initial_contents(argument.dtype, tokens * per_token, argument.init);
      };
      const std::vector<std::byte> q = contents(q_index, heads * head_dim), k = contents(k_index, kv_heads * head_dim),
                                   v = contents(v_index, kv_heads * head_dim);
      const std::size_t element = 2, q_row = heads * head_dim * element, kv_row = kv_heads * head_dim * element;
      std::vector<std::byte> fused(static_cast<std::size_t>(tokens * row) * element);
      for (std::int64_t token = 0; token < tokens; ++token) {
        std::byte* at = fused.data() + static_cast<std::size_t>(token * row) * element;
        std::memcpy(at, q.data() + token * q_row, q_row);
        std::memcpy(at + q_row, k.data() + token * kv_row, kv_row);
        std::memcpy(at + q_row + kv_row, v.data() + token * kv_row, kv_row);
      }

      SpaceEnumerator packed_space(packed_spec.space, constants(packed_spec));
      SpaceEnumerator fused_space(fused_spec.space, constants(fused_spec));
      ConfigurationValues wgmma = configuration_values(packed_spec.space, packed_space.default_configuration());
      wgmma["PATH"] = std::string("wgmma");
      ConfigurationValues reference = wgmma;
      for (const auto& [parameter, value] : packed_spec.verification.reference) reference[parameter] = value;
      std::map<std::size_t, std::vector<std::byte>> packed_reference;
      for (const ConfigurationValues& values : {reference, wgmma}) {
        const std::optional<Configuration> configuration = configuration_from_values(packed_spec.space, values);
        ASSERT_TRUE(configuration.has_value());
        ASSERT_TRUE(fused_space.is_valid(*configuration));
        SCOPED_TRACE(fmt::format("SEQ={} CAUSAL={} {}", sequence, causal, to_string(packed_spec.space, *configuration)));
        auto packed = run_through_runtime(
            packed_spec, database_with(packed_spec, packed_space, *configuration, properties_.name, properties_.arch_name()));
        if (packed_reference.empty()) packed_reference = packed;

        TemporaryDatabase files(
            database_with(fused_spec, fused_space, *configuration, properties_.name, properties_.arch_name()),
            std::to_string(counter_++));
        RuntimeOptions options;
        options.databases = {files.directory};
        options.sources = fused_spec.template_file.parent_path();
        options.cubin_cache = cubin_cache_;
        Runtime runtime(options);
        Problem problem;
        for (const auto& [symbol, value] : fused_spec.problem) problem[symbol] = value;
        const Kernel& kernel = runtime.kernel(fused_spec.name, problem);
        DeviceMemory qkv(fused.size());
        qkv.upload(fused);
        DeviceMemory o(packed.at(o_index).size());
        o.upload(std::vector<std::byte>(o.bytes, std::byte{poison_byte}));
        Arguments arguments;
        arguments.set("q", reinterpret_cast<const void*>(qkv.pointer));
        arguments.set("k", reinterpret_cast<const void*>(qkv.pointer + q_row));
        arguments.set("v", reinterpret_cast<const void*>(qkv.pointer + q_row + kv_row));
        arguments.set("o", reinterpret_cast<const void*>(o.pointer));
        kernel.launch(arguments);
        KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuCtxSynchronize());
        const std::map<std::size_t, std::vector<std::byte>> from_views{{o_index, o.download()}};
        EXPECT_TRUE(from_views.at(o_index) == packed.at(o_index)) << "the views' output differs from the packed run's";
        const double worst = expect_outputs_match(packed_spec, from_views, packed_reference);
        std::printf("[ runtime  ] attention_bf16 on fused QKV views SEQ=%lld CAUSAL=%lld %s verified, largest relative "
                    "error %.2e\n",
                    static_cast<long long>(sequence), static_cast<long long>(causal),
                    to_string(packed_spec.space, *configuration).c_str(), worst);
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 8);
}

// Only an entry of another major arch: the ladder ends at the space's default for the problem where the space declares
// one that holds (spaces/softmax.yaml: fp32 rows of 1024 to 8192 columns), else at the default configuration; either
// way the output verifies against the same configuration stored for this device.
TEST_F(RuntimeOnDevice, ArchMissingFromTheDatabaseFallsBackToTheDefaultAndVerifies) {
  struct Case {
    std::int64_t columns;
    Rung rung;
    const char* reason;
  };
  for (const Case& fallback : {Case{1000, Rung::default_configuration, "default configuration"},
                               Case{8192, Rung::problem_default, "the space's default for this problem"}}) {
    KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "softmax.yaml", {{"ROWS", 8192}, {"COLS", fallback.columns}});
    SpaceEnumerator space(spec.space, constants(spec));
    KernelDatabase database = database_with(spec, space, space.at(0), "NVIDIA A100-SXM4-80GB", "sm_80");
    if (properties_.arch_major == 8) database.entries[0].arch = "sm_75";
    Selection selection;
    auto got = run_through_runtime(spec, database, &selection);
    EXPECT_EQ(selection.rung, fallback.rung) << selection.reason;
    EXPECT_NE(selection.reason.find(fallback.reason), std::string::npos) << selection.reason;
    auto expected = run_through_runtime(spec, database_with(spec, space, space.at(0), properties_.name, properties_.arch_name()));
    expect_outputs_match(spec, got, expected);
    std::printf("[ runtime  ] fallback at COLS=%lld: %s\n", static_cast<long long>(fallback.columns), selection.reason.c_str());
  }
}

TEST_F(RuntimeOnDevice, AnotherDeviceOfTheSameArchTakesTheEntryThroughTheArchRung) {
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "saxpy.yaml");
  SpaceEnumerator space(spec.space, constants(spec));
  // The entry of the H200 the shipped records come from; on an H200 itself the rung is exact.
  KernelDatabase database = database_with(spec, space, stored_or_middle(spec, space), "NVIDIA H200", properties_.arch_name());
  Selection selection;
  run_through_runtime(spec, database, &selection);
  if (properties_.name == "NVIDIA H200") {
    EXPECT_EQ(selection.rung, Rung::exact) << selection.reason;
  } else {
    EXPECT_EQ(selection.rung, Rung::same_arch_nearest_problem) << selection.reason;
    EXPECT_NE(selection.reason.find("took the entry of NVIDIA H200"), std::string::npos) << selection.reason;
  }
  std::printf("[ runtime  ] on %s: %s (%s)\n", properties_.name.c_str(), rung_name(selection.rung), selection.reason.c_str());
}

TEST(RuntimeWithoutContext, ASecondRuntimeAfterTheFirstReleasedTheContextStillLaunches) {
  try {
    gpu::query_device(0);
  } catch (const NoGpuError& error) {
    GTEST_SKIP() << "no usable GPU: " << error.what();
  }
  // No context held outside the Runtimes: the first releases the primary context to zero, the second retains it anew.
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "saxpy.yaml");
  for (int round = 0; round < 2; ++round) {
    RuntimeOptions options;
    options.databases = {source_directory / "results" / "best" / "saxpy.json"};
    options.sources = spec.template_file.parent_path();
    options.cubin_cache = "-";
    Runtime runtime(options);
    const Kernel& kernel = runtime.kernel("saxpy", {{"N", 1 << 20}});
    CUdeviceptr x = 0, y = 0;
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    KERNLATHE_CUDA_CHECK(cuda.cuMemAlloc(&x, (1 << 20) * sizeof(float)));
    KERNLATHE_CUDA_CHECK(cuda.cuMemAlloc(&y, (1 << 20) * sizeof(float)));
    KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(x, 0x3f800000u, 1 << 20, nullptr));  // 1.0f
    KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(y, 0x40000000u, 1 << 20, nullptr));  // 2.0f
    kernel.launch(Arguments().set("x", reinterpret_cast<const void*>(x)).set("y", reinterpret_cast<const void*>(y)));
    KERNLATHE_CUDA_CHECK(cuda.cuCtxSynchronize());
    float last = 0;
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoH(&last, y + ((1 << 20) - 1) * sizeof(float), sizeof last));
    EXPECT_FLOAT_EQ(last, 2.5f * 1.0f + 2.0f) << "round " << round;  // y = a * x + y with the spec's a = 2.5
    KERNLATHE_CUDA_CHECK(cuda.cuMemFree(x));
    KERNLATHE_CUDA_CHECK(cuda.cuMemFree(y));
  }
}

// A prepared launch (Kernel::prepare) computes what Kernel::launch computes, takes new buffers and scalars at each
// launch, keeps the default of a scalar it was not given, and refuses a launch with the wrong number of values.
TEST(RuntimePreparedLaunch, LaunchesWithNewBuffersAndScalarsEachTime) {
  try {
    gpu::query_device(0);
  } catch (const NoGpuError& error) {
    GTEST_SKIP() << "no usable GPU: " << error.what();
  }
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "saxpy.yaml");
  RuntimeOptions options;
  options.databases = {source_directory / "results" / "best" / "saxpy.json"};
  options.sources = spec.template_file.parent_path();
  options.cubin_cache = "-";
  Runtime runtime(options);
  constexpr int n = 1 << 16;
  const Kernel& kernel = runtime.kernel("saxpy", {{"N", n}});
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  DeviceMemory x(n * sizeof(float)), y(n * sizeof(float)), other(n * sizeof(float));
  KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(x.pointer, 0x3f800000u, n, nullptr));  // 1.0f
  KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(y.pointer, 0x40000000u, n, nullptr));  // 2.0f
  KERNLATHE_CUDA_CHECK(cuda.cuMemsetD32Async(other.pointer, 0x40400000u, n, nullptr));  // 3.0f
  auto last = [&](const DeviceMemory& memory) {
    KERNLATHE_CUDA_CHECK(cuda.cuCtxSynchronize());
    float value = 0;
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoH(&value, memory.pointer + (n - 1) * sizeof(float), sizeof value));
    return value;
  };
  const void* x_address = reinterpret_cast<const void*>(x.pointer);
  PreparedLaunch with_a = kernel.prepare({"y", "x"}, {"a"});
  EXPECT_EQ(with_a.pointer_count(), 2u);
  EXPECT_EQ(with_a.scalar_count(), 1u);
  std::vector<const void*> pointers = {reinterpret_cast<const void*>(y.pointer), x_address};
  std::vector<Value> scalars = {Value{0.5}};
  with_a.launch(pointers, scalars);
  EXPECT_FLOAT_EQ(last(y), 0.5f * 1.0f + 2.0f);
  pointers[0] = reinterpret_cast<const void*>(other.pointer);  // another buffer and another scalar, same launch
  scalars[0] = std::int64_t{2};
  with_a.launch(pointers, scalars);
  EXPECT_FLOAT_EQ(last(other), 2.0f * 1.0f + 3.0f);
  EXPECT_FLOAT_EQ(last(y), 2.5f) << "the first buffer is left alone";

  PreparedLaunch with_default = kernel.prepare({"x", "y"});
  std::vector<const void*> in_order = {x_address, reinterpret_cast<const void*>(y.pointer)};
  with_default.launch(in_order, {});
  EXPECT_FLOAT_EQ(last(y), 2.5f * 1.0f + 2.5f);  // the spec's a = 2.5
  kernel.launch(Arguments().set("x", x_address).set("y", reinterpret_cast<const void*>(y.pointer)));
  EXPECT_FLOAT_EQ(last(y), 2.5f * 1.0f + 5.0f) << "Kernel::launch agrees";

  try {
    with_default.launch(std::vector<const void*>{x_address}, {});
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_STREQ(error.what(), "saxpy: a prepared launch takes 2 pointers and 0 scalars, it was given 1 and 0");
  }
  EXPECT_THROW(kernel.prepare({"x"}), RuntimeError);  // y is a buffer: it must be given
}

}  // namespace
}  // namespace kernlathe
