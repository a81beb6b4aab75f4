// rot90, block_diag, cartesian_prod, combinations, tril_indices, triu_indices and vander
// (runtime/functional_arrange.h): flips and transposes, pads and cats, index_selects and a cumprod,
// so the gradients are those ops'. Index sets that depend on sizes only are built on the host.
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "runtime/functional.h"

namespace ember {

namespace {

TensorOptions index_options_on(Device device) { return {.dtype = kInt64, .device = device}; }

// The 2-D form block_diag places: 0-d [1, 1], 1-D [1, n].
Tensor as_block(const Tensor& t, size_t position) {
  check(t.dim() <= 2,
        "block_diag: Input tensors must have 2 or fewer dimensions. Input {} has {} dimensions (shape {})", position,
        t.dim(), t.sizes());
  if (t.dim() == 2) return t;
  return reshape(t, {1, t.numel()});
}

// The host-side positions of torch.combinations, row after row, each row ascending (strictly
// without replacement), in lexicographic order.
std::vector<int64_t> combination_positions(int64_t n, int64_t r, bool with_replacement) {
  std::vector<int64_t> positions;
  std::vector<int64_t> row(static_cast<size_t>(r));
  // The first row: 0, 1, .., r - 1 (0, .., 0 with replacement); none when it does not fit.
  for (int64_t i = 0; i < r; ++i) row[i] = with_replacement ? 0 : i;
  if (n == 0 || (!with_replacement && r > n)) return positions;
  while (true) {
    positions.insert(positions.end(), row.begin(), row.end());
    // Advance the last position that can still grow, then reset the ones after it to their least.
    int64_t i = r - 1;
    while (i >= 0 && row[i] == (with_replacement ? n - 1 : n - r + i)) --i;
    if (i < 0) return positions;
    ++row[i];
    for (int64_t j = i + 1; j < r; ++j) row[j] = with_replacement ? row[i] : row[j - 1] + 1;
  }
}

Tensor triangle_indices(int64_t row, int64_t col, int64_t offset, TensorOptions options, bool lower,
                        const char* function) {
  check(row >= 0, "{}: row must be non-negative, got {}", function, row);
  check(col >= 0, "{}: col must be non-negative, got {}", function, col);
  const DType dtype = options.resolved_dtype(kInt64);
  check(dtype != kBool, "{}: bool is not a dtype for indices (row {}, col {}, offset {})", function, row, col, offset);
  std::vector<int64_t> rows, cols;
  for (int64_t i = 0; i < row; ++i) {
    // Columns j with j - i <= offset (lower) or j - i >= offset (upper), clamped to [0, col).
    const int64_t first = lower ? 0 : std::clamp<int64_t>(i + offset, 0, col);
    const int64_t last = lower ? std::clamp<int64_t>(i + offset + 1, 0, col) : col;
    for (int64_t j = first; j < last; ++j) {
      rows.push_back(i);
      cols.push_back(j);
    }
  }
  rows.insert(rows.end(), cols.begin(), cols.end());
  options.dtype = dtype;
  return from_vector<int64_t>(rows, {2, static_cast<int64_t>(cols.size())}, options);
}

}  // namespace

Tensor rot90(const Tensor& a, int64_t k, const Dims& dims, Where where) {
  CallSiteScope site(where);
  check(dims.size() == 2, "rot90: expected total rotation dims == 2, but got dims = {} (dims {})", dims.size(), dims);
  check(a.dim() >= 2, "rot90: expected total dims >= 2, but got total dims = {} (shape {})", a.dim(), a.sizes());
  const int first = wrap_dim(dims[0], a.dim(), "rot90");
  const int second = wrap_dim(dims[1], a.dim(), "rot90");
  check(first != second, "rot90: expected rotation dims to be different, got dims {} (shape {})", dims, a.sizes());
  switch (((k % 4) + 4) % 4) {
    case 1:
      return transpose(flip(a, {second}), first, second);
    case 2:
      return flip(a, {first, second});
    case 3:
      return transpose(flip(a, {first}), first, second);
    default:
      return clone(a);
  }
}

Tensor block_diag(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  if (tensors.empty()) return empty({1, 0}, {.dtype = kFloat32});
  DType dtype = tensors[0].dtype();
  int64_t total_columns = 0;
  std::vector<Tensor> blocks;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check(tensors[i].device() == tensors[0].device(),
          "block_diag: input tensors must all be on the same device, input 0 is on {} and input {} on {}",
          tensors[0].device(), i, tensors[i].device());
    blocks.push_back(as_block(tensors[i], i));
    dtype = promote_types(dtype, tensors[i].dtype());
    total_columns += blocks.back().size(1);
  }
  // Each block padded with zeros to the full width at its column offset; the rows then stack.
  int64_t column = 0;
  for (Tensor& block : blocks) {
    const int64_t width = block.size(1);
    block = pad(block.dtype() == dtype ? block : to_dtype(block, dtype), {column, total_columns - column - width});
    column += width;
  }
  return cat(blocks, 0);
}

