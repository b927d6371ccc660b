#pragma once
// The CUDA driver API, loaded at run time.
//
// `tune` and every CPU test must start on machines without the NVIDIA driver (CI, development machines), and a
// binary linked to libcuda does not start there. So nothing links libcuda: libcuda.so.1 is opened with dlopen,
// cuGetProcAddress and cuInit are taken by dlsym, and every other entry point is resolved through
// cuGetProcAddress with the CUDA_VERSION of the cuda.h we compile against, so each pointer has exactly the ABI
// version of the prototype it is called through.

#include <cuda.h>

#include <string>

#include "tuner/common/error.h"

namespace kernlathe::gpu {

// Every driver entry point the tuner calls. Names are the header's names; where cuda.h maps a name to a
// versioned symbol (cuMemAlloc -> cuMemAlloc_v2) the member is spelled through the same macro, so calls read as
// plain driver calls: cuda.cuMemAlloc(&pointer, bytes).
#define KERNLATHE_CUDA_DRIVER_FUNCTIONS(X)                                                                  \
  X(cuGetErrorName) X(cuGetErrorString) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet)        \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceGetPCIBusId) X(cuDeviceTotalMem)                 \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize)       \
  X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD)            \
  X(cuMemsetD8) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuMemcpyDtoDAsync) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)        \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel)                                         \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuStreamCreate) X(cuStreamDestroy)                   \
  X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)      \
  X(cuEventElapsedTime) X(cuEventQuery) X(cuTensorMapEncodeTiled) X(cuLaunchKernelEx)                                \
  X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) /* tuner/loader */         \
  X(cuMemHostGetDevicePointer) X(cuStreamWaitValue32) /* tuner/measure/launch_gate */

struct CudaDriver {
#define KERNLATHE_DECLARE_DRIVER_POINTER(name) decltype(&::name) name = nullptr;
  KERNLATHE_CUDA_DRIVER_FUNCTIONS(KERNLATHE_DECLARE_DRIVER_POINTER)
#undef KERNLATHE_DECLARE_DRIVER_POINTER
  int version = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0
};

// Loads and initialises the driver once per process (thread-safe); later calls return the same table.
// Throws NoGpuError "no NVIDIA driver: ..." when libcuda.so.1 cannot be opened, and NoGpuError when cuInit
// finds no device. A failed load is retried on the next call.
const CudaDriver& cuda_driver();

// "CUDA_ERROR_ILLEGAL_ADDRESS" for a result code; "CUresult 12345" when the driver does not know the code.
std::string cuda_error_name(CUresult result);

// A driver call failed. result() lets callers tell sticky errors (the context is lost) from others.
class CudaError : public TunerError {
 public:
  CudaError(CUresult result, const std::string& message) : TunerError(message), result_(result) {}
  CUresult result() const { return result_; }

 private:
  CUresult result_;
};

// Throws CudaError "file:line: call failed: CUDA_ERROR_NAME (description)" unless result is CUDA_SUCCESS.
void check_cuda(CUresult result, const char* call, const char* file, int line);
// For destructors: reports a failure on stderr and carries on.
void check_cuda_nothrow(CUresult result, const char* call, const char* file, int line) noexcept;

// Errors after which the context can no longer be used: the process must end and a fresh one take over.
bool is_sticky_error(CUresult result);

}  // namespace kernlathe::gpu

#define KERNLATHE_CUDA_CHECK(call) ::kernlathe::gpu::check_cuda((call), #call, __FILE__, __LINE__)
#define KERNLATHE_CUDA_CHECK_NOTHROW(call) ::kernlathe::gpu::check_cuda_nothrow((call), #call, __FILE__, __LINE__)
