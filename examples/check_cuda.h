#pragma once
// The examples' check of CUDA runtime calls: print where and why, then exit 1.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(call)                                                                              \
  do {                                                                                                \
    cudaError_t status = (call);                                                                      \
    if (status != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status)); \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (false)
