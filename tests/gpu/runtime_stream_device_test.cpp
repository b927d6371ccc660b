// Streamed kernels through the runtime on a real GPU (kernlathe/stream.h): images written as .npy files go through
// kernlathe::StreamedKernel with a tuned-looking configuration (pinned staging, several workers and streams, a
// short last batch), and every result matches a CPU 3x3 convolution; the naive loader gives the same results; a
// consumer's exception and a source of the wrong item size are errors, not crashes.
// Skips, saying why, where there is no driver or device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <unistd.h>

#include "gpu_test_support.h"
#include "kernlathe/stream.h"
#include "tuner/cache/kernel_description.h"
#include "tuner/driver/cuda_driver.h"
#include "tuner/gpu/device.h"
#include "tuner/loader/dataset.h"
#include "tuner/spec/spec_loader.h"

namespace kernlathe {
namespace {

const std::filesystem::path source_directory = from_environment("KERNLATHE_SOURCE_DIR", KERNLATHE_SOURCE_DIR);

// out[y][x] = sum over dy, dx in {-1, 0, 1} of filter[dy + 1][dx + 1] * in[y + dy][x + dx], zero outside.
std::vector<float> convolve(const float* image, const std::vector<float>& filter, int width, int height) {
  std::vector<float> out(static_cast<std::size_t>(width) * height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      double sum = 0;
      for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
          int yy = y + dy, xx = x + dx;
          if (yy < 0 || yy >= height || xx < 0 || xx >= width) continue;
          sum += static_cast<double>(filter[static_cast<std::size_t>((dy + 1) * 3 + dx + 1)]) *
                 image[static_cast<std::size_t>(yy) * width + xx];
        }
      }
      out[static_cast<std::size_t>(y) * width + x] = static_cast<float>(sum);
    }
  }
  return out;
}

class StreamedRuntimeOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      properties_ = gpu::query_device(0);
    } catch (const NoGpuError& error) {
      GTEST_SKIP() << "no usable GPU: " << error.what();
    }
    directory_ = std::filesystem::temp_directory_path() / fmt::format("kernlathe-stream-device-test-{}", ::getpid());
    std::filesystem::create_directories(directory_ / "database");
    std::filesystem::create_directories(directory_ / "images");
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  // A database for the spec holding one entry for this device with the given parameter values (the rest from the
  // space's middle configuration).
  void write_database(const KernelSpec& spec, const std::map<std::string, Value>& values) {
    Constants constants = device_property_values(properties_);
    for (const auto& [symbol, value] : spec.problem) constants.emplace_back(symbol, Value{value});
    SpaceEnumerator space(spec.space, constants);
    Configuration configuration = space.at(space.valid_count() / 2);
    for (const auto& [name, value] : values)
      for (std::size_t index = 0; index < spec.space.parameters.size(); ++index)
        if (spec.space.parameters[index].name == name) configuration[index] = value;
    ASSERT_TRUE(space.is_valid(configuration)) << to_string(spec.space, configuration);
    KernelDatabase database;
    database.kernel = spec.name;
    database.description = describe_kernel(spec, space);
    DatabaseEntry entry;
    entry.device_name = properties_.name;
    entry.arch = properties_.arch_name();
    entry.problem = Problem(spec.problem.begin(), spec.problem.end());
    entry.configuration = configuration_values(spec.space, configuration);
    entry.spec_hash = database.description.spec_hash;
    database.entries = {entry};
    std::ofstream(directory_ / "database" / (spec.name + ".json")) << database_json(database);
  }

  // `images` random images of width x height in shards of at most `per_file`; returns them all, in order.
  std::vector<float> write_images(int images, int width, int height, int per_file) {
    std::mt19937 generator(11);
    std::uniform_real_distribution<float> uniform(-1, 1);
    std::vector<float> all(static_cast<std::size_t>(images) * width * height);
    for (float& value : all) value = uniform(generator);
    const std::size_t image_elements = static_cast<std::size_t>(width) * height;
    for (int first = 0, shard = 0; first < images; first += per_file, ++shard) {
      int count = std::min(per_file, images - first);
      std::span<const float> part(all.data() + first * image_elements, count * image_elements);
      loader::write_npy(directory_ / "images" / fmt::format("images_{:03}.npy", shard), Dtype::f32, {count, height, width},
                        std::as_bytes(part));
    }
    return all;
  }

  RuntimeOptions options() const {
    RuntimeOptions runtime_options;
    runtime_options.databases = {directory_ / "database"};
    runtime_options.sources = source_directory / "templates";
    runtime_options.cubin_cache = "-";
    return runtime_options;
  }

  // Streams every image through the kernel and checks every result element against the CPU convolution.
  StreamReport stream_and_check(StreamedKernel& kernel, const std::vector<float>& images, int width, int height) {
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    std::vector<float> filter = {0.1f, -0.2f, 0.3f, 0.4f, 1.0f, -0.6f, 0.7f, 0.8f, -0.9f};
    CUdeviceptr device_filter = 0;
    KERNLATHE_CUDA_CHECK(cuda.cuMemAlloc(&device_filter, sizeof(float) * 9));
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyHtoD(device_filter, filter.data(), sizeof(float) * 9));

    auto source = open_item_files(files_matching((directory_ / "images" / "images_*.npy").string()), kernel.input_item());
    const std::size_t image_elements = static_cast<std::size_t>(width) * height;
    std::vector<float> results(images.size(), std::nanf(""));
    std::vector<int> seen(static_cast<std::size_t>(source->item_count()), 0);
    StreamReport report = kernel.run(*source, Arguments().set("filter", reinterpret_cast<const void*>(device_filter)),
                                     [&](const ItemBatch& batch, std::span<const std::byte> output) {
                                       ASSERT_EQ(output.size(), static_cast<std::size_t>(batch.item_count) * image_elements * sizeof(float));
                                       std::memcpy(results.data() + batch.first_item * image_elements, output.data(), output.size());
                                       for (std::int64_t item = 0; item < batch.item_count; ++item) ++seen[static_cast<std::size_t>(batch.first_item + item)];
                                     });
    KERNLATHE_CUDA_CHECK(cuda.cuMemFree(device_filter));
    for (int count : seen) EXPECT_EQ(count, 1);
    std::size_t failures = 0;
    for (std::size_t image = 0; image < seen.size(); ++image) {
      std::vector<float> expected = convolve(images.data() + image * image_elements, filter, width, height);
      for (std::size_t element = 0; element < image_elements; ++element) {
        float got = results[image * image_elements + element];
        float want = expected[element];
        if (!(std::abs(got - want) <= 1e-5f + 1e-5f * std::abs(want)) && failures++ < 3)
          ADD_FAILURE() << "image " << image << " element " << element << ": got " << got << ", expected " << want;
      }
    }
    EXPECT_EQ(failures, 0u);
    return report;
  }

  DeviceProperties properties_;
  std::filesystem::path directory_;
};

TEST_F(StreamedRuntimeOnDevice, SmallImagesWithTheTunedLoaderMatchTheCpuAndSoDoesTheNaiveLoader) {
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "conv3x3_stream_small.yaml");
  write_database(spec, {{"BLOCK_X", std::int64_t{64}}, {"TILE_X", std::int64_t{4}}, {"ALGORITHM", std::int64_t{2}},
                        {"PINNED", true}, {"WORKERS", std::int64_t{4}}, {"PREFETCH", std::int64_t{8}},
                        {"STREAMS", std::int64_t{2}}, {"BATCH", std::int64_t{128}}});
  // 1000 images: 7 full batches of 128 and a short one of 104, from shards of 300.
  std::vector<float> images = write_images(1000, 64, 64, 300);
  Runtime runtime(options());
  StreamedKernel kernel(runtime, "conv3x3_stream_small");
  EXPECT_EQ(kernel.kernel().selection().rung, Rung::exact) << kernel.kernel().selection().reason;
  EXPECT_EQ(kernel.loader(), (LoaderSettings{true, 4, 8, 2, 128, 0}));
  EXPECT_EQ(kernel.input_item().shape, (std::vector<std::int64_t>{64, 64}));
  EXPECT_EQ(kernel.input_argument(), "input");
  EXPECT_EQ(kernel.output_argument(), "output");

  StreamReport tuned = stream_and_check(kernel, images, 64, 64);
  EXPECT_EQ(tuned.items, 1000);
  EXPECT_EQ(tuned.batches, 8);
  EXPECT_LE(tuned.max_in_flight, 8);
  std::printf("[ stream   ] tuned %s: %.0f images/s, %.2f GB/s in, GPU busy %.0f%%\n", tuned.loader.to_string().c_str(),
              tuned.items_per_second, tuned.input_gbps, 100 * tuned.gpu_busy_fraction);

  kernel.set_loader(LoaderSettings{false, 1, 1, 1, 128, 0});
  StreamReport naive = stream_and_check(kernel, images, 64, 64);
  EXPECT_EQ(naive.max_in_flight, 1);
  std::printf("[ stream   ] naive %s: %.0f images/s\n", naive.loader.to_string().c_str(), naive.items_per_second);
  EXPECT_THROW(kernel.set_loader(LoaderSettings{false, 1, 1, 1, 64, 0}), RuntimeError);  // the grid covers 128
}

