// unique and unique_consecutive (runtime/functional_select.h), over the flattened tensor or over the
// slices along a dim: values read on the host, grouped there in PyTorch's CPU kernel's order.
#include <algorithm>
#include <numeric>
#include <vector>

#include "runtime/functional.h"
#include "runtime/host_elements.h"

namespace ember {

namespace {

using UniqueResult = std::tuple<Tensor, Tensor, Tensor>;

TensorOptions options_of(DType dtype, Device device) {
  TensorOptions options;
  options.dtype = dtype;
  options.device = device;
  return options;
}

// Groups of equal neighbours in `order` (indices into rows of `width` elements of `values`): two rows
// are one group when every element compares equal (so a NaN never equals anything, itself included,
// as PyTorch's equal_nan = false). Fills the group of each row and the size of each group, and
// returns the first row of each group.
template <typename T>
std::vector<int64_t> group_rows(const std::vector<T>& values, int64_t width, const std::vector<int64_t>& order,
                                std::vector<int64_t>& group_of_row, std::vector<int64_t>& counts) {
  using C = compute_t<T>;
  std::vector<int64_t> firsts;
  for (size_t i = 0; i < order.size(); ++i) {
    bool same = i > 0;
    for (int64_t k = 0; same && k < width; ++k) {
      same = static_cast<C>(values[order[i] * width + k]) == static_cast<C>(values[order[i - 1] * width + k]);
    }
    if (!same) {
      firsts.push_back(order[i]);
      counts.push_back(0);
    }
    group_of_row[order[i]] = static_cast<int64_t>(firsts.size()) - 1;
    ++counts.back();
  }
  return firsts;
}

// The rows sorted as PyTorch sorts them: single elements ascending with NaN last (its sort's order);
// whole slices lexicographically, an element pair that is neither < nor > (NaN) counting as equal
// (its unique_dim comparator). Stable, so ties keep input order.
template <typename T>
std::vector<int64_t> sorted_rows(const std::vector<T>& values, int64_t rows, int64_t width) {
  using C = compute_t<T>;
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < width; ++k) {
      const C x = static_cast<C>(values[a * width + k]);
      const C y = static_cast<C>(values[b * width + k]);
      if (width == 1 && (x != x || y != y)) return y != y && x == x;  // NaN after every number
      if (x < y) return true;
      if (x > y) return false;
    }
    return false;
  });
  return order;
}

// The shared body: `a` seen as `rows` slices of `width` elements along dim 0 of `moved` (a with the
// unique dim first; a flattened when there is none). `sort` false: unique_consecutive.
UniqueResult unique_rows(const char* what, const Tensor& moved, bool sort, bool return_inverse, bool return_counts,
                         const Dims& inverse_shape, const std::vector<int64_t>& restore_order) {
  const int64_t rows = moved.dim() == 0 ? 1 : moved.size(0);
  const int64_t width = rows == 0 ? 0 : moved.numel() / rows;
  return dispatch_dtype(moved.dtype(), [&](auto zero) -> UniqueResult {
    using T = decltype(zero);
    const std::vector<T> values = detail::host_elements<T>(what, moved);
    std::vector<int64_t> order(static_cast<size_t>(rows));
    if (sort) {
      order = sorted_rows(values, rows, width);
    } else {
      std::iota(order.begin(), order.end(), 0);
    }
    std::vector<int64_t> group_of_row(static_cast<size_t>(rows)), counts;
    const std::vector<int64_t> firsts = group_rows(values, width, order, group_of_row, counts);
    const int64_t groups = static_cast<int64_t>(firsts.size());
    std::vector<T> kept;
    for (const int64_t row : firsts)
      kept.insert(kept.end(), values.begin() + row * width, values.begin() + (row + 1) * width);
    Dims kept_shape = moved.dim() == 0 ? Dims{1} : moved.sizes();
    kept_shape[0] = groups;
    Tensor result = from_vector<T>(kept, kept_shape, options_of(moved.dtype(), moved.device()));
    if (!restore_order.empty()) result = result.permute(Dims(restore_order)).contiguous();
    const TensorOptions index = options_of(kInt64, moved.device());
    Tensor inverse = return_inverse ? from_vector<int64_t>(group_of_row, inverse_shape, index)
                                    : from_vector<int64_t>({}, Dims{0}, index);
    Tensor count =
        from_vector<int64_t>(return_counts ? counts : std::vector<int64_t>{}, Dims{return_counts ? groups : 0}, index);
    return {std::move(result), std::move(inverse), std::move(count)};
  });
}

UniqueResult unique_impl(const char* what, const Tensor& a, bool sort, bool return_inverse, bool return_counts,
                         std::optional<int64_t> dim) {
  NoGradGuard no_grad;  // none of the three has a gradient (PyTorch's unique backward is not implemented)
  if (!dim) return unique_rows(what, a.reshape({-1}), sort, return_inverse, return_counts, a.sizes(), {});
  check(a.dim() > 0, "{}: dim {} of a 0-d tensor, which has no slices to compare", what, *dim);
  const int wrapped = wrap_dim(*dim, a.dim(), what);
  const Dims& sizes = a.sizes();
  const auto zero_dims = std::count(sizes.begin(), sizes.end(), 0);
  const TensorOptions index = options_of(kInt64, a.device());
  if (sizes[wrapped] == 0) {
    check(zero_dims == 1, "{}: dim {} of shape {} has size 0 and so do others; the result has no defined shape", what,
          *dim, sizes);
    return {empty(sizes, options_of(a.dtype(), a.device())), zeros({0}, index), zeros({0}, index)};
  }
  check(zero_dims == 0, "{}: shape {} has a size-0 dim other than dim {}; its slices cannot be compared", what, sizes,
        *dim);
  // Move the dim first: its slices become rows; the result is moved back by the inverse permutation.
  std::vector<int64_t> to_front{wrapped}, restore(static_cast<size_t>(a.dim()));
  for (int d = 0; d < a.dim(); ++d) {
    if (d != wrapped) to_front.push_back(d);
  }
  for (int d = 0; d < a.dim(); ++d) restore[to_front[d]] = d;
  return unique_rows(what, a.permute(Dims(to_front)), sort, return_inverse, return_counts, Dims{sizes[wrapped]},
                     restore);
}

}  // namespace

UniqueResult unique(const Tensor& a, bool sorted, bool return_inverse, bool return_counts, std::optional<int64_t> dim,
                    Where where) {
  CallSiteScope site(where);
  (void)sorted;  // PyTorch's CPU kernel sorts either way (functional_select.h)
  return unique_impl("unique", a, /*sort=*/true, return_inverse, return_counts, dim);
}

UniqueResult unique_consecutive(const Tensor& a, bool return_inverse, bool return_counts, std::optional<int64_t> dim,
                                Where where) {
  CallSiteScope site(where);
  // PyTorch takes dim 0 of a 1-D tensor as the flattened case: the inverse then has the input's shape.
  if (dim && a.dim() == 1 && wrap_dim(*dim, 1, "unique_consecutive") == 0) dim.reset();
  return unique_impl("unique_consecutive", a, /*sort=*/false, return_inverse, return_counts, dim);
}

}  // namespace ember
