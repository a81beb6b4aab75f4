// The shared checks of functional_index_more_common.h.
#include "runtime/functional_index_more_common.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_sort.h"
#include "runtime/host_elements.h"
#include "runtime/ops/pointwise_common.h"
#include "runtime/ops/registry.h"

namespace ember::index_more {

void check_index_dtype(const char* function, const Tensor& index, bool int32_too) {
  const bool accepted = index.dtype() == kInt64 || (int32_too && index.dtype() == kInt32);
  check(accepted, "{}: expected an index of dtype {}, got {} (index shape {})", function,
        int32_too ? "int64 or int32" : "int64", index.dtype(), index.sizes());
}

void check_index_range(const char* function, const Tensor& index, int64_t size, const char* what) {
  // A host read under capture would break the graph, and on CUDA it would sync the stream.
  if (dispatch_mode_active() || !index.device().is_cpu() || index.numel() == 0) return;
  for (const int64_t value : detail::host_int64(function, index))
    check(value >= -size && value < size, "{}: index {} is out of range for {} of size {}", function, value, what,
          size);
}

Tensor wrap_negative(const Tensor& index, int64_t size) {
  const Tensor zero = ops::scalar_like(0.0, index);
  return ember::where(lt(index, zero), add(index, ops::scalar_like(static_cast<double>(size), index)), index);
}

Tensor slice_mask(const Tensor& a, int dim, const Tensor& index) {
  static const OpDef& index_add = lookup_op("index_add");
  const int64_t size = a.dim() == 0 ? 1 : a.size(dim);
  const TensorOptions counts{.dtype = kInt64, .device = a.device()};
  const Tensor flat_index = index.reshape({-1}).to(kInt64);
  // How often each position is listed: index_add of ones, differentiable and on every device.
  const Tensor hits = dispatch_one(index_add, {zeros({size}, counts), flat_index, ones({flat_index.numel()}, counts)},
                                   {{"dim", int64_t{0}}});
  Dims shape = Dims::filled(a.dim(), 1);
  if (a.dim() > 0) shape[dim] = size;
  return gt(hits, zeros({}, counts)).reshape(shape);
}

Tensor last_occurrences(const Tensor& index) {
  const int64_t n = index.numel();
  const TensorOptions flags{.dtype = kBool, .device = index.device()};
  if (n < 2) return ones({n}, flags);
  // Sorted stably, equal indices keep their order, so the last of each run is the last occurrence.
  const Tensor order = argsort(index, 0, /*descending=*/false, /*stable=*/true);
  const Tensor sorted = index_select(index, 0, order);
  const Tensor run_ends = cat({ne(sorted.slice(0, 0, n - 1), sorted.slice(0, 1, n)), ones({1}, flags)}, 0);
  // Back to input order: entry order[k] gets run_ends[k] (a permutation, so one count each).
  static const OpDef& index_add = lookup_op("index_add");
  const TensorOptions counts{.dtype = kInt64, .device = index.device()};
  const Tensor last = dispatch_one(index_add, {zeros({n}, counts), order, run_ends.to(kInt64)}, {{"dim", int64_t{0}}});
  return gt(last, zeros({}, counts));
}

}  // namespace ember::index_more
