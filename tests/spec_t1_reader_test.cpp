// Community T1 files (tuner/spec/t1_reader.h): the shipped benchmark kernels/t1/convolution_2d.T1.json (Values as
// Python expressions, Python constraints, a kernel description), small files of each form under tests/data/t4, and
// the schema's rules.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "tuner/spec/t1_reader.h"

namespace kernlathe {
namespace {

namespace fs = std::filesystem;

const fs::path source_directory = KERNLATHE_SOURCE_DIR;
const fs::path benchmark = source_directory / "kernels/t1/convolution_2d.T1.json";

std::vector<std::int64_t> integers(const Parameter& parameter) {
  std::vector<std::int64_t> result;
  for (const Value& value : parameter.values) result.push_back(std::get<std::int64_t>(value));
  return result;
}

// Writes `text` to a scratch file named `name` (in a folder of its own, beside a kernel file) and returns its path.
// The folder carries the process id: ctest runs each test in its own process, in parallel, and two tests writing
// kernel.cu in one folder read each other's half-written file.
fs::path scratch_file(const std::string& name, const std::string& text) {
  const fs::path directory = fs::temp_directory_path() / ("spec_t1_reader_test-" + std::to_string(::getpid()));
  fs::create_directories(directory);
  std::ofstream(directory / "kernel.cu") << "__global__ void scale(float* data, int n) {}\n";
  std::ofstream(directory / name) << text;
  return directory / name;
}

template <typename Function>
std::string message_of(Function function) {
  try {
    function();
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

// A runnable T1 file around kernel.cu; `parameters` and `arguments` are spliced in as JSON text.
std::string kernel_document(const std::string& parameters, const std::string& arguments,
                            const std::string& extra = "") {
  return R"({"ConfigurationSpace": {"TuningParameters": [)" + parameters + R"(], "Conditions": []},
  "KernelSpecification": {"Language": "CUDA", "KernelName": "scale", "KernelFile": "kernel.cu",
    "LocalSize": {"X": "block_size_x"}, "GlobalSize": {"X": "1"}, "ProblemSize": [1000], )" +
         extra + R"("Arguments": [)" + arguments + "]}}";
}
const std::string block_parameter = R"({"Name": "block_size_x", "Type": "int", "Values": "[32, 64]"})";
const std::string plain_arguments =
    R"({"Name": "data", "Type": "float", "MemoryType": "Vector", "Size": "ProblemSize[0]", "AccessType": "ReadWrite"},
       {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": "ProblemSize[0]"})";

TEST(T1Reader, PythonExpressionValuesAndConstraints) {
  Space space = read_t1_space(benchmark);
  ASSERT_EQ(space.parameters.size(), 6u);
  EXPECT_EQ(integers(space.parameters[0]),
            (std::vector<std::int64_t>{16, 32, 64, 128, 256}));                           // [2**i for i in range(4, 9)]
  EXPECT_EQ(integers(space.parameters[1]), (std::vector<std::int64_t>{1, 2, 4, 8, 16}));  // ... if 16 % i == 0
  EXPECT_EQ(integers(space.parameters[2]), (std::vector<std::int64_t>{1, 2, 3, 4}));      // list(range(1, 5))
  EXPECT_EQ(std::get<std::int64_t>(space.parameters[0].default_value), 32);
  EXPECT_EQ(std::get<std::int64_t>(space.parameters[1].default_value), 8);
  ASSERT_EQ(space.constraints.size(), 3u);
  EXPECT_EQ(space.constraints[0].expression.text(), "64 <= block_size_x * block_size_y <= 1024");
}

TEST(T1Reader, KernelSpecificationBecomesAKernelSpec) {
  KernelSpec spec = load_t1_kernel_spec(benchmark);
  EXPECT_EQ(spec.name, "t1_convolution_2d");
  EXPECT_EQ(spec.entry_point, "convolution_2d");
  EXPECT_EQ(spec.template_file, (source_directory / "kernels/t1/convolution_2d.cu").lexically_normal());
  EXPECT_EQ(spec.compile_options, (std::vector<std::string>{"-std=c++17"}));
  ASSERT_EQ(spec.problem.size(), 2u);
  EXPECT_EQ(spec.problem[0], (std::pair<std::string, std::int64_t>{"ProblemSize_0", 4096}));
  ASSERT_EQ(spec.arguments.size(), 5u);
  EXPECT_EQ(spec.arguments[0].role, Role::out);
  EXPECT_EQ(spec.arguments[0].init.kind, Initialisation::Kind::constant);
  EXPECT_EQ(spec.arguments[1].role, Role::in);
  EXPECT_EQ(spec.arguments[1].init.kind, Initialisation::Kind::random);
  EXPECT_EQ(spec.arguments[1].init.seed, 7u);
  const std::map<std::string, Value> problem{{"ProblemSize_0", Value{std::int64_t{4096}}},
                                             {"ProblemSize_1", Value{std::int64_t{4096}}}};
  // (ProblemSize[0] + max(filter_width) - 1) * (ProblemSize[1] + max(filter_height) - 1), filter 7 x 7.
  EXPECT_EQ(std::get<std::int64_t>(spec.arguments[1].count.evaluate(problem)), 4102 * 4102);
  EXPECT_EQ(std::get<std::int64_t>(spec.arguments[2].count.evaluate(problem)), 49);
  EXPECT_TRUE(spec.arguments[3].is_scalar());
  EXPECT_EQ(spec.arguments[3].dtype, Dtype::i32);
  EXPECT_EQ(std::get<std::int64_t>(spec.arguments[3].value.evaluate(problem)), 4096);
  // Grid: ceil(ProblemSize / (block * tile)) per dimension, as Kernel Tuner computes it from GridDivX/GridDivY.
  std::map<std::string, Value> configuration = problem;
  configuration["block_size_x"] = Value{std::int64_t{32}};
  configuration["tile_size_x"] = Value{std::int64_t{3}};
  configuration["block_size_y"] = Value{std::int64_t{16}};
  configuration["tile_size_y"] = Value{std::int64_t{1}};
  EXPECT_EQ(std::get<std::int64_t>(spec.launch.grid[0].evaluate(configuration)), 43);  // ceil(4096 / 96)
  EXPECT_EQ(std::get<std::int64_t>(spec.launch.grid[1].evaluate(configuration)), 256);
  EXPECT_EQ(std::get<std::int64_t>(spec.launch.grid[2].evaluate(configuration)), 1);
  EXPECT_EQ(std::get<std::int64_t>(spec.launch.block[1].evaluate(configuration)), 16);
  // T1 cannot say how to verify: the reference is the default configuration; no metrics.
  EXPECT_TRUE(spec.verification.enabled);
  EXPECT_TRUE(spec.verification.reference.empty());
  EXPECT_FALSE(spec.verification.reference_is_baseline);
  EXPECT_TRUE(spec.metrics.flops.empty());
}

TEST(T1Reader, ProblemOverridesAndTheSpecLoader) {
  KernelSpec spec = load_kernel_spec(benchmark, {{"ProblemSize_0", 1000}});
  EXPECT_EQ(spec.name, "t1_convolution_2d");  // load_kernel_spec reads .json as T1
  EXPECT_EQ(spec.problem[0].second, 1000);
  std::map<std::string, Value> configuration{{"ProblemSize_0", Value{std::int64_t{1000}}},
                                             {"block_size_x", Value{std::int64_t{64}}},
                                             {"tile_size_x", Value{std::int64_t{2}}}};
  EXPECT_EQ(std::get<std::int64_t>(spec.launch.grid[0].evaluate(configuration)), 8);  // ceil(1000 / 128)
  EXPECT_NE(message_of([] {
              load_t1_kernel_spec(benchmark, {{"N", 5}});
            }).find("its symbols are ProblemSize_0, ProblemSize_1"),
            std::string::npos);
}

TEST(T1Reader, GridWithoutGridDivIsProblemSizeOverTheBlock) {
  const fs::path file = scratch_file("plain.T1.json", kernel_document(block_parameter, plain_arguments));
  KernelSpec spec = load_t1_kernel_spec(file);
  EXPECT_EQ(spec.name, "plain");  // no BenchmarkName: the file's name
  EXPECT_EQ(spec.arguments[0].role, Role::inout);
  const std::map<std::string, Value> configuration{{"ProblemSize_0", Value{std::int64_t{1000}}},
                                                   {"block_size_x", Value{std::int64_t{64}}}};
  EXPECT_EQ(std::get<std::int64_t>(spec.launch.grid[0].evaluate(configuration)), 16);  // ceil(1000 / 64)
}

TEST(T1Reader, WithoutProblemSizeTheGridIsGlobalSize) {
  nlohmann::json document = nlohmann::json::parse(kernel_document(
      block_parameter, R"({"Name": "data", "Type": "float", "MemoryType": "Vector", "Size": 1000},
                          {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": 1000})"));
  document["KernelSpecification"].erase("ProblemSize");
  document["KernelSpecification"]["GlobalSize"]["X"] = "1000";
  const std::map<std::string, Value> configuration{{"block_size_x", Value{std::int64_t{64}}}};
  // OpenCL counts threads: the grid is ceil(1000 / 64) blocks.
  document["KernelSpecification"]["GlobalSizeType"] = "OpenCL";
  KernelSpec threads = load_t1_kernel_spec(scratch_file("opencl_size.T1.json", document.dump()));
  EXPECT_TRUE(threads.problem.empty());
  EXPECT_EQ(std::get<std::int64_t>(threads.launch.grid[0].evaluate(configuration)), 16);
  // CUDA (the default) counts blocks.
  document["KernelSpecification"].erase("GlobalSizeType");
  KernelSpec blocks = load_t1_kernel_spec(scratch_file("cuda_size.T1.json", document.dump()));
  EXPECT_EQ(std::get<std::int64_t>(blocks.launch.grid[0].evaluate(configuration)), 1000);
  EXPECT_EQ(std::get<std::int64_t>(blocks.arguments[1].value.evaluate(configuration)), 1000);
}

TEST(T1Reader, ValueTypesAndDuplicates) {
  Space space = read_t1_space(source_directory / "tests/data/t4/score.T1.json");
  // popsize is declared twice with the same values, as the hub's metatuning files do: it counts once.
  ASSERT_EQ(space.parameters.size(), 2u);
  EXPECT_EQ(integers(space.parameters[0]), (std::vector<std::int64_t>{10, 20, 30}));
  EXPECT_EQ(space.parameters[1].type, ParameterType::enumeration);
  ASSERT_EQ(space.parameters[1].values.size(), 2u);
  EXPECT_EQ(std::get<std::string>(space.parameters[1].values[0]), "1.0");  // Python's repr of the float
  EXPECT_EQ(std::get<std::string>(space.parameters[1].default_value), "2.0");

  const fs::path booleans = scratch_file(
      "booleans.T1.json",
      R"({"ConfigurationSpace": {"TuningParameters": [{"Name": "flag", "Type": "bool", "Values": "[True, False]"},
          {"Name": "layout", "Type": "string", "Values": "['row', 'column']"}]}})");
  Space typed = read_t1_space(booleans);
  EXPECT_EQ(typed.parameters[0].type, ParameterType::boolean);
  EXPECT_EQ(std::get<bool>(typed.parameters[0].values[1]), false);
  EXPECT_EQ(std::get<std::string>(typed.parameters[1].values[1]), "column");

  const fs::path clash = scratch_file(
      "clash.T1.json", R"({"ConfigurationSpace": {"TuningParameters": [{"Name": "a", "Type": "int", "Values": "[1]"},
                          {"Name": "a", "Type": "int", "Values": "[2]"}]}})");
  EXPECT_NE(message_of([&] { read_t1_space(clash); }).find("declared twice with different"), std::string::npos);
  const fs::path wrong_type = scratch_file(
      "wrong_type.T1.json",
      R"({"ConfigurationSpace": {"TuningParameters": [{"Name": "a", "Type": "int", "Values": "[1, 2.5]"}]}})");
  EXPECT_NE(message_of([&] { read_t1_space(wrong_type); }).find("parameter 'a' of Type int has the value 2.5"),
            std::string::npos);
}

