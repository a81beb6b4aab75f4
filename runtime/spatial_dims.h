// SpatialDims: a size per spatial dim, given as PyTorch's int-or-tuple arguments are: one value for
// every dim (3) or one per dim ({3, 5}). Convolutions, unfold/fold and pooling take their kernel
// sizes, strides, paddings and dilations this way.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "runtime/dims.h"

namespace ember {

class SpatialDims {
 public:
  SpatialDims(int64_t value) : values_{value} {}                           // NOLINT: 3 means 3 everywhere
  SpatialDims(std::initializer_list<int64_t> values) : values_(values) {}  // NOLINT
  SpatialDims(const Dims& values) : values_(values) {}                     // NOLINT

  // The value of each of `spatial` dims. A list of another length is an error naming `op` and the
  // argument (`what`), e.g. "conv2d: stride must have 1 or 2 values, got [1, 2, 3]".
  Dims expand(int spatial, const char* op, const char* what) const {
    check(values_.size() == 1 || values_.size() == spatial, "{}: {} must have 1 or {} values, got {}", op, what,
          spatial, values_);
    return values_.size() == 1 ? Dims::filled(spatial, values_[0]) : values_;
  }
  const Dims& values() const { return values_; }

 private:
  Dims values_;
};

}  // namespace ember
