// kernlathe/stream.h without a GPU: what an item is and what the loader settings are for a selected configuration
// (the plan), the file readers an application feeds the pipeline from, and clear errors for what cannot work. Runs
// through the pipeline on a GPU are in tests/gpu/runtime_stream_device_test.cpp.
#include "kernlathe/stream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "tuner/loader/dataset.h"
#include "tuner/runtime/kernel_plan.h"

namespace kernlathe {
namespace {

// A streamed kernel as `tune` describes conv3x3_stream_small: images in, images out, loader settings in the space.
KernelDatabase streamed_database() {
  KernelDatabase database;
  database.kernel = "blur";
  KernelDescription& description = database.description;
  description.kernel = "blur";
  description.template_name = "blur.cu";
  description.spec_hash = "current";
  description.entry_point = "blur";
  description.problem = {{"W", 64}, {"H", 32}, {"IMAGES", 1000}};
  description.parameters = {{"BLOCK", "integer", {std::int64_t{64}, std::int64_t{128}}},
                            {"PINNED", "boolean", {false, true}},
                            {"WORKERS", "integer", {std::int64_t{1}, std::int64_t{4}}},
                            {"BATCH", "integer", {std::int64_t{16}, std::int64_t{256}}}};
  description.grid = {"ceil_div(W * H, BLOCK)", "BATCH", "1"};
  description.block = {"BLOCK", "1", "1"};
  description.arguments = {{"n", "scalar", "i32", "", "", "W * H", false, "", {}, {}, "", {}},
                           {"images", "buffer", "f32", "in", "W * H", "", false, "", {}, {}, "", {}},
                           {"weights", "buffer", "f32", "in", "9", "", false, "", {}, {}, "", {}},
                           {"blurred", "buffer", "f16", "out", "W * H", "", false, "", {}, {}, "", {}}};
  description.default_configuration = {{"BLOCK", std::int64_t{64}}, {"PINNED", false}, {"WORKERS", std::int64_t{1}},
                                       {"BATCH", std::int64_t{16}}};
  description.loader = {{"pinned", "PINNED"}, {"workers", "WORKERS"}, {"prefetch", "2 * WORKERS"}, {"batch", "BATCH"}};
  description.stream = StreamDescription{"images", "blurred", "f32", {"H", "W"}, "IMAGES"};
  DatabaseEntry entry;
  entry.device_name = "NVIDIA H200";
  entry.arch = "sm_90";
  entry.problem = {{"W", 64}, {"H", 32}, {"IMAGES", 1000}};
  entry.configuration = {{"BLOCK", std::int64_t{128}}, {"PINNED", true}, {"WORKERS", std::int64_t{4}},
                         {"BATCH", std::int64_t{256}}};
  entry.spec_hash = "current";
  database.entries = {entry};
  return database;
}

TemplateSource blur_source() {
  TemplateSource source;
  source.source_name = "blur.cu";
  source.text = "extern \"C\" __global__ void blur() {}\n";
  return source;
}

KernelPlan plan_of(KernelDatabase database, const Problem& problem = {}) {
  TemplateSource source = blur_source();
  database.description.template_hash = template_hash(source);
  DeviceIdentity device{"NVIDIA H200", 9, 0, {{"sm_count", std::int64_t{132}}}};
  return plan_kernel(database, source, device, problem);
}

TEST(StreamPlan, LoaderSettingsAndItemsComeFromTheSelectedConfiguration) {
  KernelPlan plan = plan_of(streamed_database());
  ASSERT_EQ(plan.selection.rung, Rung::exact) << plan.selection.reason;
  ASSERT_TRUE(plan.stream);
  const StreamPlan& stream = *plan.stream;
  EXPECT_EQ(stream.loader, (LoaderSettings{true, 4, 8, 1, 256, 0}));  // streams and chunk: the naive values
  EXPECT_EQ(stream.input_argument, 1);
  EXPECT_EQ(stream.output_argument, 3);
  EXPECT_EQ(stream.input_item.shape, (std::vector<std::int64_t>{32, 64}));
  EXPECT_EQ(stream.input_item.bytes(), 32u * 64u * 4u);
  EXPECT_EQ(stream.output_item.dtype, "f16");
  EXPECT_EQ(stream.output_item.bytes(), 32u * 64u * 2u);
  EXPECT_EQ(stream.tuned_items, 1000);
  EXPECT_EQ(plan.grid[1], 256);  // the launch grid covers one batch
  EXPECT_EQ(stream.loader.to_string(), "pinned=1 workers=4 prefetch=8 streams=1 batch=256 chunk=0");
}

TEST(StreamPlan, TheLastRungTakesTheDefaultConfigurationsLoader) {
  KernelDatabase database = streamed_database();
  database.entries.clear();
  KernelPlan plan = plan_of(database);
  ASSERT_EQ(plan.selection.rung, Rung::default_configuration);
  EXPECT_EQ(plan.stream->loader, (LoaderSettings{false, 1, 2, 1, 16, 0}));
}

TEST(StreamPlan, KernelsWithoutAStreamHaveNoStreamPlan) {
  KernelDatabase database = streamed_database();
  database.description.stream.reset();
  EXPECT_FALSE(plan_of(database).stream);
}

TEST(StreamPlan, MismatchesBetweenTheStreamAndTheArgumentsAreClearErrors) {
  auto expect_error = [](KernelDatabase database, const std::string& expected) {
    try {
      plan_of(std::move(database));
      FAIL() << "expected RuntimeError containing: " << expected;
    } catch (const RuntimeError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  };
  KernelDatabase database = streamed_database();
  database.description.stream->input = "n";
  expect_error(database, "the stream's input 'n' is not a buffer argument");
  database = streamed_database();
  database.description.stream->output = "missing";
  expect_error(database, "the stream's output 'missing' is not a buffer argument");
  database = streamed_database();
  database.description.stream->item_shape = {"H", "W", "3"};
  expect_error(database, "an item (6144 f32 elements) is not what the input buffer 'images' holds per item (2048 f32)");
  database = streamed_database();
  database.description.loader["workers"] = "WORKERS - 4";
  expect_error(database, "loader settings pinned=1 workers=0");
}

TEST(StreamDatabase, TheStreamSectionRoundTrips) {
  KernelDatabase database = streamed_database();
  KernelDatabase read = parse_database(database_json(database));
  ASSERT_TRUE(read.description.stream);
  EXPECT_EQ(*read.description.stream, *database.description.stream);
  EXPECT_EQ(read.description.loader, database.description.loader);
  database.description.stream.reset();
  EXPECT_FALSE(parse_database(database_json(database)).description.stream);
}

class ItemFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() / ("kernlathe-stream-files-" + std::to_string(::getpid()));
    std::filesystem::create_directories(directory_);
    // Two shards of 3 and 2 items of 2x4 floats; item i holds i*100 + element.
    write_shard("shard_0.npy", 0, 3);
    write_shard("shard_1.npy", 3, 2);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  void write_shard(const std::string& name, int first, int count) {
    std::vector<float> values;
    for (int item = first; item < first + count; ++item)
      for (int element = 0; element < 8; ++element) values.push_back(static_cast<float>(item * 100 + element));
    loader::write_npy(directory_ / name, Dtype::f32, {count, 2, 4}, std::as_bytes(std::span(values)));
  }

  std::filesystem::path directory_;
};

TEST_F(ItemFiles, EveryItemOfEveryMatchingFileInNameOrder) {
  std::vector<std::filesystem::path> files = files_matching((directory_ / "shard_*.npy").string());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename(), "shard_0.npy");
  std::unique_ptr<ItemSource> items = open_item_files(files, ItemLayout{"f32", {2, 4}});
  ASSERT_EQ(items->item_count(), 5);
  EXPECT_EQ(items->item_bytes(), 32u);
  // A batch across the two files.
  std::vector<float> batch(3 * 8);
  items->read(ItemBatch{1, 2, 3}, std::as_writable_bytes(std::span(batch)));
  EXPECT_EQ(batch[0], 200.0f);
  EXPECT_EQ(batch[8], 300.0f);
  EXPECT_EQ(batch[23], 407.0f);
  EXPECT_EQ(open_item_files(files, ItemLayout{"f32", {2, 4}}, FileFormat::npy, 4)->item_count(), 4);
}

TEST_F(ItemFiles, FilesThatDoNotFitAreClearErrors) {
  std::vector<std::filesystem::path> files = files_matching((directory_ / "shard_*.npy").string());
  auto expect_error = [](auto&& call, const std::string& expected) {
    try {
      call();
      FAIL() << "expected RuntimeError containing: " << expected;
    } catch (const RuntimeError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  };
  expect_error([&] { open_item_files(files, ItemLayout{"f32", {4, 2}}); }, "shard_0.npy");
  expect_error([&] { open_item_files(files, ItemLayout{"f16", {2, 4}}); }, "shard_0.npy");
  expect_error([&] { open_item_files(files, ItemLayout{"f32", {2, 4}}, FileFormat::npy, 6); },
               "hold 5 items of f32 (2, 4) in 2 files, but 6 are asked for");
  expect_error([&] { open_item_files(files, ItemLayout{"complex", {2, 4}}); }, "unknown dtype 'complex'");
  expect_error([&] { open_item_files({}, ItemLayout{"f32", {2, 4}}); }, "no files given");
  expect_error([&] { files_matching((directory_ / "nothing_*.npy").string()); }, "nothing_*.npy");
  expect_error([&] { files_matching((directory_ / "missing" / "*.npy").string()); }, "missing");
}

TEST(StreamedKernelWithoutGpu, AskingForOneIsARuntimeErrorNotACrash) {
  RuntimeOptions options;
  options.cubin_cache = "-";
  Runtime runtime(options);
  // No database knows it (and with no driver, nothing could launch it): an exception either way.
  EXPECT_THROW(StreamedKernel(runtime, "conv3x3_stream_small"), RuntimeError);
}

}  // namespace
}  // namespace kernlathe
