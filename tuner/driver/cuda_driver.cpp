#include "tuner/driver/cuda_driver.h"

#include <string_view>

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdio>
#include <mutex>

namespace kernlathe::gpu {
namespace {

using GetProcAddressFunction = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using InitFunction = CUresult (*)(unsigned int);

// Set once the table is complete; the library handle stays open for the life of the process.
const CudaDriver* loaded_driver = nullptr;
std::mutex load_mutex;

CudaDriver load_driver() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    throw NoGpuError(fmt::format("no NVIDIA driver: cannot load libcuda.so.1 ({})", reason ? reason : "unknown reason"));
  }
  auto get_proc_address = reinterpret_cast<GetProcAddressFunction>(dlsym(library, "cuGetProcAddress_v2"));
  auto init = reinterpret_cast<InitFunction>(dlsym(library, "cuInit"));
  if (get_proc_address == nullptr || init == nullptr) {
    dlclose(library);
    throw NoGpuError("no NVIDIA driver: libcuda.so.1 lacks cuGetProcAddress_v2 (driver older than CUDA 12)");
  }
  CUresult init_result = init(0);
  if (init_result == CUDA_ERROR_NO_DEVICE) throw NoGpuError("no CUDA device: cuInit found none");
  if (init_result != CUDA_SUCCESS) {
    throw NoGpuError(fmt::format("NVIDIA driver present but cuInit failed with CUresult {}", static_cast<int>(init_result)));
  }

  CudaDriver driver;
  auto resolve = [&](const char* symbol, void** target) {
    // cuda.h 13 declares cuCtxSynchronize(void) and, beside it, cuCtxSynchronize_v2(CUcontext) without a macro; asked
    // at version 13000 the driver hands out the _v2 entry point, which then reads a garbage context argument
    // (CUDA_ERROR_CONTEXT_IS_DESTROYED on the H200). Ask for the version whose prototype cuda.h gives that name.
    const int version = std::string_view(symbol) == "cuCtxSynchronize" ? 12000 : CUDA_VERSION;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult result = get_proc_address(symbol, target, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (result != CUDA_SUCCESS || *target == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {
      throw NoGpuError(fmt::format("NVIDIA driver too old: {} not available for CUDA {}.{} (compiled against)",
                                   symbol, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10));
    }
  };
#define KERNLATHE_RESOLVE_DRIVER_POINTER(name) resolve(#name, reinterpret_cast<void**>(&driver.name));
  KERNLATHE_CUDA_DRIVER_FUNCTIONS(KERNLATHE_RESOLVE_DRIVER_POINTER)
#undef KERNLATHE_RESOLVE_DRIVER_POINTER
  KERNLATHE_CUDA_CHECK(driver.cuDriverGetVersion(&driver.version));
  return driver;
}

}  // namespace

const CudaDriver& cuda_driver() {
  std::lock_guard lock(load_mutex);
  if (loaded_driver == nullptr) loaded_driver = new CudaDriver(load_driver());
  return *loaded_driver;
}

std::string cuda_error_name(CUresult result) {
  const char* name = nullptr;
  if (loaded_driver != nullptr && loaded_driver->cuGetErrorName(result, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return fmt::format("CUresult {}", static_cast<int>(result));
}

static std::string failure_message(CUresult result, const char* call, const char* file, int line) {
  const char* description = nullptr;
  if (loaded_driver != nullptr) loaded_driver->cuGetErrorString(result, &description);
  return fmt::format("{}:{}: {} failed: {}{}", file, line, call, cuda_error_name(result),
                     description ? fmt::format(" ({})", description) : std::string());
}

void check_cuda(CUresult result, const char* call, const char* file, int line) {
  if (result != CUDA_SUCCESS) throw CudaError(result, failure_message(result, call, file, line));
}

void check_cuda_nothrow(CUresult result, const char* call, const char* file, int line) noexcept {
  if (result == CUDA_SUCCESS) return;
  try {
    std::fprintf(stderr, "warning: %s\n", failure_message(result, call, file, line).c_str());
  } catch (...) {
    std::fprintf(stderr, "warning: %s failed\n", call);
  }
}

bool is_sticky_error(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

}  // namespace kernlathe::gpu
