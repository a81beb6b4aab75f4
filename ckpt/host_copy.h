// Byte-exact copies between tensors and host memory. Checkpoints must preserve every bit (NaN
// payloads of 16-bit floats included), so they copy bytes rather than going through copy_, whose
// kernels convert through the compute type.
#pragma once

#include <cstddef>

#include "runtime/tensor.h"

namespace ember::ckpt {

// Copies `source` (any strides; copied to the host first if it lives on a device) into
// `destination`, contiguous in row-major order, source.nbytes() bytes.
void gather_bytes(const Tensor& source, std::byte* destination);

// Copies contiguous row-major bytes into `destination` (CPU, any strides) and bumps its version
// like any in-place write. A device destination receives a host tensor through copy_.
void scatter_bytes(const std::byte* source, const Tensor& destination);

// The index of the first of `count` bool bytes that is neither 0 nor 1 (FORMAT.md: a bool
// element is one byte, 0 or 1; any other byte read as a C++ bool is undefined behaviour), or -1.
int64_t first_invalid_bool(const std::byte* data, uint64_t count);

}  // namespace ember::ckpt
