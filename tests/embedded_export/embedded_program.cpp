// An application of the runtime library that ships its kernel in the C++ file `tune export --embed` wrote
// (tests/embedded_export_check.sh): no database, source or cubin file, and no NVRTC.
//
//   embedded_program select   what the runtime finds embedded, and what it would launch on the sm_90 boards of
//                             either SM count, without a GPU
//   embedded_program launch   launches the kernel from its embedded cubin and checks every output; exit 77 (skipped)
//                             where there is no GPU
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <kernlathe/embedded.h>
#include <kernlathe/runtime.h>

namespace {

constexpr int skipped = 77;  // ctest's SKIP_RETURN_CODE for this test

int fail(const std::string& why) {
  std::fprintf(stderr, "embedded_program: %s\n", why.c_str());
  return 1;
}

kernlathe::RuntimeOptions embedded_only() {
  kernlathe::RuntimeOptions options;
  options.cubin_cache = "-";  // nothing from the disk cache: the binary is embedded or the test fails
  return options;
}

// An sm_90 board as the driver describes it, with the properties the kernel's expressions read.
kernlathe::DeviceIdentity sm90_board(const char* name, std::int64_t sm_count) {
  return {name, 9, 0, {{"sm_count", sm_count}, {"max_threads_per_sm", std::int64_t{2048}}, {"max_threads_per_block", std::int64_t{1024}}}};
}

int select_without_gpu() {
  const kernlathe::EmbeddedKernel* embedded = nullptr;
  for (const kernlathe::EmbeddedKernel* kernel : kernlathe::embedded_kernels()) {
    std::printf("embedded: %s with %zu cubins\n", kernel->name, kernel->cubin_count);
    if (std::strcmp(kernel->name, "stride") == 0) embedded = kernel;
  }
  if (embedded == nullptr) return fail("the kernel 'stride' is not registered: the generated file was not linked in");
  if (embedded->cubin_count == 0) return fail("'stride' has no embedded cubin");
  kernlathe::Runtime runtime(embedded_only());
  const kernlathe::KernelDatabase& database = runtime.database("stride");
  if (database.entries.size() != 1) return fail("the embedded database holds " + std::to_string(database.entries.size()) + " entries, not 1");
  for (const kernlathe::DeviceIdentity& board : {sm90_board("NVIDIA H100 80GB HBM3", 132), sm90_board("NVIDIA H100 PCIe", 114)}) {
    const kernlathe::Selection selection = kernlathe::select(database, board, {});
    if (!selection.usable()) return fail(board.name + ": " + selection.reason);
    std::printf("%s: %s\n", board.name.c_str(), selection.reason.c_str());
  }
  return 0;
}

int launch_on_gpu() {
  int devices = 0;
  if (cudaError_t error = cudaGetDeviceCount(&devices); error != cudaSuccess || devices == 0) {
    std::printf("embedded_program: no GPU (%s): the launch is skipped\n",
                error != cudaSuccess ? cudaGetErrorString(error) : "no device");
    return skipped;
  }
  kernlathe::Runtime runtime(embedded_only());
  const std::int64_t n = 1 << 20;
  const kernlathe::Kernel& kernel = runtime.kernel("stride", {{"N", n}});
  std::printf("%s on %s: %s; binary %s; grid %u x block %u\n", kernel.name().c_str(), runtime.device().name.c_str(),
              kernel.selection().reason.c_str(), kernlathe::binary_source_name(kernel.binary_source()),
              kernel.shape().grid[0], kernel.shape().block[0]);
  if (kernel.binary_source() != kernlathe::BinarySource::embedded)
    return fail(std::string("the binary came from ") + kernlathe::binary_source_name(kernel.binary_source()) +
                ", not from the embedded cubins");
  std::vector<float> host(static_cast<std::size_t>(n), 1.0f);
  float* x = nullptr;
  if (cudaMalloc(&x, host.size() * sizeof(float)) != cudaSuccess) return fail("cudaMalloc failed");
  cudaMemcpy(x, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  kernel.launch(kernlathe::Arguments().set("x", x));
  const cudaError_t finished = cudaDeviceSynchronize();
  cudaMemcpy(host.data(), x, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(x);
  if (finished != cudaSuccess) return fail(std::string("the launch failed: ") + cudaGetErrorString(finished));
  std::size_t wrong = 0;
  for (float value : host) wrong += value != 2.0f ? 1 : 0;
  if (wrong > 0) return fail(std::to_string(wrong) + " of " + std::to_string(n) + " outputs are not 2");
  std::printf("all %lld outputs doubled\n", static_cast<long long>(n));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  try {
    if (mode == "select") return select_without_gpu();
    if (mode == "launch") return launch_on_gpu();
  } catch (const std::exception& error) {
    return fail(error.what());
  }
  std::fprintf(stderr, "usage: embedded_program select|launch\n");
  return 2;
}
