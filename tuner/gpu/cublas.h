#pragma once
// cuBLAS, loaded at run time like the driver (cuda_driver.h): the baseline that GEMM results are reported against
// and the reference that verifies them. Used only inside the evaluation worker, after the driver's primary context
// is current; cuBLAS picks that context up through the runtime it loads.

#include <cuda.h>

#include <cstdint>
#include <string>

#include "tuner/spec/model.h"

namespace kernlathe::gpu {

struct GemmProblem {
  std::string compute;  // "f32" (FFMA), "tf32" (fp32 storage, tf32 tensor cores), "f16", "bf16"
  Dtype input = Dtype::f32;   // A and B
  Dtype output = Dtype::f32;  // C
  std::int64_t m = 0, n = 0, k = 0;
  double alpha = 1, beta = 0;
  CUdeviceptr a = 0, b = 0, c = 0;  // row-major, dense
  bool transpose_b = false;          // b holds B^T (n x k): C = alpha * A * B^T + beta * C
};

class Cublas {
 public:
  // Opens libcublas (libcublas.so.13, .12, then $CUDA_HOME/lib64 and /usr/local/cuda/lib64) and creates a handle
  // whose work goes to stream. Throws TunerError saying what was tried when the library or a symbol is missing.
  explicit Cublas(CUstream stream);
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // Row-major C = alpha * A * B + beta * C with fp32 accumulation. Throws TunerError for an unsupported
  // combination or a cuBLAS failure (message with cuBLAS's status string).
  void gemm(const GemmProblem& problem);

  // "cuBLAS 13.0.2": the library's own version, recorded next to the results it produced.
  std::string version() const;

 private:
  struct Library;
  Library* library_ = nullptr;
  void* handle_ = nullptr;
};

}  // namespace kernlathe::gpu
