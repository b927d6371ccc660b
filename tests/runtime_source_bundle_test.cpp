#include "tuner/runtime/source_bundle.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "compile_test_support.h"
#include "kernlathe/runtime.h"

namespace kernlathe {
namespace {

using compile_test::data_directory;
using compile_test::TemporaryDirectory;

TEST(SourceBundle, RoundTripsTheTemplateAndEveryHeader) {
  TemplateSource source = read_template_source(data_directory() / "scale.cu");
  ASSERT_EQ(source.headers.size(), 2u);
  KernelSources read = parse_source_bundle(source_bundle_json("scale", source), "scale.source.json");
  EXPECT_EQ(read.source.source_name, "scale.cu");
  EXPECT_EQ(read.source.text, source.text);
  EXPECT_EQ(read.source.headers, source.headers);
  EXPECT_EQ(read.template_hash, template_hash(source));
}

TEST(SourceBundle, AnEditedBundleIsRefused) {
  TemplateSource source = read_template_source(data_directory() / "scale.cu");
  std::string text = source_bundle_json("scale", source);
  std::string edited = text;
  edited.replace(edited.find("block_size"), 10, "block_sizz");
  try {
    parse_source_bundle(edited, "scale.source.json");
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("scale.source.json: contents hash to"), std::string::npos) << error.what();
  }
  EXPECT_THROW(parse_source_bundle("not json", "x.source.json"), RuntimeError);
}

// Sources with what JSON escapes or must check: quotes, backslashes, tabs, UTF-8 of two, three and four bytes, and
// where asked a control character (written as \u001b, which the bundle's own reader leaves to the JSON library).
TemplateSource awkward_source(bool control_character = false) {
  TemplateSource source;
  source.source_name = "awkward.cu";
  source.text = "// \"quoted\" \\ back\tslash / escape\n#include \"awkward.cuh\"\n";
  if (control_character) source.text += "// \x1b\n";
  source.headers = {{"awkward.cuh", "// caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x9a\x80\n"}, {"empty.cuh", ""}};
  return source;
}

TEST(SourceBundle, EveryWayOfWritingTheBundleReadsTheSameSources) {
  // The bundle is read by a reader of its own, which leaves anything unexpected to the JSON library; either way
  // the sources must be the ones written.
  for (bool control_character : {false, true}) {
    const TemplateSource source = awkward_source(control_character);
    const nlohmann::json written = nlohmann::json::parse(source_bundle_json("awkward", source));
    nlohmann::json annotated = written;
    annotated["note"] = {1, {{"a", nullptr}}};
    std::string reordered = "{\"headers\" : " + written["headers"].dump() + " ,\r\n\t\"text\":" + written["text"].dump() +
                            ", \"template_hash\": \"" + template_hash(source) + "\", \"template\": \"awkward.cu\", \"format\": 1}";
    const std::string slash = source_bundle_json("awkward", source);
    std::string escaped_slash = slash;
    escaped_slash.replace(escaped_slash.find(" / "), 3, " \\/ ");
    for (const std::string& text : {slash, written.dump(), written.dump(4), annotated.dump(), reordered, escaped_slash}) {
      const KernelSources read = parse_source_bundle(text, "awkward.source.json");
      EXPECT_EQ(read.source.source_name, source.source_name);
      EXPECT_EQ(read.source.text, source.text) << text;
      EXPECT_EQ(read.source.headers, source.headers) << text;
      EXPECT_EQ(read.template_hash, template_hash(source));
    }
  }
}

TEST(SourceBundle, BundlesThatAreNotJsonOrNotFormatOneAreRefused) {
  const std::string written = source_bundle_json("awkward", awkward_source());
  auto with_bytes = [&](const std::string& bytes) {
    std::string text = written;
    return text.replace(text.find("caf"), 3, bytes);
  };
  std::string format_two = written;
  format_two.replace(format_two.find("\"format\": 1"), std::string_view("\"format\": 1").size(), "\"format\": 2");
  std::string no_text = written;
  no_text.replace(no_text.find("\"text\": \"//"), 6, "\"txet\"");
  const std::vector<std::pair<std::string, std::string>> refused = {
      // Not UTF-8: a byte that never is, an overlong '/', a surrogate, above U+10FFFF, a sequence cut short.
      {with_bytes("\xff"), "not a readable source bundle"},
      {with_bytes("\xc0\xaf"), "not a readable source bundle"},
      {with_bytes("\xed\xa0\x80"), "not a readable source bundle"},
      {with_bytes("\xf4\x90\x80\x80"), "not a readable source bundle"},
      {with_bytes("\xe2\x80" "caf"), "not a readable source bundle"},
      {with_bytes("\x01"), "not a readable source bundle"},  // a control character as it is
      {format_two, "not a source bundle of format 1"},
      {no_text, "not a readable source bundle"},
      {written + "]", "not a readable source bundle"},
      {written.substr(0, written.size() / 2), "not a readable source bundle"},
  };
  for (const auto& [text, expected] : refused) {
    try {
      parse_source_bundle(text, "awkward.source.json");
      ADD_FAILURE() << "read: " << text;
    } catch (const RuntimeError& error) {
      EXPECT_NE(std::string(error.what()).find("awkward.source.json: " + expected), std::string::npos) << error.what();
    }
  }
}

TEST(SourceBundle, DirectoryLookupPrefersTheBundleThenTheTemplateFile) {
  TemporaryDirectory directory;
  TemplateSource source = read_template_source(data_directory() / "scale.cu");
  KernelSources from_template = read_kernel_sources(data_directory(), "scale", "scale.cu");  // the template itself
  EXPECT_EQ(from_template.source.headers.size(), 2u);
  EXPECT_EQ(from_template.template_hash, template_hash(source));
  std::ofstream(directory.path() / "scale.source.json") << source_bundle_json("scale", source);
  EXPECT_EQ(read_kernel_sources(directory.path(), "scale", "missing.cu").source.text, source.text);
  try {
    read_kernel_sources(directory.path(), "other", "other.cu");
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("neither other.source.json nor other.cu"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kernlathe