TEST_F(StreamedRuntimeOnDevice, LargeImagesInChunksMatchTheCpu) {
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "conv3x3_stream_large.yaml");
  write_database(spec, {{"PINNED", true}, {"WORKERS", std::int64_t{2}}, {"PREFETCH", std::int64_t{4}},
                        {"STREAMS", std::int64_t{2}}, {"BATCH", std::int64_t{2}}, {"CHUNK_MB", std::int64_t{4}}});
  std::vector<float> images = write_images(5, 2048, 2048, 2);
  Runtime runtime(options());
  StreamedKernel kernel(runtime, "conv3x3_stream_large");
  EXPECT_EQ(kernel.loader().chunk_bytes, 4 << 20);
  StreamReport report = stream_and_check(kernel, images, 2048, 2048);
  EXPECT_EQ(report.batches, 3);
}

TEST_F(StreamedRuntimeOnDevice, ConsumerExceptionsAndWrongItemSizesAreErrors) {
  KernelSpec spec = load_kernel_spec(source_directory / "kernels" / "conv3x3_stream_small.yaml");
  write_database(spec, {{"PINNED", true}, {"WORKERS", std::int64_t{2}}, {"PREFETCH", std::int64_t{4}},
                        {"BATCH", std::int64_t{64}}});
  write_images(300, 64, 64, 300);
  Runtime runtime(options());
  StreamedKernel kernel(runtime, "conv3x3_stream_small");
  CUdeviceptr filter = 0;
  KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuMemAlloc(&filter, sizeof(float) * 9));
  Arguments arguments;
  arguments.set("filter", reinterpret_cast<const void*>(filter));
  auto images = open_item_files(files_matching((directory_ / "images" / "*.npy").string()), kernel.input_item());
  struct ConsumerFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  EXPECT_THROW(kernel.run(*images, arguments, [](const ItemBatch& batch, std::span<const std::byte>) {
    if (batch.index == 2) throw ConsumerFailure("disk full");
  }), ConsumerFailure);
  // The pipeline is usable again after a failed run.
  EXPECT_EQ(kernel.run(*images, arguments, nullptr).items, 300);

  // Items of another size, and a source whose read fails: RuntimeErrors, the second naming the batch.
  struct Synthetic : ItemSource {
    std::size_t bytes = 0;
    std::int64_t failing_batch = -1;
    std::int64_t item_count() const override { return 256; }
    std::size_t item_bytes() const override { return bytes; }
    void read(const ItemBatch& batch, std::span<std::byte> destination) const override {
      if (batch.index == failing_batch) throw std::runtime_error("the camera went away");
      std::memset(destination.data(), 0, destination.size());
    }
  };
  Synthetic wrong_size;
  wrong_size.bytes = 100;
  EXPECT_THROW(kernel.run(wrong_size, arguments, nullptr), RuntimeError);
  Synthetic failing;
  failing.bytes = 64 * 64 * sizeof(float);
  failing.failing_batch = 1;
  try {
    kernel.run(failing, arguments, nullptr);
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("the camera went away"), std::string::npos) << error.what();
  }
  EXPECT_THROW(kernel.run(*images, Arguments(arguments).set("input", reinterpret_cast<const void*>(filter)), nullptr), RuntimeError);
  KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuMemFree(filter));
}

}  // namespace
}  // namespace kernlathe
