// broadcast_shapes / broadcast_to / broadcast_tensors as expand views, take and take_along_dim as
// index_select and gather (whose backward rules, scatter-adds, give the gradients), unravel_index
// as integer arithmetic in float64 (exact below 2^53, which covers any tensor's element count).
#include <string>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_index_more.h"
#include "runtime/functional_index_more_common.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

bool broadcastable(const Dims& a, const Dims& b) {
  for (int i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t sa = a[a.size() - i], sb = b[b.size() - i];
    if (sa != sb && sa != 1 && sb != 1) return false;
  }
  return true;
}

// a's sizes and indices' sizes broadcast in every dim but dim, each keeping its own size there.
std::pair<Dims, Dims> broadcast_except(const Tensor& a, const Tensor& indices, int dim) {
  Dims a_shape = a.sizes(), index_shape = indices.sizes();
  a_shape[dim] = 1;
  index_shape[dim] = 1;
  Dims shape = broadcast_shapes(a_shape, index_shape, "take_along_dim");
  Dims a_target = shape, index_target = shape;
  a_target[dim] = a.size(dim);
  index_target[dim] = indices.size(dim);
  return {a_target, index_target};
}

}  // namespace

Dims broadcast_shapes(const std::vector<Dims>& shapes, Where where) {
  CallSiteScope site(where);
  Dims result;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (int d = 0; d < shapes[i].size(); ++d)
      check(shapes[i][d] >= 0, "broadcast_shapes: shape {} (argument {}) has a negative size", shapes[i], i);
    if (broadcastable(result, shapes[i])) {
      result = broadcast_shapes(result, shapes[i], "broadcast_shapes");
      continue;
    }
    for (size_t j = 0; j < i; ++j)  // the earlier shape it clashes with, to name both as given
      check(broadcastable(shapes[j], shapes[i]),
            "broadcast_shapes: shape {} (argument {}) and shape {} (argument {}) cannot be broadcast", shapes[j], j,
            shapes[i], i);
    fail("broadcast_shapes: shape {} (argument {}) does not broadcast with the others' shape {}", shapes[i], i, result);
  }
  return result;
}

Tensor broadcast_to(const Tensor& a, const Dims& shape, Where where) {
  CallSiteScope site(where);
  check(shape.size() >= a.dim(), "broadcast_to: the target shape {} has fewer dims than the tensor's shape {}", shape,
        a.sizes());
  Dims target = shape;
  const int leading = shape.size() - a.dim();
  for (int d = 0; d < shape.size(); ++d) {
    if (d < leading) {
      check(shape[d] >= 0, "broadcast_to: the size {} of the new leading dim {} is not allowed (target {}, tensor {})",
            shape[d], d, shape, a.sizes());
      continue;
    }
    const int64_t existing = a.size(d - leading);
    if (shape[d] == -1) target[d] = existing;
    check(target[d] == existing || existing == 1,
          "broadcast_to: the expanded size of the tensor ({}) must match the existing size ({}) at non-singleton "
          "dim {}; target sizes {}, tensor sizes {}",
          shape[d], existing, d, shape, a.sizes());
    check(target[d] >= 0, "broadcast_to: invalid size {} at dim {} (target {})", shape[d], d, shape);
  }
  return expand(a, target);
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  std::vector<Dims> shapes;
  for (const Tensor& tensor : tensors) shapes.push_back(tensor.sizes());
  const Dims shape = broadcast_shapes(shapes, where);
  std::vector<Tensor> result;
  for (const Tensor& tensor : tensors) result.push_back(expand(tensor, shape));
  return result;
}

Tensor take(const Tensor& a, const Tensor& index, Where where) {
  CallSiteScope site(where);
  index_more::check_index_dtype("take", index, /*int32_too=*/false);
  check(a.device() == index.device(), "take: the input is on {} but the index on {}", a.device(), index.device());
  check(a.numel() > 0 || index.numel() == 0, "take: cannot take from an empty tensor of shape {} (index shape {})",
        a.sizes(), index.sizes());
  index_more::check_index_range("take", index, a.numel(), "the input's elements");
  const Tensor flat_index = index_more::wrap_negative(index.reshape({-1}), a.numel());
  return index_select(a.reshape({-1}), 0, flat_index).reshape(index.sizes());
}

Tensor take_along_dim(const Tensor& a, const Tensor& indices, std::optional<int64_t> dim, Where where) {
  CallSiteScope site(where);
  index_more::check_index_dtype("take_along_dim", indices, /*int32_too=*/false);
  if (!dim) return gather(a.reshape({-1}), 0, indices.reshape({-1}));
  check(a.dim() == indices.dim(),
        "take_along_dim: the input and indices should have the same number of dims, got shapes {} and {}", a.sizes(),
        indices.sizes());
  if (a.dim() == 0) return gather(a, 0, indices);
  const int d = wrap_dim(*dim, a.dim(), "take_along_dim");
  const auto [a_shape, index_shape] = broadcast_except(a, indices, d);
  return gather(expand(a, a_shape), d, expand(indices, index_shape));
}

std::vector<Tensor> unravel_index(const Tensor& indices, const Dims& shape, Where where) {
  CallSiteScope site(where);
  check(is_integral(indices.dtype()) && indices.dtype() != kBool,
        "unravel_index: expected 'indices' to be of an integer dtype, got {}", indices.dtype());
  int64_t count = 1;
  for (int d = 0; d < shape.size(); ++d) {
    check(shape[d] >= 0, "unravel_index: 'shape' cannot have negative values, got {}", shape);
    // The float64 arithmetic below is exact up to 2^53; no tensor has more elements than that.
    check(shape[d] == 0 || count <= (int64_t{1} << 53) / shape[d],
          "unravel_index: 'shape' {} holds more than 2^53 elements", shape);
    count *= shape[d];
  }
  check(count > 0, "unravel_index: 'shape' {} holds no elements, so no index lies in it", shape);
  // Floor remainders first bring any index into [0, count), as PyTorch's floor divisions do.
  const Tensor flat = remainder(indices.to(kInt64), ops::scalar_like(static_cast<double>(count), indices.to(kInt64)));
  const Tensor exact = flat.to(kFloat64);
  std::vector<Tensor> coordinates(shape.size());
  int64_t stride = 1;
  for (int d = shape.size() - 1; d >= 0; --d) {
    // (flat mod (size stride) - flat mod stride) / stride is an exact integer.
    const Tensor upper = remainder(exact, static_cast<double>(stride * shape[d]));
    const Tensor lower = remainder(exact, static_cast<double>(stride));
    coordinates[d] = round(div(sub(upper, lower), static_cast<double>(stride))).to(kInt64);
    stride *= shape[d];
  }
  return coordinates;
}

}  // namespace ember
