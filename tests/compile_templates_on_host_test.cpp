// The shipped templates' arithmetic against CPU references in double precision, with the templates' own code run
// on host threads (issue 19). The test builds, with the host compiler, templates/layernorm.cu with the residual add
// (-DLAYERNORM_RESIDUAL) and templates/common/activation.cuh, over the stand-ins of tests/data/verify/host_emulation.h
// and tests/data/templates/host_device_stand_ins.h, and runs single-warp paths on small shapes:
//   - add_layernorm's verification reference (the configuration every GPU candidate is compared with), the row in
//     registers and the row in shared memory: the stored sum is x + r in fp32 exactly, the output the layer
//     normalisation of that sum;
//   - the same template in its RMSNorm mode with the residual add (-DLAYERNORM_RMS, add_rmsnorm_bf16 in fp32,
//     issue 30) and templates/softmax.cu, each on its verification reference, a cached row whose last items lie
//     past the row (cols 250: ROW_ITEMS rounded up) and a third path, at that ragged width and a whole one;
//   - the GELU of the fused GEMM epilogue against x Phi(x) in double, and the SiLU of the gated one against
//     x / (1 + e^-x);
//   - attention's verification reference (templates/attention.cu, PATH reference) with one warp per block, in
//     bf16 and fp16, head dimensions 64, 96, 128 and 256, causal and not, grouped-query heads in both layouts, ragged
//     sequences and cached keys, against attention in double on the same inputs.
//     That build includes the CUDA toolkit's cuda_fp16.h and cuda_bf16.h (host code) and defines
//     HOST_BLOCK_SHARED_MEMORY, so the lanes of a block share the staged key and value tiles.
// A template change that breaks that arithmetic fails here without a GPU; what only a GPU runs (warpgroups, TMA,
// clusters) is verified against these paths by `tune run` itself.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "host_library_support.h"
#include "tuner/common/float16.h"
#include "tuner/nvrtc/compile_request.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

using RunAddLayernorm = int (*)(int, int, int, float, const float*, const float*, const float*, const float*, float*,
                                float*);
using RunGelu = float (*)(float);
using RunSilu = float (*)(float);

const fs::path source_directory = KERNLATHE_SOURCE_DIR;

// The host build of the templates, compiled once for all tests.
class HostTemplates {
 public:
  HostTemplates()
      : library_("tuner_templates",
                 "#include \"host_emulation.h\"\n"
                 "#include \"host_device_stand_ins.h\"\n"
                 "#define LAYERNORM_RESIDUAL\n"
                 "#include \"layernorm.cu\"\n"
                 "#include \"common/activation.cuh\"\n"
                 "#include \"layernorm_entry_points.h\"\n",
                 {source_directory / "tests/data/verify", source_directory / "tests/data/templates",
                  source_directory / "templates"}),
        run_add_layernorm(library_.symbol<RunAddLayernorm>("run_add_layernorm")),
        run_gelu(library_.symbol<RunGelu>("run_gelu")),
        run_silu(library_.symbol<RunSilu>("run_silu")) {}
  const std::string& error() const { return library_.error(); }

 private:
  testing::HostLibrary library_;

 public:
  RunAddLayernorm run_add_layernorm;
  RunGelu run_gelu;
  RunSilu run_silu;
};

HostTemplates& host_templates() {
  static HostTemplates templates;
  return templates;
}

std::vector<float> uniform(std::size_t count, float low, float high, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(generator);
  return values;
}

class AddLayernormOnHost : public ::testing::TestWithParam<int> {
 protected:
  static constexpr int rows = 5, cols = 256;
  static constexpr float epsilon = 1.0e-5f;

  void SetUp() override {
    ASSERT_EQ(host_templates().error(), "");
    ASSERT_NE(host_templates().run_add_layernorm, nullptr);
    input_ = uniform(rows * cols, -2, 2, 41);
    residual_ = uniform(rows * cols, -2, 2, 44);
    gamma_ = uniform(cols, 0.5f, 1.5f, 42);
    beta_ = uniform(cols, -0.5f, 0.5f, 43);
  }

  // Layer normalisation of each row of `rows_in`, in double, as the spec defines it.
  std::vector<double> normalised(const std::vector<float>& rows_in) const {
    std::vector<double> result(rows_in.size());
    for (int row = 0; row < rows; ++row) {
      const float* values = &rows_in[row * cols];
      double mean = 0, variance = 0;
      for (int column = 0; column < cols; ++column) mean += values[column];
      mean /= cols;
      for (int column = 0; column < cols; ++column) variance += (values[column] - mean) * (values[column] - mean);
      variance /= cols;
      for (int column = 0; column < cols; ++column)
        result[row * cols + column] = (values[column] - mean) / std::sqrt(variance + epsilon) * gamma_[column] +
                                      beta_[column];
    }
    return result;
  }

  std::vector<float> input_, residual_, gamma_, beta_;
};

