#pragma once
#include "detail/scale_sign.h"

__device__ inline float round_through_half(float value) { return __half2float(__float2half(value)); }
