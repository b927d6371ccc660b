// Row-wise softmax (fp32) through kernlathe's runtime, checked against a host computation in double precision.
// Usage: kernlathe_softmax_example EXPORT_DIR [ROWS COLS]   (EXPORT_DIR written by `tune export softmax -o EXPORT_DIR`)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <kernlathe/runtime.h>

#include "check_cuda.h"


int main(int argc, char** argv) {
  const std::filesystem::path export_dir = argc > 1 ? argv[1] : "export";
  const std::int64_t rows = argc > 3 ? std::atoll(argv[2]) : 4096;
  const std::int64_t cols = argc > 3 ? std::atoll(argv[3]) : 8192;
  try {
    CHECK_CUDA(cudaFree(nullptr));
    kernlathe::Runtime runtime(kernlathe::RuntimeOptions::from_export(export_dir));
    const kernlathe::Kernel& softmax = runtime.kernel("softmax", {{"ROWS", rows}, {"COLS", cols}});
    std::printf("softmax %lldx%lld: %s\n  %s\n  binary: %s\n", static_cast<long long>(rows), static_cast<long long>(cols),
                kernlathe::rung_name(softmax.selection().rung), softmax.selection().reason.c_str(),
                kernlathe::binary_source_name(softmax.binary_source()));

    std::vector<float> input(static_cast<std::size_t>(rows * cols)), output(input.size());
    std::mt19937 random(3);
    std::uniform_real_distribution<float> uniform(-8, 8);
    for (float& value : input) value = uniform(random);
    float *device_input = nullptr, *device_output = nullptr;
    CHECK_CUDA(cudaMalloc(&device_input, input.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&device_output, input.size() * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(device_input, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice));
    softmax.launch(kernlathe::Arguments().set("input", device_input).set("output", device_output));
    CHECK_CUDA(cudaMemcpy(output.data(), device_output, output.size() * sizeof(float), cudaMemcpyDeviceToHost));

    double worst = 0;
    for (std::int64_t row = 0; row < rows; ++row) {
      const float* x = input.data() + row * cols;
      double largest = x[0], sum = 0;
      for (std::int64_t col = 0; col < cols; ++col) largest = std::max(largest, static_cast<double>(x[col]));
      for (std::int64_t col = 0; col < cols; ++col) sum += std::exp(x[col] - largest);
      for (std::int64_t col = 0; col < cols; ++col) {
        double expected = std::exp(x[col] - largest) / sum;
        worst = std::max(worst, std::fabs(output[static_cast<std::size_t>(row * cols + col)] - expected) / (expected + 1e-30));
      }
    }
    std::printf("  largest relative error against the host: %.2e\n", worst);
    cudaFree(device_input), cudaFree(device_output);
    return worst < 1e-4 ? 0 : 1;
  } catch (const kernlathe::RuntimeError& error) {
    std::fprintf(stderr, "kernlathe: %s\n", error.what());
    return 1;
  }
}