TEST_P(AddLayernormOnHost, StoresTheSumAndNormalisesIt) {
  // Poisoned outputs: an element a path forgets stays NaN and fails both comparisons.
  std::vector<float> sum(rows * cols, std::nanf("")), output(rows * cols, std::nanf(""));
  ASSERT_EQ(host_templates().run_add_layernorm(GetParam(), rows, cols, epsilon, input_.data(), residual_.data(),
                                               gamma_.data(), beta_.data(), sum.data(), output.data()),
            0);
  std::vector<float> expected_sum(rows * cols);
  for (int index = 0; index < rows * cols; ++index) {
    expected_sum[index] = input_[index] + residual_[index];  // one fp32 addition, as every configuration does
    ASSERT_EQ(sum[index], expected_sum[index]) << "element " << index;
  }
  const std::vector<double> expected = normalised(expected_sum);
  double largest_error = 0;
  for (int index = 0; index < rows * cols; ++index) {
    ASSERT_FALSE(std::isnan(output[index])) << "element " << index;
    largest_error = std::max(largest_error, std::abs(output[index] - expected[index]));
  }
  // fp32 sums of 256 values of O(1): the outputs agree to a few 1e-7; the spec's tolerance is 1e-4.
  EXPECT_LT(largest_error, 2.0e-6);
  // The residual matters: the layer normalisation of the input alone is far from the output.
  const std::vector<double> without_residual = normalised(input_);
  double largest_difference = 0;
  for (int index = 0; index < rows * cols; ++index)
    largest_difference = std::max(largest_difference, std::abs(output[index] - without_residual[index]));
  EXPECT_GT(largest_difference, 0.5);
}

// 0: the specs' verification reference (streamed, the later passes read the stored sum), 1: the row in registers
// (VEC 4, sum of squares), 2: the row in shared memory (VEC 2, UNROLL 2).
INSTANTIATE_TEST_SUITE_P(Paths, AddLayernormOnHost, ::testing::Values(0, 1, 2));

using RunAddRmsnorm = int (*)(int, int, int, float, const float*, const float*, const float*, float*, float*);
using RunSoftmax = int (*)(int, int, int, const float*, float*);

// The host builds of RMSNorm (with the residual add) and of softmax, each a library of its own: both templates
// define Element and Pack.
class RowTemplates {
 public:
  RowTemplates()
      : rmsnorm_library_("tuner_rmsnorm",
                         "#include \"host_emulation.h\"\n"
                         "#include \"host_device_stand_ins.h\"\n"
                         "#define LAYERNORM_RESIDUAL\n"
                         "#define LAYERNORM_RMS\n"
                         "#include \"layernorm.cu\"\n"
                         "#include \"rmsnorm_entry_points.h\"\n",
                         include_directories()),
        softmax_library_("tuner_softmax",
                         "#include \"host_emulation.h\"\n"
                         "#include \"host_device_stand_ins.h\"\n"
                         "#include \"softmax.cu\"\n"
                         "#include \"softmax_entry_points.h\"\n",
                         include_directories()),
        run_add_rmsnorm(rmsnorm_library_.symbol<RunAddRmsnorm>("run_add_rmsnorm")),
        run_softmax(softmax_library_.symbol<RunSoftmax>("run_softmax")) {}
  std::string error() const { return rmsnorm_library_.error() + softmax_library_.error(); }

 private:
  static std::vector<fs::path> include_directories() {
    return {source_directory / "tests/data/verify", source_directory / "tests/data/templates",
            source_directory / "templates"};
  }
  testing::HostLibrary rmsnorm_library_;
  testing::HostLibrary softmax_library_;

 public:
  RunAddRmsnorm run_add_rmsnorm;
  RunSoftmax run_softmax;
};

RowTemplates& row_templates() {
  static RowTemplates templates;
  return templates;
}

// (path, cols): cols 250 is 125 vectors of 2, so a warp's cached row of ROW_ITEMS 4 has three slots past it; 256
// fills every slot.
class RowKernelsOnHost : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  static constexpr int rows = 3;
  void SetUp() override {
    ASSERT_EQ(row_templates().error(), "");
    ASSERT_NE(row_templates().run_add_rmsnorm, nullptr);
    ASSERT_NE(row_templates().run_softmax, nullptr);
  }
  int path() const { return std::get<0>(GetParam()); }
  int cols() const { return std::get<1>(GetParam()); }
};

TEST_P(RowKernelsOnHost, AddRmsnormStoresTheSumAndNormalisesIt) {
  const int count = rows * cols();
  const float epsilon = 1.0e-5f;
  const std::vector<float> input = uniform(count, -2, 2, 41), residual = uniform(count, -2, 2, 44),
                           weight = uniform(cols(), 0.5f, 1.5f, 42);
  // Poisoned outputs: an element a path forgets stays NaN and fails the comparisons.
  std::vector<float> sum(count, std::nanf("")), output(count, std::nanf(""));
  ASSERT_EQ(row_templates().run_add_rmsnorm(path(), rows, cols(), epsilon, input.data(), residual.data(),
                                            weight.data(), sum.data(), output.data()),
            0);
  double largest_error = 0, largest_centred_difference = 0;
  for (int row = 0; row < rows; ++row) {
    double squares = 0, total = 0;
    for (int column = 0; column < cols(); ++column) {
      const int index = row * cols() + column;
      ASSERT_EQ(sum[index], input[index] + residual[index]) << "element " << index;  // one fp32 addition
      squares += double(sum[index]) * sum[index];
      total += sum[index];
    }
    const double inverse_rms = 1 / std::sqrt(squares / cols() + epsilon);
    const double mean = total / cols();
    const double inverse_deviation = 1 / std::sqrt(squares / cols() - mean * mean + epsilon);
    for (int column = 0; column < cols(); ++column) {
      const int index = row * cols() + column;
      ASSERT_FALSE(std::isnan(output[index])) << "element " << index;
      largest_error = std::max(largest_error, std::abs(output[index] - sum[index] * inverse_rms * weight[column]));
      largest_centred_difference = std::max(
          largest_centred_difference,
          std::abs(output[index] - (sum[index] - mean) * inverse_deviation * weight[column]));
    }
  }
  // fp32 sums of squares of 250 values of O(1): outputs (up to ~4) agree to a few 1e-7.
  EXPECT_LT(largest_error, 2.0e-6);
  // Not layer normalisation: with the mean of each row subtracted the outputs move by more than the tolerance.
  EXPECT_GT(largest_centred_difference, 1.0e-3);
}