TEST(T1Reader, ValuesNotUnderstoodNameTheFileParameterAndForm) {
  const std::string text = R"json({"ConfigurationSpace": {"TuningParameters": [
      {"Name": "block_size_x", "Type": "int", "Values": "np.arange(4)"}]}})json";
  const fs::path file = scratch_file("numpy.T1.json", text);
  const std::string message = message_of([&] { read_t1_space(file); });
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("parameter 'block_size_x'"), std::string::npos) << message;
  EXPECT_NE(message.find("'np.arange' is not one of range, list, tuple"), std::string::npos) << message;
}

TEST(T1Reader, SchemaRulesAreChecked) {
  using Json = nlohmann::json;
  Json document = Json::parse(R"({"ConfigurationSpace": {"TuningParameters": [
      {"Name": "a", "Values": "[1]"}, {"Name": "b", "Type": "int", "Values": [1, 2]}, {"Name": "c", "Type": "integer", "Values": "[1]"}],
      "Conditions": [{"Expression": "a < 2"}]}})");
  const std::vector<std::string> problems = t1_problems(document, false);
  ASSERT_EQ(problems.size(), 4u) << fmt::format("{}", fmt::join(problems, "\n"));
  EXPECT_EQ(problems[0], "ConfigurationSpace.TuningParameters[0]: no \"Type\" (required)");
  EXPECT_EQ(problems[1], "ConfigurationSpace.TuningParameters[1].Values: [1,2] is not a string");
  EXPECT_NE(problems[2].find("ConfigurationSpace.TuningParameters[2].Type: \"integer\" is not one of int, uint"),
            std::string::npos);
  EXPECT_EQ(problems[3], "ConfigurationSpace.Conditions[0]: no \"Parameters\" (required)");
  // The kernel description is required to run, and checked then.
  Json space_only = Json::parse(R"({"ConfigurationSpace": {"TuningParameters": []}})");
  EXPECT_TRUE(t1_problems(space_only, false).empty());
  EXPECT_EQ(t1_problems(space_only, true),
            (std::vector<std::string>{"the document: no \"KernelSpecification\" (required)"}));
  Json kernel = Json::parse(kernel_document(block_parameter, R"({"Type": "float", "Size": 4})"));
  kernel["KernelSpecification"]["Language"] = "Fortran";
  const std::vector<std::string> kernel_problems = t1_problems(kernel, true);
  ASSERT_EQ(kernel_problems.size(), 2u) << fmt::format("{}", fmt::join(kernel_problems, "\n"));
  EXPECT_NE(kernel_problems[0].find("KernelSpecification.Language: \"Fortran\" is not one of OpenCL, CUDA, Vulkan"),
            std::string::npos);
  EXPECT_EQ(kernel_problems[1], "KernelSpecification.Arguments[0]: no \"MemoryType\" (required)");
  // The shipped benchmark meets the schema (its Size strings are the one deviation published files make).
  std::ifstream stream(benchmark);
  EXPECT_TRUE(t1_problems(Json::parse(stream), true).empty());

  const fs::path file = scratch_file("schema.T1.json", document.dump());
  const std::string message = message_of([&] { read_t1_space(file); });
  EXPECT_NE(message.find("not a T1 file by the published schema"), std::string::npos) << message;
  EXPECT_NE(message.find("TuningParameters[1].Values"), std::string::npos) << message;
}

