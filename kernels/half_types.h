// bfloat16 and IEEE float16 storage types with float conversion, usable on host and device.
// Arithmetic happens in float: ember stores these types and computes in fp32 (CPU and CUDA).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace ember {

namespace detail {
EMBER_HOST_DEVICE uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
EMBER_HOST_DEVICE float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
}  // namespace detail

// bfloat16: the top 16 bits of a float32. Conversion rounds to nearest even, NaN stays NaN.
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  EMBER_HOST_DEVICE BFloat16(float value) {  // NOLINT: implicit like a float type
    uint32_t f = detail::float_bits(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) {
      bits = 0x7fc0;  // quiet NaN
    } else {
      uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
      bits = static_cast<uint16_t>((f + rounding) >> 16);
    }
  }
  EMBER_HOST_DEVICE operator float() const { return detail::bits_float(uint32_t{bits} << 16); }
};

// IEEE 754 binary16. Conversion rounds to nearest even, handles subnormals, inf and NaN.
struct Float16 {
  uint16_t bits = 0;

  Float16() = default;
  EMBER_HOST_DEVICE Float16(float value) { bits = from_float(value); }  // NOLINT
  EMBER_HOST_DEVICE operator float() const { return to_float(bits); }

  EMBER_HOST_DEVICE static uint16_t from_float(float value) {
    uint32_t f = detail::float_bits(value);
    uint32_t sign = (f >> 16) & 0x8000u;
    uint32_t magnitude = f & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) {  // inf or NaN
      return static_cast<uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
    }
    if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow
    if (magnitude < 0x38800000u) {  // result is subnormal or zero: scale by 2^24 and round
      float scaled = detail::bits_float(magnitude) * 16777216.0f;
      // scaled < 1024, so its nearest integer (ties to even) is the subnormal mantissa.
      float rounded = scaled + 8388608.0f - 8388608.0f;  // round-to-nearest-even via 2^23
      return static_cast<uint16_t>(sign | static_cast<uint32_t>(rounded));
    }
    uint32_t rounding = 0xfffu + ((magnitude >> 13) & 1u);
    uint32_t half = (magnitude + rounding - 0x38000000u) >> 13;  // rebias 127 -> 15
    return static_cast<uint16_t>(sign | half);
  }

  EMBER_HOST_DEVICE static float to_float(uint16_t h) {
    uint32_t sign = uint32_t{h & 0x8000u} << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1fu) return detail::bits_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
      float value = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
      return sign ? -value : value;
    }
    return detail::bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
};

}  // namespace ember
