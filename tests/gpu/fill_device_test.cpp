// The GPU fill on a real GPU (issue 18): every dtype and kind of initialisation the specs use, compared byte for byte
// with the host fill (initial_contents), across many grid-stride rounds and past 2^31 elements, and timed against
// the host fill and its copy. Skips, saying why, where there is no driver or device.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tuner/driver/cuda_driver.h"
#include "tuner/gpu/device.h"
#include "tuner/gpu/driver_handles.h"
#include "tuner/run/buffer_fill.h"
#include "tuner/run/element_values.h"
#include "tuner/run/fill_kernels.h"
#include "tuner/run/worker_kernels.h"

namespace kernlathe {
namespace {

using Clock = std::chrono::steady_clock;

class FillOnDevice : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      const gpu::CudaDriver& cuda = gpu::cuda_driver();
      properties_ = gpu::query_device(0);
      CUdevice device = 0;
      KERNLATHE_CUDA_CHECK(cuda.cuDeviceGet(&device, 0));
      KERNLATHE_CUDA_CHECK(cuda.cuDevicePrimaryCtxRetain(&context_, device));
      KERNLATHE_CUDA_CHECK(cuda.cuCtxSetCurrent(context_));
    } catch (const NoGpuError& error) {
      skip_reason_ = error.what();
      return;
    }
    const std::filesystem::path cache =
        std::filesystem::temp_directory_path() / ("fill-device-test-" + std::to_string(::getpid()));
    const BuiltinCubin cubin = worker_kernels_cubin(all_dtypes, properties_.arch_major, properties_.arch_minor, cache);
    std::filesystem::remove_all(cache);
    CUmodule module = nullptr;
    KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuModuleLoadData(&module, cubin.cubin.data()));
    module_ = new gpu::LoadedModule(module);
  }

  static void TearDownTestSuite() {
    delete module_;
    module_ = nullptr;
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << "no GPU: " << skip_reason_;
    KERNLATHE_CUDA_CHECK(gpu::cuda_driver().cuCtxSetCurrent(context_));
  }

  // What the GPU fill writes, copied back; `on_gpu` says whether the kernel wrote it.
  static std::vector<std::byte> filled(Dtype dtype, std::int64_t count, const Initialisation& init, bool& on_gpu) {
    const gpu::CudaDriver& cuda = gpu::cuda_driver();
    const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(dtype);
    gpu::DeviceBuffer buffer(bytes);
    KERNLATHE_CUDA_CHECK(cuda.cuMemsetD8Async(buffer.get(), 0xA5, bytes, nullptr));
    on_gpu = BufferFill(module_->get()).fill(buffer.get(), dtype, count, init, nullptr, properties_.sm_count);
    KERNLATHE_CUDA_CHECK(cuda.cuCtxSynchronize());
    std::vector<std::byte> contents(bytes);
    KERNLATHE_CUDA_CHECK(cuda.cuMemcpyDtoH(contents.data(), buffer.get(), bytes));
    return contents;
  }

  static void expect_same_as_host(Dtype dtype, std::int64_t count, const Initialisation& init, const std::string& what) {
    bool on_gpu = false;
    const std::vector<std::byte> got = filled(dtype, count, init, on_gpu);
    EXPECT_TRUE(on_gpu) << dtype_name(dtype) << " " << what;
    const std::vector<std::byte> expected = initial_contents(dtype, count, init);
    ASSERT_EQ(got.size(), expected.size());
    if (std::memcmp(got.data(), expected.data(), got.size()) == 0) return;
    const std::size_t size = dtype_size(dtype);
    std::size_t index = 0;
    while (std::memcmp(got.data() + index * size, expected.data() + index * size, size) == 0) ++index;
    ADD_FAILURE() << dtype_name(dtype) << " " << what << ": element " << index << " is "
                  << load_element(dtype, got.data() + index * size) << ", the host wrote "
                  << load_element(dtype, expected.data() + index * size);
  }

  static Initialisation random_in(std::uint64_t seed, double low, double high) {
    Initialisation init;
    init.seed = seed;
    init.low = low;
    init.high = high;
    return init;
  }

  static inline DeviceProperties properties_;
  static inline CUcontext context_ = nullptr;
  static inline gpu::LoadedModule* module_ = nullptr;
  static inline std::string skip_reason_;
};

const Dtype every_dtype[] = {Dtype::f16, Dtype::bf16, Dtype::f32, Dtype::f64, Dtype::i8,
                             Dtype::u8,  Dtype::i32,  Dtype::u32, Dtype::i64};

