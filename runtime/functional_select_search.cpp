// searchsorted and bucketize (runtime/functional_select.h): PyTorch's binary search over each value's
// row of the sorted sequence, on the host, in the two tensors' promoted dtype.
#include <climits>
#include <string>
#include <vector>

#include "runtime/functional.h"
#include "runtime/host_elements.h"

namespace ember {

namespace {

// The first position in [0, length) of the row starting at `offset` of `sequence` (through the same
// row of `sorter` when there is one) whose element is not before `value`: PyTorch's loop, which moves right while
// !(element >= value) (left) or
// !(element > value) (right), so a NaN value or element sends the search right.
template <typename C, typename T>
int64_t search_row(const std::vector<T>& sequence, const std::vector<int64_t>& sorter, int64_t offset, int64_t length,
                   C value, bool right) {
  int64_t start = 0, end = length;
  while (start < end) {
    const int64_t middle = start + ((end - start) >> 1);
    const C element = static_cast<C>(sequence[offset + (sorter.empty() ? middle : sorter[offset + middle])]);
    const bool go_right = right ? !(element > value) : !(element >= value);
    if (go_right) {
      start = middle + 1;
    } else {
      end = middle;
    }
  }
  return start;
}

bool leading_dims_match(const Tensor& boundaries, const Tensor& values) {
  if (boundaries.dim() != values.dim()) return false;
  for (int d = 0; d + 1 < boundaries.dim(); ++d) {
    if (boundaries.size(d) != values.size(d)) return false;
  }
  return true;
}

Tensor search(const char* op, const Tensor& boundaries, const Tensor& values, bool out_int32, bool right,
              const Tensor& sorter) {
  NoGradGuard no_grad;  // positions have no gradient
  check(boundaries.device() == values.device(),
        "{}: the sorted sequence and the values must be on one device, got {} and {}", op, boundaries.device().str(),
        values.device().str());
  check(boundaries.dim() != 0, "{}: the sorted sequence must have at least one dim, got a 0-d tensor", op);
  check(values.dim() > 0 || boundaries.dim() == 1,
        "{}: 0-d values need a 1-D sorted sequence, got a sorted sequence of shape {}", op, boundaries.sizes());
  check(boundaries.dim() == 1 || leading_dims_match(boundaries, values),
        "{}: the sorted sequence must be 1-D or share all but the last dim with the values, got shapes {} and {}", op,
        boundaries.sizes(), values.sizes());
  const int64_t length = boundaries.size(-1);
  check(!out_int32 || length < INT_MAX, "{}: out_int32 needs a sequence shorter than {}, got {}", op, INT_MAX, length);
  std::vector<int64_t> order;
  if (sorter.defined()) {
    check(sorter.device() == boundaries.device(), "{}: the sorter must be on the sorted sequence's device {}, got {}",
          op, boundaries.device().str(), sorter.device().str());
    check(sorter.sizes() == boundaries.sizes(), "{}: the sorter must have the sorted sequence's shape {}, got {}", op,
          boundaries.sizes(), sorter.sizes());
    check(sorter.dtype() == kInt64, "{}: the sorter must be int64, got {}", op, sorter.dtype());
    order = detail::host_int64(op, sorter);
    for (const int64_t index : order) {
      check(index >= 0 && index < length, "{}: sorter index {} is out of range [0, {})", op, index, length);
    }
  }
  const DType common = result_type(boundaries.dtype(), false, values.dtype(), values.dim() == 0);
  check(common != kBool, "{}: bool sequences and values are not supported (sorted sequence {}, values {})", op,
        boundaries.dtype(), values.dtype());
  const Tensor sequence = to_dtype(boundaries, common), probes = to_dtype(values, common);
  std::vector<int64_t> positions(static_cast<size_t>(values.numel()));
  dispatch_dtype(common, [&](auto zero) {
    using T = decltype(zero);
    using C = compute_t<T>;
    const std::vector<T> rows = detail::host_elements<T>(op, sequence);
    const std::vector<T> items = detail::host_elements<T>(op, probes);
    // Values of one row share the sequence's row: 1-D sequences have one row for all.
    const int64_t per_row = values.dim() == 0 ? 1 : values.size(-1);
    for (size_t i = 0; i < items.size(); ++i) {
      const int64_t row = boundaries.dim() == 1 ? 0 : static_cast<int64_t>(i) / per_row;
      positions[i] = search_row<C>(rows, order, row * length, length, static_cast<C>(items[i]), right);
    }
  });
  TensorOptions options;
  options.device = values.device();
  if (!out_int32) {
    options.dtype = kInt64;
    return from_vector<int64_t>(positions, values.sizes(), options);
  }
  options.dtype = kInt32;
  return from_vector<int32_t>(std::vector<int32_t>(positions.begin(), positions.end()), values.sizes(), options);
}

}  // namespace

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right,
                    std::optional<std::string> side, const Tensor& sorter, Where where) {
  CallSiteScope site(where);
  if (side) {
    check(*side == "left" || *side == "right", "searchsorted: side must be 'left' or 'right', got '{}'", *side);
    check(!right || *side == "right", "searchsorted: side '{}' contradicts right = true", *side);
  }
  return search("searchsorted", sorted_sequence, values, out_int32, right || side == "right", sorter);
}

Tensor bucketize(const Tensor& values, const Tensor& boundaries, bool out_int32, bool right, Where where) {
  CallSiteScope site(where);
  check(boundaries.dim() == 1, "bucketize: boundaries must be 1-D, got shape {}", boundaries.sizes());
  return search("bucketize", boundaries, values, out_int32, right, Tensor{});
}

}  // namespace ember
