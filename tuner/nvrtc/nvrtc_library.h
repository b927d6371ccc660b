#pragma once
// NVRTC, loaded at run time.
//
// The runtime library takes embedded or exported cubins first, so an application covered by its exported archs
// never compiles: it should not need libnvrtc installed either. So nothing links NVRTC: the first compile opens it
// with dlopen, as tuner/driver does with the driver, and a machine without it gets a clear error only when a
// kernel must be compiled there.

#include <nvrtc.h>

#include <string>

namespace kernlathe {

// Every NVRTC entry point the project calls, by its header name: nvrtc().nvrtcCompileProgram(...).
#define KERNLATHE_NVRTC_FUNCTIONS(X)                                                                   \
  X(nvrtcGetErrorString) X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)               \
  X(nvrtcCompileProgram) X(nvrtcAddNameExpression) X(nvrtcGetLoweredName) X(nvrtcGetProgramLogSize) \
  X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

struct NvrtcLibrary {
#define KERNLATHE_DECLARE_NVRTC_POINTER(name) decltype(&::name) name = nullptr;
  KERNLATHE_NVRTC_FUNCTIONS(KERNLATHE_DECLARE_NVRTC_POINTER)
#undef KERNLATHE_DECLARE_NVRTC_POINTER
  std::string path;  // the file dlopen took
};

// Loads NVRTC once per process (thread-safe). Tries, in order: $KERNLATHE_NVRTC (a path), libnvrtc.so.<major> of
// the toolkit compiled against and libnvrtc.so through the usual search (LD_LIBRARY_PATH, the binary's run path,
// the system's), then the toolkit's library folder of the build. Throws TunerError listing what was tried and why
// each failed; a failed load is retried on the next call.
const NvrtcLibrary& nvrtc();

}  // namespace kernlathe
