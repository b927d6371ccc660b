// Test template of the compile module: a function template whose header chain (scale_helpers.h ->
// detail/scale_sign.h) reaches NVRTC as in-memory headers, plus a toolkit header found through -I.
// Template parameters are not named like space parameters: the prelude #defines BLOCK and NEGATE.
#include <cuda_fp16.h>

#include "scale_helpers.h"

template <int block_size, bool negate>
__global__ void scale(float* data, int count, float factor) {
  int index = blockIdx.x * block_size + threadIdx.x;
  if (index < count) data[index] = apply_sign<negate>(round_through_half(data[index] * factor));
}
