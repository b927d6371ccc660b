#pragma once
template <bool negate>
__device__ inline float apply_sign(float value) {
  return negate ? -value : value;
}