TEST_P(RowKernelsOnHost, SoftmaxMatchesTheDoubleReference) {
  const int count = rows * cols();
  const std::vector<float> input = uniform(count, -8, 8, 31);  // as kernels/softmax.yaml draws it
  std::vector<float> output(count, std::nanf(""));
  ASSERT_EQ(row_templates().run_softmax(path(), rows, cols(), input.data(), output.data()), 0);
  double largest_relative_error = 0;
  for (int row = 0; row < rows; ++row) {
    double largest = -INFINITY, total = 0;
    for (int column = 0; column < cols(); ++column) largest = std::max(largest, double(input[row * cols() + column]));
    for (int column = 0; column < cols(); ++column) total += std::exp(input[row * cols() + column] - largest);
    for (int column = 0; column < cols(); ++column) {
      const int index = row * cols() + column;
      ASSERT_FALSE(std::isnan(output[index])) << "element " << index;
      const double expected = std::exp(input[index] - largest) / total;
      largest_relative_error = std::max(largest_relative_error, std::abs(output[index] - expected) / expected);
    }
  }
  // A slot past the row counted as 0 instead of minus infinity would add e^-max per slot to the sum (six slots: ~1e-4
  // of it with inputs in [-8, 8]); exact arithmetic in float leaves a few 1e-7.
  EXPECT_LT(largest_relative_error, 1.0e-5);
}

INSTANTIATE_TEST_SUITE_P(PathsAndWidths, RowKernelsOnHost,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values(250, 256)));

// The fused GEMM's GELU (templates/common/activation.cuh) is the exact one, x Phi(x), to fp32 accuracy: within
// a few ulp of the value plus the cancellation of 1 + erf for negative arguments (at most 2^-24 of |x| / 2).
TEST(GeluOnHost, IsTheExactGeluToFp32Accuracy) {
  ASSERT_EQ(host_templates().error(), "");
  ASSERT_NE(host_templates().run_gelu, nullptr);
  double largest_excess = -1;
  int checked = 0;
  for (double x = -10.0; x <= 10.0; x += 1.0 / 512) {
    const float value = static_cast<float>(x);
    const double exact = value * 0.5 * std::erfc(-value / std::sqrt(2.0));
    const double allowed = 4 * std::ldexp(1.0, std::ilogb(std::max(std::abs(exact), 1e-30)) - 23) +
                           std::ldexp(std::abs(value), -24);
    largest_excess = std::max(largest_excess, std::abs(host_templates().run_gelu(value) - exact) - allowed);
    ++checked;
  }
  EXPECT_EQ(checked, 10241);
  EXPECT_LE(largest_excess, 0.0);
  // Known values: GELU(1) = 0.8413447, GELU(-1) = -0.1586553, GELU(0) = 0.
  EXPECT_NEAR(host_templates().run_gelu(1.0f), 0.8413447, 1e-6);
  EXPECT_NEAR(host_templates().run_gelu(-1.0f), -0.1586553, 1e-6);
  EXPECT_EQ(host_templates().run_gelu(0.0f), 0.0f);
}

// The SiLU of the gated GEMM epilogue (templates/common/activation.cuh): x / (1 + e^-x) to fp32 accuracy, a few ulp
// of the value (the host stands in the exact exponential for the device's __expf, see host_device_stand_ins.h).
TEST(SiluOnHost, IsXTimesTheLogisticFunctionToFp32Accuracy) {
  ASSERT_EQ(host_templates().error(), "");
  ASSERT_NE(host_templates().run_silu, nullptr);
  double largest_excess = -1;
  int checked = 0;
  for (double x = -20.0; x <= 20.0; x += 1.0 / 256) {
    const float value = static_cast<float>(x);
    const double exact = value / (1.0 + std::exp(-static_cast<double>(value)));
    const double allowed = 4 * std::ldexp(1.0, std::ilogb(std::max(std::abs(exact), 1e-30)) - 23);
    largest_excess = std::max(largest_excess, std::abs(host_templates().run_silu(value) - exact) - allowed);
    ++checked;
  }
  EXPECT_EQ(checked, 10241);
  EXPECT_LE(largest_excess, 0.0);
  // Known values: SiLU(1) = 0.7310586, SiLU(-1) = -0.2689414, SiLU(0) = 0.
  EXPECT_NEAR(host_templates().run_silu(1.0f), 0.7310586, 1e-6);
  EXPECT_NEAR(host_templates().run_silu(-1.0f), -0.2689414, 1e-6);
  EXPECT_EQ(host_templates().run_silu(0.0f), 0.0f);
}