Tensor cartesian_prod(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  check(!tensors.empty(), "cartesian_prod: expected at least one tensor, got none");
  for (size_t i = 0; i < tensors.size(); ++i)
    check(tensors[i].dim() == 1, "cartesian_prod: Expect a 1D vector, but got shape {} (input {})", tensors[i].sizes(),
          i);
  if (tensors.size() == 1) return tensors[0];
  std::vector<Tensor> columns = meshgrid(tensors, "ij");
  for (Tensor& column : columns) column = flatten(column);
  return stack(columns, 1);
}

Tensor combinations(const Tensor& a, int64_t r, bool with_replacement, Where where) {
  CallSiteScope site(where);
  check(a.dim() == 1, "combinations: Expect a 1D vector, but got shape {}", a.sizes());
  check(r >= 0, "combinations: Expect a non-negative number, but got {}", r);
  if (r == 0) return empty({0}, {.dtype = a.dtype(), .device = a.device()});
  const std::vector<int64_t> positions = combination_positions(a.numel(), r, with_replacement);
  const int64_t count = static_cast<int64_t>(positions.size()) / r;
  const Tensor index = from_vector<int64_t>(positions, {count * r}, index_options_on(a.device()));
  return reshape(index_select(a, 0, index), {count, r});
}

Tensor tril_indices(int64_t row, int64_t col, int64_t offset, TensorOptions options, Where where) {
  CallSiteScope site(where);
  return triangle_indices(row, col, offset, options, /*lower=*/true, "tril_indices");
}

Tensor triu_indices(int64_t row, int64_t col, int64_t offset, TensorOptions options, Where where) {
  CallSiteScope site(where);
  return triangle_indices(row, col, offset, options, /*lower=*/false, "triu_indices");
}

Tensor vander(const Tensor& x, std::optional<int64_t> N, bool increasing, Where where) {
  CallSiteScope site(where);
  check(x.dim() == 1, "vander: x must be a one-dimensional tensor, got shape {}", x.sizes());
  const int64_t columns = N.value_or(x.numel());
  check(columns >= 0, "vander: N must be non-negative, got {}", columns);
  const DType dtype = promote_types(x.dtype(), kInt64);
  const Tensor values = x.dtype() == dtype ? x : to_dtype(x, dtype);
  const int64_t rows = x.numel();
  Tensor result = ones({rows, std::min<int64_t>(columns, 1)}, {.dtype = dtype, .device = x.device()});
  if (columns > 1) {
    // [1, x, x, ..] multiplied up: column j holds x^j, as torch's cumprod (its gradient is exact
    // at zeros).
    result = cumprod(cat({result, expand(unsqueeze(values, 1), {rows, columns - 1})}, 1), 1);
  }
  return increasing ? result : flip(result, {1});
}

}  // namespace ember
