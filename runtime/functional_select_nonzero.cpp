// nonzero, nonzero_as_tuple, argwhere and masked_select (runtime/functional_select.h): the indices of
// nonzero elements found on the host, and masked_select as index_select over them (for its gradient).
#include <vector>

#include "runtime/functional.h"
#include "runtime/host_elements.h"

namespace ember {

namespace {

TensorOptions index_options(Device device) {
  TensorOptions options;
  options.dtype = kInt64;
  options.device = device;
  return options;
}

// The row-major flat positions of the elements of `a` that are nonzero: NaN is (NaN != 0), -0.0 is not.
std::vector<int64_t> nonzero_positions(const char* what, const Tensor& a) {
  return dispatch_dtype(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> values = detail::host_elements<T>(what, a);
    std::vector<int64_t> positions;
    for (size_t i = 0; i < values.size(); ++i) {
      if (static_cast<compute_t<T>>(values[i]) != compute_t<T>{}) positions.push_back(static_cast<int64_t>(i));
    }
    return positions;
  });
}

// The coordinates of each flat position in a tensor of `sizes`: [positions.size(), sizes.size()] row-major.
std::vector<int64_t> coordinates_of(const std::vector<int64_t>& positions, const Dims& sizes) {
  const int rank = sizes.size();
  std::vector<int64_t> coordinates(positions.size() * static_cast<size_t>(rank));
  for (size_t row = 0; row < positions.size(); ++row) {
    int64_t rest = positions[row];
    for (int dim = rank - 1; dim >= 0; --dim) {
      coordinates[row * rank + dim] = rest % sizes[dim];
      rest /= sizes[dim];
    }
  }
  return coordinates;
}

}  // namespace

Tensor nonzero(const Tensor& a, Where where) {
  CallSiteScope site(where);
  NoGradGuard no_grad;  // indices have no gradient
  const std::vector<int64_t> positions = nonzero_positions("nonzero", a);
  const int64_t count = static_cast<int64_t>(positions.size());
  return from_vector<int64_t>(coordinates_of(positions, a.sizes()), Dims{count, a.dim()}, index_options(a.device()));
}

std::vector<Tensor> nonzero_as_tuple(const Tensor& a, Where where) {
  CallSiteScope site(where);
  NoGradGuard no_grad;
  const std::vector<int64_t> positions = nonzero_positions("nonzero", a);
  const int64_t count = static_cast<int64_t>(positions.size());
  // PyTorch treats a 0-d input as 1-D here: one column of zeros, one per nonzero element (0 or 1).
  if (a.dim() == 0) return {from_vector<int64_t>(positions, Dims{count}, index_options(a.device()))};
  const std::vector<int64_t> coordinates = coordinates_of(positions, a.sizes());
  std::vector<Tensor> columns;
  for (int dim = 0; dim < a.dim(); ++dim) {
    std::vector<int64_t> column(positions.size());
    for (size_t row = 0; row < positions.size(); ++row) column[row] = coordinates[row * a.dim() + dim];
    columns.push_back(from_vector<int64_t>(column, Dims{count}, index_options(a.device())));
  }
  return columns;
}

Tensor argwhere(const Tensor& a, Where where) {
  CallSiteScope site(where);
  return nonzero(a, where);
}

Tensor masked_select(const Tensor& a, const Tensor& mask, Where where) {
  CallSiteScope site(where);
  check(mask.dtype() == kBool, "masked_select: expected a bool mask, got {} (input {} {}, mask {})", mask.dtype(),
        a.dtype(), a.sizes(), mask.sizes());
  check(a.device() == mask.device(), "masked_select: input and mask must be on one device, got {} and {}",
        a.device().str(), mask.device().str());
  const Dims shape = broadcast_shapes(a.sizes(), mask.sizes(), "masked_select");
  std::vector<int64_t> positions;
  {
    NoGradGuard no_grad;
    positions = nonzero_positions("masked_select", mask.expand(shape));
  }
  const int64_t count = static_cast<int64_t>(positions.size());
  const Tensor index = from_vector<int64_t>(positions, Dims{count}, index_options(a.device()));
  // Built from differentiable ops, the gradient is PyTorch's: index_select scatters it back into the
  // flattened broadcast input and expand's backward sums it over the broadcast copies.
  return index_select(reshape(a.expand(shape), {-1}), 0, index);
}

}  // namespace ember
