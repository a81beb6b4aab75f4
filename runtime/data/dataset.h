// The Dataset interface the DataLoader reads from. It hands out whole batches (get_batch) rather
// than single samples so a loader step costs one allocation per tensor, not one per sample.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/tensor.h"

namespace ember::data {

// A batch of samples: inputs and (optionally undefined) targets, stacked along dim 0.
// `for (auto& [x, y] : loader)` unpacks it.
struct Batch {
  Tensor data;
  Tensor target;
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  // Number of samples.
  virtual int64_t size() const = 0;

  // The samples at `indices`, stacked along a new leading dim of length indices.size().
  // Loader workers call this concurrently: implementations must be thread-safe.
  // An index outside [0, size()) is a user error (ember::Error).
  virtual Batch get_batch(std::span<const int64_t> indices) const = 0;

  // One sample, without the leading batch dim. The default takes row 0 of a batch of one.
  virtual Batch get(int64_t index) const {
    Batch one = get_batch(std::span<const int64_t>(&index, 1));
    return {one.data.select(0, 0), one.target.defined() ? one.target.select(0, 0) : Tensor{}};
  }
};

}  // namespace ember::data
