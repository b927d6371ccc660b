// The launch layout without a GPU (tuner/runtime/launch_layout.h): each kernel parameter is filled from the
// application's pointer or scalar of that name by position, whatever order the names come in; unset scalars take
// their default, scratch buffers and tensor maps are the runtime's; a wrong name, kind, repeat or missing buffer is
// a RuntimeError naming the argument; scalars are stored in their dtype. Kernel::prepare and bind resolve names
// here; launching a PreparedLaunch is tests/gpu/runtime_device_test.
#include "tuner/runtime/launch_layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

#include "kernlathe/runtime.h"

namespace kernlathe {
namespace {

ArgumentPlan argument(std::string name, std::string kind, std::string dtype, bool scratch = false) {
  ArgumentPlan plan;
  plan.description.name = std::move(name);
  plan.description.kind = std::move(kind);
  plan.description.dtype = std::move(dtype);
  plan.description.scratch = scratch;
  return plan;
}

// A kernel as the runtime sees a TMA GEMM with a split-K counter: buffers a, b and c, a tensor map over a, a scratch
// buffer, and two scalars with defaults.
std::vector<ArgumentPlan> gemm_like_arguments() {
  std::vector<ArgumentPlan> arguments = {argument("a", "buffer", "bf16"),        argument("b", "buffer", "bf16"),
                                         argument("a_map", "tensor_map", "bf16"), argument("c", "buffer", "bf16"),
                                         argument("alpha", "scalar", "f32"),      argument("counters", "buffer", "i32", true),
                                         argument("k", "scalar", "i32")};
  arguments[2].buffer_index = 0;
  arguments[4].default_value = 1.0;
  arguments[6].default_value = std::int64_t{4096};
  return arguments;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "(no RuntimeError)";
}

LaunchLayout resolve(std::vector<std::string_view> pointers, std::vector<std::string_view> scalars) {
  return resolve_launch_layout("gemm", gemm_like_arguments(), pointers, scalars);
}

TEST(LaunchLayout, EachParameterTakesTheApplicationsValueOfItsNameByPosition) {
  LaunchLayout layout = resolve({"c", "a", "b"}, {"alpha"});
  ASSERT_EQ(layout.parameters.size(), 7u);
  EXPECT_EQ(layout.pointer_count, 3u);
  EXPECT_EQ(layout.scalar_count, 1u);
  EXPECT_TRUE(layout.has_tensor_maps);
  auto expect = [&](std::size_t index, ParameterFill fill, std::size_t position) {
    EXPECT_EQ(layout.parameters[index].fill, fill) << "parameter " << index;
    EXPECT_EQ(layout.parameters[index].position, position) << "parameter " << index;
  };
  expect(0, ParameterFill::pointer, 1);     // a: the second pointer given
  expect(1, ParameterFill::pointer, 2);     // b
  expect(2, ParameterFill::tensor_map, 0);  // a_map: over parameter 0
  expect(3, ParameterFill::pointer, 0);     // c: the first
  expect(4, ParameterFill::scalar, 0);      // alpha: given
  expect(5, ParameterFill::scratch, 0);
  expect(6, ParameterFill::default_scalar, 0);  // k: not given, its default
}

TEST(LaunchLayout, AKernelWithoutTensorMapsSaysSo) {
  std::vector<ArgumentPlan> arguments = {argument("x", "buffer", "f32"), argument("y", "buffer", "f32"),
                                         argument("a", "scalar", "f32")};
  std::vector<std::string_view> pointers = {"y", "x"};
  LaunchLayout layout = resolve_launch_layout("saxpy", arguments, pointers, {});
  EXPECT_FALSE(layout.has_tensor_maps);
  EXPECT_EQ(layout.parameters[0].position, 1u);
  EXPECT_EQ(layout.parameters[1].position, 0u);
  EXPECT_EQ(layout.parameters[2].fill, ParameterFill::default_scalar);
}

TEST(LaunchLayout, WrongNamesKindsRepeatsAndMissingBuffersAreNamed) {
  EXPECT_EQ(error_of([] { resolve({"a", "b", "c", "d"}, {}); }),
            "gemm: 'd' is not an argument the application sets (it sets a, b, c, alpha, k)");
  EXPECT_EQ(error_of([] { resolve({"a", "b", "c", "counters"}, {}); }),
            "gemm: 'counters' is not an argument the application sets (it sets a, b, c, alpha, k)");
  EXPECT_EQ(error_of([] { resolve({"a", "b", "c", "a_map"}, {}); }),
            "gemm: 'a_map' is not an argument the application sets (it sets a, b, c, alpha, k)");
  EXPECT_EQ(error_of([] { resolve({"a", "b", "c", "a"}, {}); }), "gemm: argument 'a' is set twice");
  EXPECT_EQ(error_of([] { resolve({"a", "b", "c"}, {"k", "k"}); }), "gemm: argument 'k' is set twice");
  EXPECT_EQ(error_of([] { resolve({"a", "b", "c", "alpha"}, {}); }), "gemm: argument 'alpha' is a scalar, it was given a pointer");
  EXPECT_EQ(error_of([] { resolve({"a", "b"}, {"c"}); }), "gemm: argument 'c' is a buffer, it was given a number");
  EXPECT_EQ(error_of([] { resolve({"a", "c"}, {}); }), "gemm: buffer argument 'b' was not set");
}

template <typename T>
T stored(const std::string& dtype, const Value& value) {
  ArgumentDescription description;
  description.name = "s";
  description.dtype = dtype;
  std::byte bytes[8] = {};
  store_scalar(description, value, bytes, "kernel");
  T result;
  std::memcpy(&result, bytes, sizeof result);
  return result;
}

TEST(LaunchLayout, ScalarsAreStoredInTheirDtype) {
  EXPECT_EQ(stored<float>("f32", 1e-5), 1e-5f);
  EXPECT_EQ(stored<double>("f64", std::int64_t{3}), 3.0);
  EXPECT_EQ(stored<std::int32_t>("i32", 7.9), 7);  // a real for an integer argument: truncated, as C++ converts
  EXPECT_EQ(stored<std::int64_t>("i64", std::int64_t{1} << 40), std::int64_t{1} << 40);
  EXPECT_EQ(stored<std::uint32_t>("u32", true), 1u);
  EXPECT_EQ(stored<std::uint16_t>("bf16", 1.0), 0x3f80);  // 1.0 in bfloat16
  EXPECT_EQ(stored<std::uint16_t>("f16", 1.0), 0x3c00);   // 1.0 in half
  EXPECT_EQ(error_of([] { stored<float>("f32", std::string("text")); }), "kernel: scalar argument s has the text value 'text'");
  EXPECT_EQ(error_of([] { stored<float>("c64", 1.0); }), "kernel: scalar argument s of type c64 is not supported by the runtime");
}

}  // namespace
}  // namespace kernlathe
