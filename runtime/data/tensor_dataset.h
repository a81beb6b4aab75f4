// TensorDataset: samples are the rows (dim 0) of an input tensor and an optional target tensor.
#pragma once

#include "runtime/data/dataset.h"

namespace ember::data {

class TensorDataset : public Dataset {
 public:
  // `data` and `target` must have the same number of rows. Both are kept as contiguous CPU
  // tensors (a copy is made only if they are not already), so batches are gathered by memcpy.
  explicit TensorDataset(Tensor data, Tensor target = {}, Where where = Where::current());

  int64_t size() const override { return rows_; }
  Batch get_batch(std::span<const int64_t> indices) const override;
  Batch get(int64_t index) const override;

  const Tensor& data() const { return data_; }
  const Tensor& target() const { return target_; }

 private:
  Tensor data_;
  Tensor target_;
  int64_t rows_ = 0;
};

}  // namespace ember::data
