// A stream of single-channel fp32 images from .npy files through the tuned 3x3 convolution, with the loader settings
// (pinned staging, host workers, prefetch, streams, batch) tuned for this GPU. Every result is checked on the host
// while the stream runs: each host worker checks the batches it hands back.
// Usage: kernlathe_stream_conv3x3_example EXPORT_DIR 'DATA/images_*.npy' [KERNEL] [--naive]
//   EXPORT_DIR written by `tune export conv3x3_stream_small -o EXPORT_DIR`; the images by scripts/make_stream_data.sh
//   (or any .npy files of fp32 images of the kernel's size, one per file or many along a leading dimension).
//   KERNEL: conv3x3_stream_small (64x64 images, the default) or conv3x3_stream_large (2048x2048).
//   --naive: one worker, pageable staging, one batch in flight, one stream, for comparison.
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <kernlathe/stream.h>

#include "check_cuda.h"

namespace {

// out[y][x] = sum over dy, dx in {-1, 0, 1} of filter[dy + 1][dx + 1] * in[y + dy][x + dx], zero outside the image.
float convolved(const float* image, const float* filter, std::int64_t width, std::int64_t height, std::int64_t x,
                std::int64_t y) {
  double sum = 0;
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      std::int64_t yy = y + dy, xx = x + dx;
      if (yy >= 0 && yy < height && xx >= 0 && xx < width) sum += double{filter[(dy + 1) * 3 + dx + 1]} * image[yy * width + xx];
    }
  }
  return static_cast<float>(sum);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  bool naive = false;
  for (int index = 1; index < argc; ++index) {
    if (std::string(argv[index]) == "--naive") naive = true;
    else positional.push_back(argv[index]);
  }
  if (positional.size() < 2) {
    std::fprintf(stderr, "usage: %s EXPORT_DIR 'DATA/images_*.npy' [KERNEL] [--naive]\n", argv[0]);
    return 2;
  }
  const std::string kernel_name = positional.size() > 2 ? positional[2] : "conv3x3_stream_small";
  try {
    CHECK_CUDA(cudaFree(nullptr));
    kernlathe::Runtime runtime(kernlathe::RuntimeOptions::from_export(positional[0]));
    kernlathe::StreamedKernel conv(runtime, kernel_name);
    if (naive) conv.set_loader({false, 1, 1, 1, conv.loader().batch, 0});
    std::printf("%s: %s\n  %s\n  binary: %s\n  loader: %s\n", kernel_name.c_str(),
                kernlathe::rung_name(conv.kernel().selection().rung), conv.kernel().selection().reason.c_str(),
                kernlathe::binary_source_name(conv.kernel().binary_source()), conv.loader().to_string().c_str());

    // The images: any number of files, read by the pipeline's host workers; the source checks their headers now.
    const std::vector<std::int64_t>& shape = conv.input_item().shape;  // {height, width}
    const std::int64_t height = shape.at(0), width = shape.at(1);
    auto images = kernlathe::open_item_files(kernlathe::files_matching(positional[1]), conv.input_item());
    std::printf("  %lld images of %lldx%lld from %s\n", static_cast<long long>(images->item_count()),
                static_cast<long long>(width), static_cast<long long>(height), positional[1].c_str());

    const float filter[9] = {0.0625f, 0.125f, 0.0625f, 0.125f, 0.25f, 0.125f, 0.0625f, 0.125f, 0.0625f};  // a blur
    float* device_filter = nullptr;
    CHECK_CUDA(cudaMalloc(&device_filter, sizeof filter));
    CHECK_CUDA(cudaMemcpy(device_filter, filter, sizeof filter, cudaMemcpyHostToDevice));

    // The consumer runs on the host workers, several batches at once: it reads the batch's images back from the
    // source (the application's own copy would do as well) and checks every output pixel.
    const std::size_t image_elements = static_cast<std::size_t>(width * height);
    std::atomic<std::int64_t> checked{0}, wrong{0};
    auto check = [&](const kernlathe::ItemBatch& batch, std::span<const std::byte> results) {
      std::vector<float> inputs(static_cast<std::size_t>(batch.item_count) * image_elements);
      images->read(batch, std::as_writable_bytes(std::span(inputs)));
      const float* outputs = reinterpret_cast<const float*>(results.data());
      for (std::int64_t item = 0; item < batch.item_count; ++item) {
        const float* image = inputs.data() + item * image_elements;
        const float* output = outputs + item * image_elements;
        for (std::int64_t y = 0; y < height; ++y) {
          for (std::int64_t x = 0; x < width; ++x) {
            float expected = convolved(image, filter, width, height, x, y);
            if (!(std::fabs(output[y * width + x] - expected) <= 1e-5f + 1e-5f * std::fabs(expected))) {
              if (wrong++ < 3)
                std::fprintf(stderr, "  image %lld pixel (%lld, %lld): got %g, expected %g\n",
                             static_cast<long long>(batch.first_item + item), static_cast<long long>(x),
                             static_cast<long long>(y), output[y * width + x], expected);
            }
          }
        }
      }
      checked += batch.item_count;
    };
    kernlathe::StreamReport report = conv.run(*images, kernlathe::Arguments().set("filter", device_filter), check);
    std::printf("  %lld images in %lld batches, %.3f s: %.0f images/s, %.2f GB/s host to device, GPU busy %.0f%%\n",
                static_cast<long long>(report.items), static_cast<long long>(report.batches), report.seconds,
                report.items_per_second, report.input_gbps, 100 * report.gpu_busy_fraction);
    std::printf("  checked %lld images on the host: %lld pixels wrong\n", static_cast<long long>(checked.load()),
                static_cast<long long>(wrong.load()));
    cudaFree(device_filter);
    return wrong == 0 && checked == images->item_count() ? 0 : 1;
  } catch (const kernlathe::RuntimeError& error) {
    std::fprintf(stderr, "kernlathe: %s\n", error.what());
    return 1;
  }
}