TEST(T1Reader, WhatTuneCannotRunIsAnError) {
  auto load_message = [](const std::string& name, const std::string& text) {
    const fs::path file = scratch_file(name, text);
    return message_of([&] { load_t1_kernel_spec(file); });
  };
  std::string opencl = kernel_document(block_parameter, plain_arguments);
  opencl.replace(opencl.find("\"CUDA\""), 6, "\"OpenCL\"");
  EXPECT_NE(load_message("opencl.T1.json", opencl).find("written in OpenCL; tune runs CUDA kernels"),
            std::string::npos);
  EXPECT_NE(load_message("constant.T1.json",
                         kernel_document(block_parameter, R"({"Name": "filter", "Type": "float", "MemoryType": "Vector",
                                                             "MemType": "Constant", "Size": 9})"))
                .find("constant memory"),
            std::string::npos);
  EXPECT_NE(load_message("float4.T1.json",
                         kernel_document(block_parameter,
                                         R"({"Name": "v", "Type": "float4", "MemoryType": "Vector", "Size": 9})"))
                .find("argument Type float4 is not supported"),
            std::string::npos);
  EXPECT_NE(load_message("generator.T1.json",
                         kernel_document(block_parameter, R"({"Name": "v", "Type": "float", "MemoryType": "Vector",
                                                             "FillType": "BinaryRaw", "Size": 9})"))
                .find("FillType BinaryRaw"),
            std::string::npos);
  EXPECT_NE(load_message("tuned_size.T1.json",
                         kernel_document(block_parameter, R"({"Name": "v", "Type": "float", "MemoryType": "Vector",
                                                             "Size": "block_size_x * 4"})"))
                .find("uses tuning parameter 'block_size_x'"),
            std::string::npos);
  std::string renamed = kernel_document(block_parameter, plain_arguments);
  renamed.replace(renamed.find("\"scale\""), 7, "\"scale_all\"");
  EXPECT_NE(load_message("renamed.T1.json", renamed).find("kernel 'scale_all' does not appear in"), std::string::npos);
}

TEST(T1Reader, PythonLiteralsReadBack) {
  EXPECT_EQ(python_literal(Value{std::int64_t{3}}), "3");
  EXPECT_EQ(python_literal(Value{1.0}), "1.0");
  EXPECT_EQ(python_literal(Value{0.5}), "0.5");
  EXPECT_EQ(python_literal(Value{true}), "True");
  EXPECT_EQ(python_literal(Value{std::string("it's")}), "'it\\'s'");
}

}  // namespace
}  // namespace kernlathe
