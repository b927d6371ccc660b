#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "compile_test_support.h"
#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"

namespace kernlathe {
namespace {

using compile_test::data_directory;
using compile_test::read_file;
using compile_test::TemporaryDirectory;

Parameter make_parameter(std::string name, ParameterType type, std::vector<Value> values) {
  Parameter parameter;
  parameter.name = std::move(name);
  parameter.type = type;
  parameter.default_value = values.front();
  parameter.values = std::move(values);
  return parameter;
}

// scale.cu with a space that has one parameter of each kind and derived values of each type.
KernelSpec scale_spec() {
  KernelSpec spec;
  spec.name = "scale";
  spec.template_file = data_directory() / "scale.cu";
  spec.entry_point = "scale";
  spec.template_arguments = {Expression::parse("BLOCK"), Expression::parse("NEGATE")};
  spec.space.name = "scale";
  spec.space.parameters = {
      make_parameter("BLOCK", ParameterType::integer, {std::int64_t{64}, std::int64_t{128}}),
      make_parameter("NEGATE", ParameterType::boolean, {false, true}),
      make_parameter("LAYOUT", ParameterType::enumeration, {std::string("row"), std::string("col")}),
      make_parameter("BIG", ParameterType::integer, {std::int64_t{5'000'000'000}}),
  };
  spec.space.derived = {{"ITEMS", Expression::parse("BLOCK * 2")}, {"RATIO", Expression::parse("BLOCK / 3")}};
  return spec;
}

const Configuration scale_configuration{std::int64_t{128}, true, std::string("col"), std::int64_t{5'000'000'000}};

TEST(Instantiate, PreludeDefinesEveryValueThenPointsLinesIntoTheTemplate) {
  KernelSpec spec = scale_spec();
  SpaceEnumerator space(spec.space, {});
  CompileRequest request = instantiate(spec, space, scale_configuration, "sm_90");
  EXPECT_EQ(request.source_name, "scale.cu");
  const std::string expected_prelude =
      "#define BLOCK 128\n"
      "#define NEGATE 1\n"
      "#define LAYOUT_col 1\n"
      "#define LAYOUT 1\n"
      "#define BIG 5000000000LL\n"
      "#define ITEMS 256\n"
      "#define RATIO 42.666666666666664\n"
      "#line 1 \"scale.cu\"\n";
  EXPECT_EQ(request.source, expected_prelude + read_file(data_directory() / "scale.cu"));
  EXPECT_EQ(request.name_expression, "scale<128, true>");
}

TEST(Instantiate, OptionsAndHeaders) {
  KernelSpec spec = scale_spec();
  SpaceEnumerator space(spec.space, {});
  CompileRequest request = instantiate(spec, space, scale_configuration, "sm_90");
  EXPECT_EQ(request.arch, "sm_90");
  // No -I for the template's folder: every project file reaches NVRTC as an in-memory header, so the cache key
  // covers all of them.
  std::vector<std::string> expected{"--std=c++17", "--gpu-architecture=sm_90"};
  if (!cuda_include_directory().empty()) expected.push_back("-I" + cuda_include_directory());
  EXPECT_EQ(request.options, expected);
  // Both files of the include chain, under the names NVRTC will be asked for, with their contents.
  ASSERT_EQ(request.headers.size(), 2u);
  EXPECT_EQ(request.headers[0].first, "scale_helpers.h");
  EXPECT_EQ(request.headers[0].second, read_file(data_directory() / "scale_helpers.h"));
  EXPECT_EQ(request.headers[1].first, "detail/scale_sign.h");
  EXPECT_EQ(request.headers[1].second, read_file(data_directory() / "detail" / "scale_sign.h"));
}

TEST(Instantiate, SpecOptionsKeptAndStandardNotDuplicated) {
  KernelSpec spec = scale_spec();
  spec.compile_options = {"-std=c++20", "-lineinfo"};
  spec.needs_arch_specific = true;
  SpaceEnumerator space(spec.space, {});
  CompileRequest request = instantiate(spec, space, scale_configuration, "sm_90");
  EXPECT_EQ(request.arch, "sm_90a");
  ASSERT_GE(request.options.size(), 3u);
  EXPECT_EQ(request.options[0], "-std=c++20");
  EXPECT_EQ(request.options[1], "-lineinfo");
  EXPECT_EQ(request.options[2], "--gpu-architecture=sm_90a");
  for (const std::string& option : request.options) EXPECT_NE(option, "--std=c++17");
}

TEST(Instantiate, EntryPointWithoutTemplateArguments) {
  KernelSpec spec = scale_spec();
  spec.entry_point = "plain_kernel";
  spec.template_arguments.clear();
  SpaceEnumerator space(spec.space, {});
  EXPECT_EQ(instantiate(spec, space, scale_configuration, "sm_80").name_expression, "plain_kernel");
}

TEST(Instantiate, TemplateArgumentsAreExpressions) {
  KernelSpec spec = scale_spec();
  spec.template_arguments = {Expression::parse("ITEMS // 2"), Expression::parse("not NEGATE")};
  SpaceEnumerator space(spec.space, {});
  EXPECT_EQ(instantiate(spec, space, scale_configuration, "sm_90").name_expression, "scale<128, false>");
}

TEST(Instantiate, ResultCompilesAndRunsTheIncludeChain) {
  KernelSpec spec = scale_spec();
  SpaceEnumerator space(spec.space, {});
  TemporaryDirectory cache;
  CompileResult result = compile_cubin(instantiate(spec, space, scale_configuration, "sm_90"), cache.path());
  ASSERT_TRUE(result.ok) << result.error << "\n" << result.log;
  EXPECT_EQ(result.lowered_name, "_Z5scaleILi128ELb1EEvPfif");
}

TEST(Instantiate, MissingTemplateIsAnInputErrorNamingTheFile) {
  KernelSpec spec = scale_spec();
  spec.template_file = data_directory() / "no_such_template.cu";
  SpaceEnumerator space(spec.space, {});
  try {
    instantiate(spec, space, scale_configuration, "sm_90");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("no_such_template.cu"), std::string::npos) << error.what();
  }
}

TEST(CollectIncludedFiles, ReadsTheDirectiveAsThePatternInTheHeaderComment) {
  // ^[ \t]*#[ \t]*include[ \t]*["<]([^">]+)[">], line by line, as the std::regex it replaced read it.
  TemporaryDirectory directory;
  for (const char* name : {"a.cuh", "b.cuh", "c.cuh", "d.cuh", "e.cuh", "f.cuh", "g.cuh", "h.cuh", "i<j.cuh"})
    std::ofstream(directory.path() / name) << "// " << name << "\n";
  const std::string source =
      "#include \"a.cuh\"\n"
      " \t# \tinclude \t<b.cuh>\n"
      "#include\"c.cuh\"\n"
      "#include <d.cuh\"\n"        // the delimiters need not match
      "// #include \"e.cuh\"\n"    // not at the start of the line
      "#include_next <f.cuh>\n"
      "#include \"\"\n"
      "#include \"g.cuh\n"         // never closed
      "#include <i<j.cuh>\n"
      "#include \"h.cuh\"\r\n"      // a CRLF line
      "#include \"a.cuh\"\n"       // once only
      "#include <cuda_fp16.h>";     // not beside the template: left to NVRTC
  std::vector<std::string> names;
  for (const auto& [name, contents] : collect_included_files(source, directory.path(), directory.path()))
    names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.cuh", "b.cuh", "c.cuh", "d.cuh", "i<j.cuh", "h.cuh"}));
}

TEST(DefineLine, RendersEachValueType) {
  EXPECT_EQ(define_line("N", Value{std::int64_t{-5}}), "#define N -5\n");
  EXPECT_EQ(define_line("N", Value{std::int64_t{2147483647}}), "#define N 2147483647\n");
  EXPECT_EQ(define_line("N", Value{std::int64_t{2147483648}}), "#define N 2147483648LL\n");
  EXPECT_EQ(define_line("N", Value{std::int64_t{-2147483649}}), "#define N -2147483649LL\n");
  EXPECT_EQ(define_line("FLAG", Value{false}), "#define FLAG 0\n");
  EXPECT_EQ(define_line("SCALE", Value{2.0}), "#define SCALE 2.0\n");  // stays a floating-point literal
  EXPECT_EQ(define_line("SCALE", Value{0.1}), "#define SCALE 0.10000000000000001\n");
  EXPECT_EQ(define_line("SCALE", Value{1e-30}), "#define SCALE 1.0000000000000001e-30\n");
  EXPECT_EQ(define_line("LAYOUT", Value{std::string("row-major")}, 0),
            "#define LAYOUT_row_major 1\n#define LAYOUT 0\n");
}

TEST(TemplateArgumentText, RendersEachValueType) {
  EXPECT_EQ(template_argument_text(Value{true}), "true");
  EXPECT_EQ(template_argument_text(Value{std::int64_t{-3}}), "-3");
  EXPECT_EQ(template_argument_text(Value{std::string("float")}), "float");
}

TEST(ArchFor, AddsTheArchSpecificSuffixFromHopperOn) {
  DeviceProperties hopper;
  hopper.arch_major = 9;
  hopper.arch_minor = 0;
  EXPECT_EQ(arch_for(hopper, false), "sm_90");
  EXPECT_EQ(arch_for(hopper, true), "sm_90a");
  DeviceProperties ampere;
  ampere.arch_major = 8;
  ampere.arch_minor = 6;
  EXPECT_EQ(arch_for(ampere, true), "sm_86");
}

}  // namespace
}  // namespace kernlathe