// Attention's verification reference (templates/attention/reference.cuh) on host threads. The element type, head
// dimension, masking, rows per block, head counts and layout are compile-time constants of the template (the space
// derives them from the problem), so each combination is its own host build. One warp per block (REF_WARPS 1) owns
// all REF_ROWS query rows (each warp of the specs' verification configuration, 8 warps over 16 rows, owns two).
using RunAttention = int (*)(int, int, int, float, const std::uint16_t*, const std::uint16_t*, const std::uint16_t*,
                             std::uint16_t*);

// A 16-bit element type as the host sees it: its bit patterns, rounding to nearest even, and its unit roundoff
// (half the distance between neighbours around 1: 2^-8 with bf16's 8 significant bits, 2^-11 with fp16's 11).
struct ElementType {
  std::string name;
  std::string define;  // what the spec passes NVRTC
  std::uint16_t (*round)(float);
  float (*widen)(std::uint16_t);
  double unit_roundoff;
  std::uint16_t nan;
};

const ElementType bf16{"bf16", "ATTENTION_INPUT_BF16", float_to_bfloat16_bits, bfloat16_bits_to_float,
                       std::ldexp(1.0, -8), 0x7fc0};
const ElementType f16{"f16", "ATTENTION_INPUT_F16", float_to_half_bits, half_bits_to_float, std::ldexp(1.0, -11),
                      0x7e00};

struct AttentionShape {
  int batch;
  int sequence;    // query rows
  int cached = 0;  // keys before the queries' own: sequence + cached keys
  int keys() const { return sequence + cached; }
};

// Heads and layout, compile-time constants of a build.
struct HeadLayout {
  int heads = 1;
  int kv_group = 1;   // query heads per key/value head
  bool bshd = false;  // [batch][rows][heads][dim]; otherwise [batch][heads][rows][dim]
  // BSHD builds reading views into a fused QKV buffer: elements from one token's row of Q, and of K and V, to the next
  // (the space's AT_Q_ROW_STRIDE, AT_KV_ROW_STRIDE); 0: packed heads.
  int q_row_stride = 0;
  int kv_row_stride = 0;
  int kv_heads() const { return heads / kv_group; }
  // The element offset of row `row` of head `head` of batch `batch` in a tensor of head_count heads of `rows` rows.
  std::size_t offset(int batch, int head, int row, int head_count, int rows, int head_dim) const {
    const std::size_t b = static_cast<std::size_t>(batch), h = static_cast<std::size_t>(head),
                      r = static_cast<std::size_t>(row);
    return (bshd ? (b * rows + r) * head_count + h : (b * head_count + h) * rows + r) * head_dim;
  }
};

struct AttentionBuild {
  const ElementType* element;
  int head_dim;
  bool causal;
  int rows_per_block;  // REF_ROWS
  // Sequences within one tile of 32 keys, exactly one tile, and across the tile boundary to a partial tile (the
  // reference zero-fills and skips keys at or past the last one); sequences no block of rows divides (rows past the
  // end neither read nor written); several batches; keys cached before the queries.
  std::vector<AttentionShape> shapes;
  HeadLayout layout = {};
};

void PrintTo(const AttentionBuild& build, std::ostream* stream) {
  *stream << build.element->name << " HEAD_DIM " << build.head_dim << " CAUSAL " << (build.causal ? 1 : 0)
          << " REF_ROWS " << build.rows_per_block << " HEADS " << build.layout.heads << " KV_HEADS "
          << build.layout.kv_heads() << " LAYOUT " << (build.layout.bshd ? 1 : 0);
}

std::string build_name(const AttentionBuild& build) {
  return "attention_" + build.element->name + "_hd" + std::to_string(build.head_dim) +
         (build.causal ? "_causal" : "") + "_rows" + std::to_string(build.rows_per_block) + "_heads" +
         std::to_string(build.layout.heads) + "_group" + std::to_string(build.layout.kv_group) +
         (build.layout.bshd ? "_bshd" : "_bhsd") +
         (build.layout.q_row_stride ? "_qrow" + std::to_string(build.layout.q_row_stride) : "") +
         (build.layout.kv_row_stride ? "_kvrow" + std::to_string(build.layout.kv_row_stride) : "");
}

