#include "tuner/runtime/source_bundle.h"

#include <gtest/gtest.h>

#include <fstream>

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
