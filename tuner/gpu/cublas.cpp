#include "tuner/gpu/cublas.h"

#include <cublas_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <vector>

namespace kernlathe::gpu {

// The handful of entry points the baseline needs. cublasGemmEx is also overloaded by an inline C++ wrapper in
// cublas_api.h, so its pointer type is written out rather than taken with decltype.
struct Cublas::Library {
  void* shared_object = nullptr;
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasGetProperty) get_property = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

namespace {

void* open_cublas(std::string& tried) {
  std::vector<std::string> candidates = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* home = std::getenv(variable); home != nullptr && *home != '\0') {
      candidates.push_back(fmt::format("{}/lib64/libcublas.so", home));
    }
  }
  candidates.push_back("/usr/local/cuda/lib64/libcublas.so");
  for (const std::string& candidate : candidates) {
    if (void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    const char* reason = dlerror();
    tried += fmt::format("\n  {}: {}", candidate, reason ? reason : "not found");
  }
  return nullptr;
}

template <typename Pointer>
void resolve(void* library, const char* symbol, Pointer& target) {
  target = reinterpret_cast<Pointer>(dlsym(library, symbol));
  if (target == nullptr) throw TunerError(fmt::format("cuBLAS is too old: it lacks {}", symbol));
}

cudaDataType data_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32: return CUDA_R_32F;
    case Dtype::f16: return CUDA_R_16F;
    case Dtype::bf16: return CUDA_R_16BF;
    case Dtype::f64: return CUDA_R_64F;
    default: throw TunerError(fmt::format("the cuBLAS baseline does not take {} matrices", dtype_name(dtype)));
  }
}

}  // namespace

Cublas::Cublas(CUstream stream) {
  std::string tried;
  void* shared_object = open_cublas(tried);
  if (shared_object == nullptr) {
    throw TunerError("cannot load cuBLAS for the baseline; tried:" + tried +
                     "\n(install the CUDA toolkit's cuBLAS or set CUDA_HOME)");
  }
  library_ = new Library;
  library_->shared_object = shared_object;
  try {
    resolve(shared_object, "cublasCreate_v2", library_->create);
    resolve(shared_object, "cublasDestroy_v2", library_->destroy);
    resolve(shared_object, "cublasSetStream_v2", library_->set_stream);
    resolve(shared_object, "cublasGetProperty", library_->get_property);
    resolve(shared_object, "cublasGetStatusString", library_->status_string);
    resolve(shared_object, "cublasGemmEx", library_->gemm_ex);
    cublasHandle_t handle = nullptr;
    cublasStatus_t created = library_->create(&handle);
    if (created != CUBLAS_STATUS_SUCCESS) {
      throw TunerError(fmt::format("cublasCreate failed: {}", library_->status_string(created)));
    }
    handle_ = handle;
    // CUstream and cudaStream_t are the same type (struct CUstream_st*).
    cublasStatus_t bound = library_->set_stream(handle, stream);
    if (bound != CUBLAS_STATUS_SUCCESS) {
      throw TunerError(fmt::format("cublasSetStream failed: {}", library_->status_string(bound)));
    }
  } catch (...) {
    if (handle_ != nullptr) library_->destroy(static_cast<cublasHandle_t>(handle_));
    dlclose(shared_object);
    delete library_;
    throw;
  }
}

Cublas::~Cublas() {
  if (handle_ != nullptr) library_->destroy(static_cast<cublasHandle_t>(handle_));
  // The library stays loaded: cuBLAS registers runtime state that must outlive the handle until process exit.
  delete library_;
}

void Cublas::gemm(const GemmProblem& problem) {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (problem.compute == "tf32") {
    if (problem.input != Dtype::f32) throw TunerError("the tf32 baseline takes f32 matrices");
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  } else if (problem.compute == "f32") {
    // Plain fp32 FMAs: without a math mode that allows tf32, CUBLAS_COMPUTE_32F does not use tensor cores on
    // f32 inputs.
    if (problem.input != Dtype::f32) throw TunerError("the f32 baseline takes f32 matrices");
  } else if (problem.compute == "f16" || problem.compute == "bf16") {
    Dtype expected = problem.compute == "f16" ? Dtype::f16 : Dtype::bf16;
    if (problem.input != expected) {
      throw TunerError(fmt::format("the {} baseline takes {} matrices, not {}", problem.compute, dtype_name(expected),
                                   dtype_name(problem.input)));
    }
  } else {
    throw TunerError(fmt::format("unknown baseline compute type '{}'", problem.compute));
  }
  for (std::int64_t size : {problem.m, problem.n, problem.k}) {
    if (size <= 0 || size > 0x7fffffff) throw TunerError(fmt::format("GEMM size {} is out of cuBLAS's int range", size));
  }
  const float alpha = static_cast<float>(problem.alpha), beta = static_cast<float>(problem.beta);
  const int m = static_cast<int>(problem.m), n = static_cast<int>(problem.n), k = static_cast<int>(problem.k);
  // cuBLAS is column-major. A row-major matrix read column-major is its transpose, so row-major C = A * B is
  // column-major C^T = B^T * A^T: swap the operands and the m/n sizes; leading dimensions are the row lengths.
  // With transpose_b the buffer holds B^T row-major (n x k); read column-major it is a k x n matrix, B itself, and
  // C^T = B^T * A^T takes its transpose: CUBLAS_OP_T, leading dimension k.
  cublasStatus_t status = library_->gemm_ex(
      static_cast<cublasHandle_t>(handle_), problem.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k,
      &alpha, reinterpret_cast<const void*>(problem.b), data_type(problem.input), problem.transpose_b ? k : n,
      reinterpret_cast<const void*>(problem.a),
      data_type(problem.input), k, &beta, reinterpret_cast<void*>(problem.c), data_type(problem.output), n, compute,
      CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw TunerError(fmt::format("cublasGemmEx ({}, {}x{}x{}) failed: {}", problem.compute, problem.m, problem.n,
                                 problem.k, library_->status_string(status)));
  }
}

std::string Cublas::version() const {
  int major = 0, minor = 0, patch = 0;
  library_->get_property(MAJOR_VERSION, &major);
  library_->get_property(MINOR_VERSION, &minor);
  library_->get_property(PATCH_LEVEL, &patch);
  return fmt::format("cuBLAS {}.{}.{}", major, minor, patch);
}

}  // namespace kernlathe::gpu