std::string attention_source(const AttentionBuild& build) {
  return "#include <cuda_fp16.h>\n"
         "#include <cuda_bf16.h>\n"
         "#include \"host_emulation.h\"\n"
         "#define HOST_BLOCK_SHARED_MEMORY\n"
         "#include \"host_device_stand_ins.h\"\n"
         "#define " + build.element->define + "\n" +
         // What instantiate defines for a reference configuration: the enumeration's name flag and index, the
         // derived head dimension, masking, heads and layout, THREADS = REF_WARPS * 32.
         "#define PATH_reference 1\n#define PATH 0\n"
         "#define AT_HEAD_DIM " + std::to_string(build.head_dim) + "\n"
         "#define AT_CAUSAL " + (build.causal ? "1" : "0") + "\n"
         "#define AT_HEADS " + std::to_string(build.layout.heads) + "\n"
         "#define AT_KV_GROUP " + std::to_string(build.layout.kv_group) + "\n"
         "#define AT_LAYOUT " + (build.layout.bshd ? "1" : "0") + "\n"
         "#define AT_Q_ROW_STRIDE " +
         std::to_string(build.layout.q_row_stride ? build.layout.q_row_stride : build.layout.heads * build.head_dim) +
         "\n#define AT_KV_ROW_STRIDE " +
         std::to_string(build.layout.kv_row_stride ? build.layout.kv_row_stride
                                                   : build.layout.kv_heads() * build.head_dim) + "\n"
         "#define REF_WARPS 1\n#define THREADS 32\n"
         "#define REF_ROWS " + std::to_string(build.rows_per_block) + "\n"
         "#include \"attention.cu\"\n"
         "#include \"attention_entry_points.h\"\n";
}

class AttentionLibrary {
 public:
  explicit AttentionLibrary(const AttentionBuild& build)
      : library_(build_name(build), attention_source(build),
                 {source_directory / "tests/data/verify", source_directory / "tests/data/templates",
                  source_directory / "templates", cuda_include_directory()}),
        run(library_.symbol<RunAttention>("run_attention")) {}
  const std::string& error() const { return library_.error(); }

 private:
  testing::HostLibrary library_;

 public:
  RunAttention run;
};

// Each build once per process.
AttentionLibrary& attention_library(const AttentionBuild& build) {
  static std::map<std::string, std::unique_ptr<AttentionLibrary>> libraries;
  std::unique_ptr<AttentionLibrary>& library = libraries[build_name(build)];
  if (!library) library = std::make_unique<AttentionLibrary>(build);
  return *library;
}

// Q, K and V as the specs initialise them (q, k in [-2, 2], v in [-1, 1], seeds 41 to 43), rounded to the element
// type; the kernel reads the bit patterns, the double reference the same values widened.
struct AttentionInputs {
  std::vector<std::uint16_t> q, k, v;
  std::vector<float> q_values, k_values, v_values;
};

AttentionInputs attention_inputs(const ElementType& element, const AttentionShape& shape, int head_dim,
                                 const HeadLayout& layout) {
  const std::size_t query_count = static_cast<std::size_t>(shape.batch) * layout.heads * shape.sequence * head_dim;
  const std::size_t key_count = static_cast<std::size_t>(shape.batch) * layout.kv_heads() * shape.keys() * head_dim;
  AttentionInputs inputs;
  auto round = [&](const std::vector<float>& values, std::vector<std::uint16_t>& bits, std::vector<float>& rounded) {
    for (float value : values) {
      bits.push_back(element.round(value));
      rounded.push_back(element.widen(bits.back()));
    }
  };
  round(uniform(query_count, -2, 2, 41), inputs.q, inputs.q_values);
  round(uniform(key_count, -2, 2, 42), inputs.k, inputs.k_values);
  round(uniform(key_count, -1, 1, 43), inputs.v, inputs.v_values);
  return inputs;
}

// softmax(scale q k^T) v in double for every (batch, head, position) row, over keys [0, key_count(position)) of the
// key/value head kv_head_of(head). Keys at or past the last one count as rows of zeros (what the reference stages
// there), so a mask that forgot the end can be modelled too. The result is in the queries' layout.
std::vector<double> attention_in_double(const AttentionInputs& inputs, const AttentionShape& shape, int head_dim,
                                        float scale, const std::function<int(int)>& key_count,
                                        const HeadLayout& layout = {},
                                        const std::function<int(int)>& kv_head_of = nullptr) {
  std::vector<double> result(inputs.q.size());
  for (int batch = 0; batch < shape.batch; ++batch) {
    for (int head = 0; head < layout.heads; ++head) {
      const int kv_head = kv_head_of ? kv_head_of(head) : head / layout.kv_group;
      const auto key_at = [&](int key) {
        return layout.offset(batch, kv_head, key, layout.kv_heads(), shape.keys(), head_dim);
      };
      for (int position = 0; position < shape.sequence; ++position) {
        const std::size_t query_at = layout.offset(batch, head, position, layout.heads, shape.sequence, head_dim);
        const float* query = &inputs.q_values[query_at];
        const int keys = key_count(position);
        std::vector<double> scores(keys, 0.0);
        for (int key = 0; key < keys && key < shape.keys(); ++key) {
          const float* key_row = &inputs.k_values[key_at(key)];
          double dot = 0;
          for (int index = 0; index < head_dim; ++index) dot += static_cast<double>(query[index]) * key_row[index];
          scores[key] = static_cast<double>(scale) * dot;
        }
        const double largest = *std::max_element(scores.begin(), scores.end());
        double total = 0;
        std::vector<double> output(head_dim, 0.0);
        for (int key = 0; key < keys; ++key) {
          const double weight = std::exp(scores[key] - largest);
          total += weight;
          if (key >= shape.keys()) continue;
          const float* value_row = &inputs.v_values[key_at(key)];
          for (int index = 0; index < head_dim; ++index) output[index] += weight * value_row[index];
        }
        for (int index = 0; index < head_dim; ++index) result[query_at + index] = output[index] / total;
      }
    }
  }
  return result;
}

