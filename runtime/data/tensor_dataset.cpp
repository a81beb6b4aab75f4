// TensorDataset: batches are gathered row by row with memcpy, a few microseconds for a typical
// batch, because the loader feeds training steps that take ~100 us.
#include "runtime/data/tensor_dataset.h"

#include <cstring>

namespace ember::data {

namespace {

// A contiguous CPU copy of `tensor` (the tensor itself when it already is one).
Tensor host_contiguous(const Tensor& tensor, const char* role) {
  check(tensor.dim() >= 1, "TensorDataset: {} must have at least one dim (rows), got a 0-d tensor",
        role);
  return tensor.detach().to(kCPU).contiguous();
}

// Rows `indices` of contiguous `source`, as a new contiguous tensor of shape [n, rest...].
Tensor gather_rows(const Tensor& source, std::span<const int64_t> indices) {
  Dims sizes = source.sizes();
  sizes[0] = static_cast<int64_t>(indices.size());
  Tensor out = make_tensor(sizes, source.dtype(), kCPU);
  const size_t row_bytes = source.size(0) == 0 ? 0 : source.nbytes() / static_cast<size_t>(source.size(0));
  const auto* from = static_cast<const char*>(source.raw_data_ptr());
  auto* to = static_cast<char*>(out.raw_data_ptr());
  for (size_t row = 0; row < indices.size(); ++row) {
    std::memcpy(to + row * row_bytes, from + static_cast<size_t>(indices[row]) * row_bytes, row_bytes);
  }
  return out;
}

// Row `index` of contiguous `source` without the leading dim.
Tensor copy_row(const Tensor& source, int64_t index) {
  Dims sizes = source.sizes();
  sizes.erase(0);
  return gather_rows(source, std::span<const int64_t>(&index, 1)).view(sizes);
}

}  // namespace

TensorDataset::TensorDataset(Tensor data, Tensor target, Where where) {
  CallSiteScope site(where);
  check(data.defined(), "TensorDataset: the data tensor is undefined");
  data_ = host_contiguous(data, "data");
  rows_ = data_.size(0);
  if (target.defined()) {
    target_ = host_contiguous(target, "target");
    check(target_.size(0) == rows_,
          "TensorDataset: data and target must have the same number of rows, got data {} ({} rows) "
          "and target {} ({} rows)",
          data_.sizes(), rows_, target_.sizes(), target_.size(0));
  }
}

Batch TensorDataset::get_batch(std::span<const int64_t> indices) const {
  for (int64_t index : indices) {
    check(index >= 0 && index < rows_, "TensorDataset: index {} is out of range for {} samples",
          index, rows_);
  }
  return {gather_rows(data_, indices), target_.defined() ? gather_rows(target_, indices) : Tensor{}};
}

Batch TensorDataset::get(int64_t index) const {
  check(index >= 0 && index < rows_, "TensorDataset: index {} is out of range for {} samples", index,
        rows_);
  return {copy_row(data_, index), target_.defined() ? copy_row(target_, index) : Tensor{}};
}

}  // namespace ember::data
