// The stream: and loader: sections of a kernel spec (issue 7): the shipped examples load, and bad input fails with
// the file, line and what is wrong.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "tuner/spec/spec_loader.h"
#include "tuner/spec/stream_section.h"

using namespace kernlathe;

namespace {

const std::string spec_file = std::string(KERNLATHE_SOURCE_DIR) + "/kernels/stream_test.yaml";

// A streamed spec whose stream and loader sections are replaced by the test. Line numbers: the stream section
// starts on line 14.
std::string spec_text(const std::string& stream_and_loader) {
  return "name: stream_test\n"                                          // 1
         "template: ../templates/stream_heavy.cu\n"                    // 2
         "entry: iterate\n"                                            // 3
         "template_arguments: [BLOCK, ITEMS]\n"                        // 4
         "space:\n"                                                    // 5
         "  parameters:\n"                                             // 6
         "    - {name: BLOCK, values: [128, 256], default: 256}\n"     // 7
         "    - {name: ITEMS, values: [1], default: 1}\n"              // 8
         "    - {name: BATCH, values: [1, 4], default: 1}\n"           // 9
         "problem: {N: 1024, IMAGES: 64}\n"                            // 10
         "arguments:\n"                                                // 11
         "  - {name: input, type: f32, count: N, role: in}\n"          // 12
         "  - {name: output, type: f32, count: N, role: out}\n"        // 13
         + stream_and_loader +                                         // 14...
         "launch: {block: [BLOCK], grid: [\"ceil_div(N, BLOCK)\", BATCH]}\n";
}

const std::string good_stream =
    "stream:\n"                                          // 14
    "  files: \"${DATA:-/tmp/x}/items_*.npy\"\n"         // 15
    "  items: IMAGES\n"                                  // 16
    "  item_shape: [N]\n"                                // 17
    "  input: input\n"                                   // 18
    "  output: output\n";                                // 19

std::string error_of(const std::string& text) {
  try {
    parse_kernel_spec(text, spec_file);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

TEST(StreamSpec, ParsesStreamAndLoaderExpressions) {
  KernelSpec spec = parse_kernel_spec(spec_text(good_stream + "loader: {pinned: BATCH > 1, prefetch: 2 * BATCH, batch: BATCH}\n"),
                                      spec_file);
  ASSERT_TRUE(spec.stream.enabled);
  EXPECT_EQ(spec.stream.source, StreamWorkload::SourceKind::files);
  EXPECT_EQ(spec.stream.pattern, "${DATA:-/tmp/x}/items_*.npy");
  EXPECT_EQ(spec.stream.format, StreamWorkload::FileFormat::npy);
  EXPECT_EQ(spec.stream.base_directory, std::filesystem::path(KERNLATHE_SOURCE_DIR) / "kernels");
  EXPECT_EQ(spec.stream.items.text(), "IMAGES");
  ASSERT_EQ(spec.stream.item_shape.size(), 1u);
  EXPECT_EQ(spec.stream.item_shape[0].text(), "N");
  EXPECT_EQ(spec.stream.input_argument, "input");
  EXPECT_EQ(spec.stream.output_argument, "output");
  EXPECT_EQ(spec.stream.dtype, Dtype::f32);
  EXPECT_EQ(spec.loader.prefetch.text(), "2 * BATCH");
  EXPECT_EQ(spec.loader.batch.text(), "BATCH");
  EXPECT_EQ(expr::to_string(spec.loader.pinned.evaluate(std::map<std::string, expr::Value>{{"BATCH", std::int64_t{4}}})), "true");
  EXPECT_TRUE(spec.loader.workers.empty());  // naive: one worker
  EXPECT_TRUE(spec.space.streamed);
}

TEST(StreamSpec, GeneratedSourceAndRawFormat) {
  KernelSpec generated = parse_kernel_spec(
      spec_text("stream: {generate: {random: {seed: 3, low: 0, high: 2}}, items: IMAGES, item_shape: [N], "
                "input: input, output: output}\n"),
      spec_file);
  EXPECT_EQ(generated.stream.source, StreamWorkload::SourceKind::generated);
  EXPECT_EQ(generated.stream.generator.seed, 3u);
  EXPECT_EQ(generated.stream.generator.high, 2.0);
  KernelSpec raw = parse_kernel_spec(
      spec_text("stream: {files: a/*.bin, format: raw, items: 8, item_shape: [N], input: input, output: output}\n"),
      spec_file);
  EXPECT_EQ(raw.stream.format, StreamWorkload::FileFormat::raw);
}

TEST(StreamSpec, ShippedExamplesLoad) {
  for (const char* name : {"conv3x3_stream_small", "conv3x3_stream_large", "stream_heavy"}) {
    KernelSpec spec = load_kernel_spec(std::string(KERNLATHE_SOURCE_DIR) + "/kernels/" + name + ".yaml");
    EXPECT_TRUE(spec.stream.enabled) << name;
    EXPECT_EQ(spec.loader.pinned.text(), "PINNED") << name;
    EXPECT_EQ(spec.loader.batch.text(), "BATCH") << name;
  }
}

TEST(StreamSpec, SpecWithoutStreamKeepsFreeFormLoaderSettings) {
  KernelSpec spec = parse_kernel_spec(spec_text("loader: {chunk: 4096}\n"), spec_file);
  EXPECT_FALSE(spec.stream.enabled);
  EXPECT_FALSE(spec.space.streamed);
  EXPECT_EQ(spec.loader.settings.at("chunk"), "4096");
}

TEST(StreamSpec, UnknownLoaderKeyOfAStreamedSpecNamesLineAndSuggestion) {
  std::string message = error_of(spec_text(good_stream + "loader:\n  pined: true\n"));
  EXPECT_NE(message.find("stream_test.yaml:21:"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown key 'pined' in loader"), std::string::npos) << message;
  EXPECT_NE(message.find("pinned"), std::string::npos) << message;
}

TEST(StreamSpec, LoaderExpressionWithUnknownName) {
  std::string message = error_of(spec_text(good_stream + "loader:\n  workers: WORKERZ\n"));
  EXPECT_NE(message.find("stream_test.yaml:21:"), std::string::npos) << message;
  EXPECT_NE(message.find("WORKERZ"), std::string::npos) << message;
}

TEST(StreamSpec, InputMustBeABufferArgument) {
  std::string text = good_stream;
  text.replace(text.find("input: input"), 12, "input: inptu");
  std::string message = error_of(spec_text(text));
  EXPECT_NE(message.find("stream_test.yaml:18:"), std::string::npos) << message;
  EXPECT_NE(message.find("'inptu', which is not a buffer argument"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'input'"), std::string::npos) << message;
}

TEST(StreamSpec, OutputMustNotBeAnInput) {
  std::string text = good_stream;
  text.replace(text.find("output: output"), 14, "output: input");
  std::string message = error_of(spec_text(text));
  EXPECT_NE(message.find("stream_test.yaml:19:"), std::string::npos) << message;
  EXPECT_NE(message.find("role: in"), std::string::npos) << message;
}

TEST(StreamSpec, ItemsMayNotDependOnParameters) {
  std::string text = good_stream;
  text.replace(text.find("items: IMAGES"), 13, "items: BATCH");
  std::string message = error_of(spec_text(text));
  EXPECT_NE(message.find("stream_test.yaml:16:"), std::string::npos) << message;
  EXPECT_NE(message.find("tuning parameter 'BATCH'"), std::string::npos) << message;
}

TEST(StreamSpec, ExactlyOneSource) {
  std::string both = error_of(spec_text(
      "stream: {files: a.npy, generate: {constant: 1}, items: 1, item_shape: [N], input: input, output: output}\n"));
  EXPECT_NE(both.find("stream_test.yaml:14:"), std::string::npos) << both;
  EXPECT_NE(both.find("exactly one source"), std::string::npos) << both;
  std::string format = error_of(spec_text(
      "stream: {generate: {constant: 1}, format: npy, items: 1, item_shape: [N], input: input, output: output}\n"));
  EXPECT_NE(format.find("applies to files only"), std::string::npos) << format;
}

TEST(StreamSpec, DtypeMustMatchTheInputArgument) {
  std::string message = error_of(spec_text(good_stream + "  dtype: f64\n"));
  EXPECT_NE(message.find("stream_test.yaml:20:"), std::string::npos) << message;
  EXPECT_NE(message.find("stream.dtype f64 differs from the dtype f32"), std::string::npos) << message;
}

TEST(StreamSpec, UnknownStreamKey) {
  std::string message = error_of(spec_text(good_stream + "  item_shap: [N]\n"));
  EXPECT_NE(message.find("unknown key 'item_shap' in stream"), std::string::npos) << message;
}

TEST(StreamSpec, FilePatternsWithWellFormedReferences) {
  EXPECT_EQ(spec_loading::file_pattern_problem("${DATA:-/tmp/x}/items_*.npy"), std::nullopt);
  EXPECT_EQ(spec_loading::file_pattern_problem("${A}/${B_2}/x.npy"), std::nullopt);
  EXPECT_EQ(spec_loading::file_pattern_problem("plain/$HOME/x.npy"), std::nullopt);  // no '{': text, not a reference
}

TEST(StreamSpec, MalformedFilePatternReferences) {
  EXPECT_EQ(spec_loading::file_pattern_problem("a/${DATA/x.npy").value_or(""),
            "the '${' at character 3 has no closing '}' (write ${NAME} or ${NAME:-default})");
  EXPECT_EQ(spec_loading::file_pattern_problem("${}/x").value_or("").rfind(
                "'${}' at character 1 does not name an environment variable", 0),
            0u);
  EXPECT_EQ(spec_loading::file_pattern_problem("${1A}/x").value_or("").rfind("'${1A}' at character 1", 0), 0u);
  EXPECT_EQ(spec_loading::file_pattern_problem("${A B}/x").value_or("").rfind("'${A B}' at character 1", 0), 0u);
  EXPECT_EQ(spec_loading::file_pattern_problem("${A:-${B}}/x").value_or(""),
            "the default of '${A' at character 1 holds another '${': defaults are plain text");
}

TEST(StreamSpec, MalformedPatternInASpecNamesTheLineAndThePatternAsWritten) {
  std::string text = good_stream;
  text.replace(text.find("${DATA:-/tmp/x}"), 15, "${DATA:-/tmp/x");
  std::string message = error_of(spec_text(text));
  EXPECT_EQ(message, spec_file + ":15:10: stream.files '${DATA:-/tmp/x/items_*.npy': the '${' at character 1 has "
                                 "no closing '}' (write ${NAME} or ${NAME:-default})");
}

}  // namespace