// What the fp32 arithmetic may add before the output's rounding, worst case. A score sums head_dim products
// (|q k| <= 4) per lane in groups of head_dim / 32 and then over 5 shuffle steps: at most (head_dim / 32 + 5)
// roundings of 2^-24 times the sum of |q k| (<= 4 head_dim), times scale (1 / sqrt(head_dim)): 2.7e-5 absolute at
// most at head_dim 128, 5e-5 at 256 (about 1e-6 typical), which is the relative error of that key's weight (exp's
// own error is an ulp or two, 1e-7). A relative error d in every weight moves the normalised sum of values in
// [-1, 1] by at most 2d; the running rescaling adds one rounding per key (<= 50 keys here: 3e-6). Typical errors
// sit far below the worst case, so 1e-4 bounds the fp32 part, while one key too
// many or too few moves an output by about |v - o| / (keys + 1), 1e-2 at 40 keys. Measured on these shapes: no
// output is more than 3e-8 beyond its rounding bound; the bf16 outputs are the double results rounded to bf16.
constexpr double fp32_allowance = 1.0e-4;

// Where the output exceeds the allowed error the most: |output - expected| - (unit roundoff x |expected| + fp32
// allowance), over the rows [first_row, end_row) of every head; infinity where an output is NaN (never written).
double largest_excess(const std::vector<std::uint16_t>& output, const ElementType& element,
                      const std::vector<double>& expected, const AttentionShape& shape, int head_dim, int first_row,
                      int end_row, const HeadLayout& layout = {}) {
  double excess = -std::numeric_limits<double>::infinity();
  for (int batch = 0; batch < shape.batch; ++batch) {
    for (int head = 0; head < layout.heads; ++head) {
      for (int position = first_row; position < end_row; ++position) {
        const std::size_t row = layout.offset(batch, head, position, layout.heads, shape.sequence, head_dim);
        for (int index = 0; index < head_dim; ++index) {
          const std::size_t at = row + index;
          const double value = element.widen(output[at]);
          if (std::isnan(value)) return std::numeric_limits<double>::infinity();
          const double allowed = element.unit_roundoff * std::abs(expected[at]) + fp32_allowance;
          excess = std::max(excess, std::abs(value - expected[at]) - allowed);
        }
      }
    }
  }
  return excess;
}

float attention_scale(int head_dim) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim))); }

// Elements after the output, poisoned like it: a store past the last row lands there.
constexpr std::size_t guard_elements = 4096;

// The reference's output for one shape, from poisoned (NaN) outputs; the guard after it must stay poisoned.
std::vector<std::uint16_t> run_reference(AttentionLibrary& library, const ElementType& element,
                                         const AttentionInputs& inputs, const AttentionShape& shape, int head_dim) {
  std::vector<std::uint16_t> output(inputs.q.size() + guard_elements, element.nan);
  const int status = library.run(shape.batch, shape.sequence, shape.keys(), attention_scale(head_dim),
                                 inputs.q.data(), inputs.k.data(), inputs.v.data(), output.data());
  EXPECT_EQ(status, 0);
  const std::size_t written = static_cast<std::size_t>(
      std::count_if(output.begin() + static_cast<std::ptrdiff_t>(inputs.q.size()), output.end(),
                    [&](std::uint16_t bits) { return bits != element.nan; }));
  EXPECT_EQ(written, 0u) << "elements written past the output";
  output.resize(inputs.q.size());
  return output;
}

// Causal masking aligned at the end: query `position` sees keys up to position + cached.
std::function<int(int)> causal_keys(int cached = 0) {
  return [cached](int position) { return position + cached + 1; };
}
std::function<int(int)> every_key(int keys) {
  return [keys](int) { return keys; };
}

class AttentionReferenceOnHost : public ::testing::TestWithParam<AttentionBuild> {};

TEST_P(AttentionReferenceOnHost, MatchesAttentionInDouble) {
  const AttentionBuild& build = GetParam();
  const HeadLayout& layout = build.layout;
  ASSERT_NE(cuda_include_directory(), "") << "the host build includes the CUDA toolkit's cuda_fp16.h and cuda_bf16.h";
  AttentionLibrary& library = attention_library(build);
  ASSERT_EQ(library.error(), "");
  ASSERT_NE(library.run, nullptr);
  for (const AttentionShape& shape : build.shapes) {
    SCOPED_TRACE(std::to_string(shape.batch) + " batches, sequence " + std::to_string(shape.sequence) + ", cached " +
                 std::to_string(shape.cached));
    const AttentionInputs inputs = attention_inputs(*build.element, shape, build.head_dim, layout);
    const std::vector<std::uint16_t> output = run_reference(library, *build.element, inputs, shape, build.head_dim);
    const std::vector<double> expected =
        attention_in_double(inputs, shape, build.head_dim, attention_scale(build.head_dim),
                            build.causal ? causal_keys(shape.cached) : every_key(shape.keys()), layout);
    EXPECT_LE(largest_excess(output, *build.element, expected, shape, build.head_dim, 0, shape.sequence, layout),
              0.0);
    if (build.causal && shape.cached == 0) {
      // The first query sees only the first key: weight exp(0) = 1 after a correction of exp(-inf) = 0, so its
      // output is that key's value row (of its key/value head), bit for bit.
      for (int batch = 0; batch < shape.batch; ++batch) {
        for (int head = 0; head < layout.heads; ++head) {
          const std::size_t row = layout.offset(batch, head, 0, layout.heads, shape.sequence, build.head_dim);
          const std::size_t value_row =
              layout.offset(batch, head / layout.kv_group, 0, layout.kv_heads(), shape.keys(), build.head_dim);
          for (int index = 0; index < build.head_dim; ++index)
            ASSERT_EQ(output[row + index], inputs.v[value_row + index])
                << "batch " << batch << ", head " << head << ", element " << index;
        }
      }
    }
  }
}

