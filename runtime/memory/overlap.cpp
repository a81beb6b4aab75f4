#include "runtime/memory/overlap.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>

#include "runtime/tensor_alias.h"
#include "runtime/tensor_impl.h"

namespace ember {

namespace {

// Whether `tensor` covers its bytes without gaps or repeats: each dim's stride, taken from
// the smallest up, is the product of the sizes below it. Size-1 dims take any stride.
bool is_dense(const Tensor& tensor) {
  const Dims& sizes = tensor.sizes();
  const Dims& strides = tensor.strides();
  std::array<int, Dims::kMaxRank> order{};  // the dims of size > 1, by increasing stride
  int count = 0;
  for (int d = 0; d < tensor.dim(); ++d) {
    if (sizes[d] == 1) continue;
    int at = count++;
    for (; at > 0 && strides[order[at - 1]] > strides[d]; --at) order[at] = order[at - 1];
    order[at] = d;
  }
  int64_t expected = 1;
  for (int k = 0; k < count; ++k) {
    if (strides[order[k]] != expected) return false;
    expected *= sizes[order[k]];
  }
  return true;
}

}  // namespace

MemoryOverlap memory_overlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return MemoryOverlap::None;
  if (a.impl() == b.impl()) return MemoryOverlap::Full;
  if (a.impl()->storage != b.impl()->storage) return MemoryOverlap::None;  // the usual answer, first
  if (a.numel() == 0 || b.numel() == 0) return MemoryOverlap::None;
  if (!is_dense(a) || !is_dense(b)) return MemoryOverlap::TooHard;
  const auto* a_begin = static_cast<const char*>(a.raw_data_ptr());
  const auto* b_begin = static_cast<const char*>(b.raw_data_ptr());
  const char* a_end = a_begin + a.nbytes();
  const char* b_end = b_begin + b.nbytes();
  if (a_begin == b_begin && a_end == b_end)
    return a.sizes() == b.sizes() && a.strides() == b.strides() && a.dtype() == b.dtype() ? MemoryOverlap::Full
                                                                                         : MemoryOverlap::Partial;
  return a_begin < b_end && b_begin < a_end ? MemoryOverlap::Partial : MemoryOverlap::None;
}

bool has_internal_overlap(const Tensor& tensor) {
  if (!tensor.defined()) return false;
  for (int d = 0; d < tensor.dim(); ++d)
    if (tensor.sizes()[d] > 1 && tensor.strides()[d] == 0) return true;
  return false;
}

ByteExtent byte_extent(const Dims& sizes, const Dims& strides, int64_t offset, DType dtype) {
  int64_t low = offset;
  int64_t high = offset;
  for (int d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return {};
    const int64_t reach = (sizes[d] - 1) * strides[d];
    (reach < 0 ? low : high) += reach;
  }
  const auto item = static_cast<int64_t>(element_size(dtype));
  return {low * item, (high + 1) * item};
}

Tensor without_repeats(const Tensor& tensor) {
  if (!has_internal_overlap(tensor)) return tensor;
  const TensorImpl& from = *tensor.impl();
  std::shared_ptr<TensorImpl> impl = alias_impl(from, /*is_view=*/true);
  for (int d = 0; d < from.sizes.size(); ++d)
    if (from.strides[d] == 0) impl->sizes[d] = std::min<int64_t>(from.sizes[d], 1);
  return Tensor(std::move(impl));
}

}  // namespace ember
