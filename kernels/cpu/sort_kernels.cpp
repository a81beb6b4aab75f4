// sort and topk on the CPU: each row along dim is copied into a key buffer, an index list is
// ordered by it and the first `kept` positions are written out. One thread handles a whole row,
// so results do not depend on the thread count.
#include "kernels/cpu/sort_kernels.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/cpu/reduce_geometry.h"
#include "kernels/sort_order.h"

namespace ember::cpu {

namespace {

// The rows along `dim` of the input and both outputs. The outputs' dim may be shorter (topk's
// k); a 0-d input is one row of one element (and so is its 0-d result, even for topk's k = 0,
// as in PyTorch).
struct SortRows {
  ReduceGeometry<3> outer;        // one "output element" per row: the rows' first elements
  std::array<int64_t, 3> step{};  // the stride along dim of input, values, indices
  int64_t length = 1;             // the input row
  int64_t kept = 1;               // the output row
};

SortRows sort_rows(const Tensor& input, const Tensor& values, const Tensor& indices, int dim) {
  SortRows rows;
  Dims one_per_row = input.sizes();
  if (input.dim() > 0) {
    one_per_row[dim] = 1;  // a size-1 dim moves no pointer: the geometry walks the other dims
    rows.step = {input.strides()[dim], values.strides()[dim], indices.strides()[dim]};
    rows.length = input.sizes()[dim];
    rows.kept = values.sizes()[dim];
  }
  rows.outer = make_reduce_geometry<3>(one_per_row, {input.strides(), values.strides(), indices.strides()}, 0u);
  return rows;
}

template <typename T>
void sort_typed(const Tensor& input, Tensor& values, Tensor& indices, int dim, bool descending) {
  const SortRows rows = sort_rows(input, values, indices, dim);
  const T* data = input.data_ptr<T>();
  T* out = values.data_ptr<T>();
  int64_t* out_index = indices.data_ptr<int64_t>();
  // bool keys are bytes: std::vector<bool>'s packed bits cannot be read as plain values.
  using Key = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;
  const int64_t count = rows.outer.num_outputs;
  const bool parallel = count > 1 && count * rows.length >= kParallelGrain && get_num_threads() > 1;
  parallel_for(count, parallel, [&](int64_t row) {
    const std::array<int64_t, 3> at = rows.outer.outer_offsets(row);
    std::vector<Key> keys(static_cast<size_t>(rows.length));
    for (int64_t i = 0; i < rows.length; ++i)
      keys[i] = static_cast<Key>(static_cast<compute_t<T>>(data[at[0] + i * rows.step[0]]));
    std::vector<int64_t> order(static_cast<size_t>(rows.length));
    std::iota(order.begin(), order.end(), int64_t{0});
    if (rows.kept == rows.length) {
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return fn::value_before(keys[a], keys[b], descending); });
    } else {
      std::partial_sort(order.begin(), order.begin() + rows.kept, order.end(), [&](int64_t a, int64_t b) {
        return fn::element_before(keys[a], a, keys[b], b, descending);
      });
    }
    for (int64_t r = 0; r < rows.kept; ++r) {
      // The value is copied from the input, not the key: 16-bit values and NaN payloads stay exact.
      out[at[1] + r * rows.step[1]] = data[at[0] + order[r] * rows.step[0]];
      out_index[at[2] + r * rows.step[2]] = order[r];
    }
  });
}

void run_sort(const OpCall& call, TensorList& outputs, bool descending) {
  const Tensor& input = call.input(0);
  const int dim = input.dim() == 0 ? 0 : wrap_dim(call.attrs.get<int64_t>("dim"), input.dim(), call.op.name);
  dispatch_dtype(input.dtype(), [&](auto zero) {
    sort_typed<decltype(zero)>(input, outputs[0], outputs[1], dim, descending);
  });
}

}  // namespace

void sort_kernel(const OpCall& call, TensorList& outputs) {
  run_sort(call, outputs, call.attrs.get<bool>("descending"));
}

void topk_kernel(const OpCall& call, TensorList& outputs) { run_sort(call, outputs, call.attrs.get<bool>("largest")); }

}  // namespace ember::cpu