std::string attention_build_name(const ::testing::TestParamInfo<AttentionBuild>& info) {
  return build_name(info.param);
}

// bf16 at head dimension 64 with two rows per block (as many as each warp of the spec's verification configuration
// owns), fp16 at 128 with eight: 3 batches of one block's rows (fewer keys than a tile), one whole tile, and 2
// batches across the tile boundary to a partial second tile. Then grouped-query heads (4 over 2, 8 over 1) in both
// layouts, sequences no block divides, and keys cached before the queries (causal masking aligned at the end); head
// dimensions 256 (16-key tiles) and 96 (three lanes' columns per 32, the reference of the wgmma path's padded 128).
INSTANTIATE_TEST_SUITE_P(
    Builds, AttentionReferenceOnHost,
    ::testing::Values(AttentionBuild{&bf16, 64, false, 2, {{3, 6}, {1, 32}, {2, 38}}},
                      AttentionBuild{&bf16, 64, true, 2, {{3, 6}, {1, 32}, {2, 38}}},
                      AttentionBuild{&f16, 128, false, 8, {{3, 8}, {1, 32}, {2, 40}}},
                      AttentionBuild{&f16, 128, true, 8, {{3, 8}, {1, 32}, {2, 40}}},
                      AttentionBuild{&bf16, 64, true, 2, {{2, 7}, {1, 1}, {1, 37, 5}}, {4, 2, true}},
                      AttentionBuild{&bf16, 64, false, 8, {{2, 13}, {1, 35, 12}}, {4, 2, false}},
                      AttentionBuild{&f16, 128, true, 8, {{1, 13}, {2, 33, 9}}, {8, 8, false}},
                      AttentionBuild{&f16, 128, false, 8, {{1, 1}, {2, 21, 30}}, {8, 8, true}},
                      AttentionBuild{&bf16, 256, true, 8, {{1, 19}, {1, 13, 8}}, {2, 2, true}},
                      AttentionBuild{&f16, 96, true, 8, {{1, 19}, {2, 37, 6}}, {4, 1, true}}),
    attention_build_name);

// The comparison above cannot pass vacuously: against attention with a wrong mask it fails, by far on early rows
// where causal masking leaves a query a handful of keys, and still for one key too many or too few, and for the
// zero rows past the sequence's end counted as keys. bf16, the loosest tolerance.
TEST(AttentionReferenceOnHost, TheComparisonCatchesAWrongMask) {
  const AttentionBuild causal_build{&bf16, 64, true, 2, {}};
  const AttentionBuild full_build{&bf16, 64, false, 2, {}};
  AttentionLibrary& causal_library = attention_library(causal_build);
  AttentionLibrary& full_library = attention_library(full_build);
  ASSERT_EQ(causal_library.error(), "");
  ASSERT_EQ(full_library.error(), "");
  const AttentionShape shape{1, 38};
  const int head_dim = 64;
  const float scale = attention_scale(head_dim);
  const AttentionInputs inputs = attention_inputs(bf16, shape, head_dim, {});
  const std::vector<std::uint16_t> causal = run_reference(causal_library, bf16, inputs, shape, head_dim);
  const std::vector<std::uint16_t> full = run_reference(full_library, bf16, inputs, shape, head_dim);
  const double tolerance_at_most = bf16.unit_roundoff + fp32_allowance;  // |expected| <= 1

  // Each output against the other's masking: on the first four rows, far outside the tolerance.
  const std::vector<double> without_mask = attention_in_double(inputs, shape, head_dim, scale, every_key(38));
  const std::vector<double> with_mask = attention_in_double(inputs, shape, head_dim, scale, causal_keys());
  EXPECT_GT(largest_excess(causal, bf16, without_mask, shape, head_dim, 0, 4), 50 * tolerance_at_most);
  EXPECT_GT(largest_excess(full, bf16, with_mask, shape, head_dim, 0, 4), 50 * tolerance_at_most);
  // The causal output against one key too many and one too few (from the second row on), over the whole sequence.
  const std::vector<double> one_key_late =
      attention_in_double(inputs, shape, head_dim, scale, [](int position) { return std::min(position + 2, 38); });
  const std::vector<double> one_key_early =
      attention_in_double(inputs, shape, head_dim, scale, [](int position) { return std::max(position, 1); });
  EXPECT_GT(largest_excess(causal, bf16, one_key_late, shape, head_dim, 0, 38), 0.0);
  EXPECT_GT(largest_excess(causal, bf16, one_key_early, shape, head_dim, 1, 38), 0.0);
  // The last rows only, where one key is a small part of the weight: still caught.
  EXPECT_GT(largest_excess(causal, bf16, one_key_late, shape, head_dim, 30, 37), 0.0);
  // The non-causal output against the second tile's 26 zero rows past the sequence (keys 38 to 63) counted as keys.
  const std::vector<double> padded = attention_in_double(inputs, shape, head_dim, scale, every_key(64));
  EXPECT_GT(largest_excess(full, bf16, padded, shape, head_dim, 0, 38), 0.0);
  // And both outputs pass against their own masking (the test above, on this shape).
  EXPECT_LE(largest_excess(causal, bf16, with_mask, shape, head_dim, 0, 38), 0.0);
  EXPECT_LE(largest_excess(full, bf16, without_mask, shape, head_dim, 0, 38), 0.0);
}

