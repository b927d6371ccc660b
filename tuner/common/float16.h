#pragma once
// IEEE half (f16) and bfloat16 (bf16) conversions on the host: round to nearest, ties to even; NaN stays NaN. Written
// here so neither the tuner's buffer contents nor the runtime's f16/bf16 scalar arguments need a CUDA header, and
// so the conversions are tested on any machine.

#include <cstdint>

namespace kernlathe {

std::uint16_t float_to_half_bits(float value);
float half_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16_bits(float value);
float bfloat16_bits_to_float(std::uint16_t bits);

}  // namespace kernlathe
