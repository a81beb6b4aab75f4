// The dropout rule, shared by the CPU and CUDA kernels (and embedded for NVRTC programs): whether
// element i is kept is a pure function of (seed, offset, i), so the mask does not depend on
// threads or device.
#pragma once

#include <cstdint>

#include "kernels/host_device.h"
#include "kernels/philox.h"

namespace ember {

// Element i is kept iff the uniform drawn from stream word i is at least p (so P(keep) = 1 - p).
EMBER_HOST_DEVICE bool dropout_keep_word(uint32_t word, double p) {
  return static_cast<double>(uniform_from_word(word)) >= p;
}

namespace fn {

// y = x * mask * scale, with scale = 1 / (1 - p) (0 when p == 1: nothing survives), as PyTorch
// computes it: a dropped element is x * 0, so NaN and inf become NaN rather than 0.
struct DropoutApply {
  double scale;
  template <typename T> EMBER_HOST_DEVICE T operator()(T x, bool keep) const {
    return static_cast<T>(x * T(keep ? 1 : 0) * static_cast<T>(scale));
  }
};

}  // namespace fn

// The scale of kept elements; p == 1 keeps nothing and its gradient is zero, not 0 * inf.
EMBER_HOST_DEVICE double dropout_scale(double p) { return p < 1.0 ? 1.0 / (1.0 - p) : 0.0; }

}  // namespace ember