TEST_F(FillOnDevice, EveryDtypeAndKindIsTheHostFillBitForBit) {
  // 3 million elements: more than the 16 blocks per SM of 256 threads that the grid holds, so each thread fills
  // several. The seeds and ranges of the shipped specs, then the conversions' edges.
  const std::int64_t count = 3'000'017;
  for (Dtype dtype : every_dtype) {
    expect_same_as_host(dtype, count, random_in(11, -1, 1), "seed 11 in [-1, 1)");
    expect_same_as_host(dtype, count, random_in(42, 0.5, 1.5), "seed 42 in [0.5, 1.5)");
    Initialisation constant;
    constant.kind = Initialisation::Kind::constant;
    constant.value = -7.75;
    expect_same_as_host(dtype, count, constant, "constant -7.75");
    Initialisation sequence;
    sequence.kind = Initialisation::Kind::sequence;
    sequence.start = 0.5;
    sequence.step = 0.25;
    expect_same_as_host(dtype, count, sequence, "sequence 0.5 + 0.25 i");
  }
  expect_same_as_host(Dtype::i8, count, random_in(5, -300, 300), "clamped to i8");
  expect_same_as_host(Dtype::u32, count, random_in(5, -5, 5e9), "clamped to u32");
  expect_same_as_host(Dtype::i64, count, random_in(5, -1e19, 1e19), "clamped to i64");
  expect_same_as_host(Dtype::f16, count, random_in(5, -70000, 70000), "f16 past its largest finite value");
  expect_same_as_host(Dtype::f16, count, random_in(5, -1e-6, 1e-6), "f16 subnormals");
  expect_same_as_host(Dtype::bf16, count, random_in(5, -3e38, 3e38), "bf16 near its largest value");
  expect_same_as_host(Dtype::f32, count, random_in(5, -1e-40, 1e-40), "f32 subnormals");
}

TEST_F(FillOnDevice, IndicesPast2To31AreFilled) {
  // 2^31 + 11 one-byte elements (2 GiB): the index arithmetic is 64-bit throughout.
  expect_same_as_host(Dtype::i8, (std::int64_t{1} << 31) + 11, random_in(3, -128, 128), "2^31 + 11 elements");
}

TEST_F(FillOnDevice, ARangeThatOverflowsStaysOnTheHost) {
  Initialisation init = random_in(1, -1.5e308, 1.5e308);  // high - low is infinite: NaN draws possible
  bool on_gpu = true;
  const std::vector<std::byte> got = filled(Dtype::f32, 1000, init, on_gpu);
  EXPECT_FALSE(on_gpu);
  EXPECT_EQ(got, initial_contents(Dtype::f32, 1000, init));
}

TEST_F(FillOnDevice, The256MiBInputOfSaxpyFillsInMilliseconds) {
  // Saxpy's x: 2^26 f32. Printed for the record (README, Tuning speed): the GPU fill against the host fill on every
  // core followed by its copy, which the worker did before.
  const gpu::CudaDriver& cuda = gpu::cuda_driver();
  const std::int64_t count = std::int64_t{1} << 26;
  const std::size_t bytes = static_cast<std::size_t>(count) * 4;
  const Initialisation init = random_in(1, -1, 1);
  gpu::DeviceBuffer buffer(bytes);
  const BufferFill fill(module_->get());
  ASSERT_TRUE(fill.fill(buffer.get(), Dtype::f32, count, init, nullptr, properties_.sm_count));  // warm
  KERNLATHE_CUDA_CHECK(cuda.cuCtxSynchronize());
  Clock::time_point start = Clock::now();
  fill.fill(buffer.get(), Dtype::f32, count, init, nullptr, properties_.sm_count);
  KERNLATHE_CUDA_CHECK(cuda.cuCtxSynchronize());
  const double gpu_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  start = Clock::now();
  const std::vector<std::byte> contents = initial_contents(Dtype::f32, count, init);
  const double host_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  start = Clock::now();
  KERNLATHE_CUDA_CHECK(cuda.cuMemcpyHtoD(buffer.get(), contents.data(), bytes));
  const double copy_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::printf("fill of 2^26 random f32 (256 MiB): GPU %.2f ms; host %.1f ms on %u threads + copy %.1f ms\n", gpu_ms,
              host_ms, std::max(1u, std::thread::hardware_concurrency()), copy_ms);
  EXPECT_LT(gpu_ms, host_ms + copy_ms);
}

}  // namespace
}  // namespace kernlathe