// Nor with grouped heads and cached keys: a query head reading the wrong key/value head (h mod KV_HEADS instead of
// h / group), or causal masking aligned at the start instead of the end, fails the comparison.
TEST(AttentionReferenceOnHost, TheComparisonCatchesAWrongHeadOrAlignment) {
  const HeadLayout layout{4, 2, true};
  const AttentionBuild build{&bf16, 64, true, 2, {}, layout};
  AttentionLibrary& library = attention_library(build);
  ASSERT_EQ(library.error(), "");
  const AttentionShape shape{1, 20, 7};
  const int head_dim = 64;
  const float scale = attention_scale(head_dim);
  const AttentionInputs inputs = attention_inputs(bf16, shape, head_dim, layout);
  const std::vector<std::uint16_t> output = run_reference(library, bf16, inputs, shape, head_dim);
  const std::vector<double> right = attention_in_double(inputs, shape, head_dim, scale, causal_keys(7), layout);
  const std::vector<double> interleaved = attention_in_double(
      inputs, shape, head_dim, scale, causal_keys(7), layout, [&](int head) { return head % layout.kv_heads(); });
  const std::vector<double> aligned_at_start = attention_in_double(inputs, shape, head_dim, scale, causal_keys(), layout);
  EXPECT_LE(largest_excess(output, bf16, right, shape, head_dim, 0, 20, layout), 0.0);
  EXPECT_GT(largest_excess(output, bf16, interleaved, shape, head_dim, 0, 20, layout), 0.0);
  EXPECT_GT(largest_excess(output, bf16, aligned_at_start, shape, head_dim, 0, 20, layout), 0.0);
}

// Views into one fused QKV buffer (issue 33): rows of q (4 heads), k and v (2 each) and 64 elements of padding, as a
// model's fused projection writes them, read by a build with those row strides, give the packed build's output bit for
// bit. The padding is NaN, so a read outside the views shows in the output.
TEST(AttentionReferenceOnHost, ReadsViewsIntoAFusedQkvBufferAsThePackedTensors) {
  const int head_dim = 64;
  HeadLayout packed_layout{4, 2, true};
  HeadLayout fused_layout = packed_layout;
  const int q_elements = packed_layout.heads * head_dim, kv_elements = packed_layout.kv_heads() * head_dim;
  const int row = q_elements + 2 * kv_elements + 64;
  fused_layout.q_row_stride = fused_layout.kv_row_stride = row;
  AttentionLibrary& packed = attention_library({&bf16, head_dim, true, 2, {}, packed_layout});
  AttentionLibrary& fused = attention_library({&bf16, head_dim, true, 2, {}, fused_layout});
  ASSERT_EQ(packed.error(), "");
  ASSERT_EQ(fused.error(), "");
  for (const AttentionShape shape : {AttentionShape{1, 1}, AttentionShape{2, 37}}) {
    SCOPED_TRACE(std::to_string(shape.batch) + " batches, sequence " + std::to_string(shape.sequence));
    const AttentionInputs inputs = attention_inputs(bf16, shape, head_dim, packed_layout);
    const std::size_t tokens = static_cast<std::size_t>(shape.batch) * shape.sequence;
    std::vector<std::uint16_t> qkv(tokens * row, bf16.nan);
    for (std::size_t token = 0; token < tokens; ++token) {
      std::copy_n(inputs.q.begin() + token * q_elements, q_elements, qkv.begin() + token * row);
      std::copy_n(inputs.k.begin() + token * kv_elements, kv_elements, qkv.begin() + token * row + q_elements);
      std::copy_n(inputs.v.begin() + token * kv_elements, kv_elements,
                  qkv.begin() + token * row + q_elements + kv_elements);
    }
    const std::vector<std::uint16_t> expected = run_reference(packed, bf16, inputs, shape, head_dim);
    std::vector<std::uint16_t> output(inputs.q.size(), bf16.nan);
    ASSERT_EQ(fused.run(shape.batch, shape.sequence, shape.keys(), attention_scale(head_dim), qkv.data(),
                        qkv.data() + q_elements, qkv.data() + q_elements + kv_elements, output.data()),
              0);
    ASSERT_EQ(std::count(expected.begin(), expected.end(), bf16.nan), 0);
    EXPECT_EQ(output, expected);
  }
}

}  // namespace
}  // namespace kernlathe
