// pad (torch.nn.functional.pad) as a composite, one dim at a time from the last: constant mode
// crops negative pads with slice and adds the filled borders with cat; the other modes gather the
// dim with index_select through an index computed on the device from arange (no host data, so a
// capture records it like any other op), whose backward sums the gradient back into the sources.
#include <algorithm>
#include <string>

#include "runtime/functional.h"

namespace ember {

namespace {

const char* mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Constant:
      return "constant";
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Replicate:
      return "replicate";
    case PadMode::Circular:
      return "circular";
  }
  return "?";
}

// Constant mode along one dim: negative pads crop, positive ones add `value`-filled borders.
Tensor pad_constant(const Tensor& a, int dim, int64_t before, int64_t after, double value) {
  const int64_t size = a.size(dim);
  // The crops come first (PyTorch narrows before it pads), so they alone must leave >= 0.
  check(size + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0) >= 0,
        "pad: the input size {}, plus negative padding {} and {}, resulted in a negative output size, which is "
        "invalid; check dimension {} of the input {}",
        size, before, after, dim, a.sizes());
  Tensor result = a;
  if (before < 0 || after < 0)
    result = slice(result, dim, std::max<int64_t>(-before, 0), size - std::max<int64_t>(-after, 0));
  if (before <= 0 && after <= 0) return result;
  std::vector<Tensor> pieces;
  const TensorOptions options{.dtype = a.dtype(), .device = a.device()};
  Dims border = result.sizes();
  if (before > 0) {
    border[dim] = before;
    pieces.push_back(full(border, value, options));
  }
  pieces.push_back(result);
  if (after > 0) {
    border[dim] = after;
    pieces.push_back(full(border, value, options));
  }
  return cat(pieces, dim);
}

// The source position of each output position along a dim of `size` padded by (before, after),
// int64 throughout (the bounds are int64 scalars, so no step promotes to floating).
Tensor source_index(PadMode mode, int64_t size, int64_t before, int64_t after, Device device) {
  const TensorOptions options{.dtype = kInt64, .device = device};
  const auto constant = [&](int64_t value) { return scalar_tensor(static_cast<double>(value), options); };
  // Output position p reads input position i = p - before, mapped back into [0, size).
  const Tensor i = arange(static_cast<double>(-before), static_cast<double>(size + after), 1.0, options);
  switch (mode) {
    case PadMode::Reflect:  // mirrored at 0 and size - 1: (size - 1) - |(size - 1) - |i||
      return sub(constant(size - 1), abs(sub(constant(size - 1), abs(i))));
    case PadMode::Replicate:
      return minimum(maximum(i, constant(0)), constant(size - 1));
    case PadMode::Circular:
      return remainder(i, constant(size));
    case PadMode::Constant:
      break;
  }
  return i;
}

void check_border(PadMode mode, const Tensor& a, int dim, int64_t before, int64_t after) {
  const int64_t size = a.size(dim);
  const bool circular = mode == PadMode::Circular;
  check(before >= 0 && after >= 0, "pad: {} mode takes non-negative padding, got ({}, {}) at dimension {}",
        mode_name(mode), before, after, dim);
  if (mode == PadMode::Replicate) {
    check(size > 0, "pad: replicate mode needs a non-empty dimension {} to repeat, got input of shape {}", dim,
          a.sizes());
    return;
  }
  const bool fits = circular ? before <= size && after <= size : before < size && after < size;
  check(fits, "pad: {} mode needs padding {} the size of dimension {} ({}), got padding ({}, {}) for input of shape {}",
        mode_name(mode), circular ? "at most" : "below", dim, size, before, after, a.sizes());
}

}  // namespace

Tensor pad(const Tensor& a, const std::vector<int64_t>& pad, PadMode mode, std::optional<double> value, Where where) {
  CallSiteScope site(where);
  check(a.defined(), "pad: the input must be defined");
  check(pad.size() % 2 == 0, "pad: the padding length must be divisible by 2, got {} values", pad.size());
  const int padded_dims = static_cast<int>(pad.size() / 2);
  check(padded_dims <= a.dim(),
        "pad: the padding length should be at most twice the input's number of dims, but got padding length {} and "
        "an input of {} dims (shape {})",
        pad.size(), a.dim(), a.sizes());
  // PyTorch lets a value of 0 through with the other modes.
  check(mode == PadMode::Constant || value.value_or(0.0) == 0.0,
        "pad: a padding value applies to constant mode only, got value {} with {} mode", value.value_or(0.0),
        mode_name(mode));
  if (mode != PadMode::Constant) {
    // PyTorch's non-constant pads cover the last 1-3 dims of a tensor with one or two more dims.
    check(padded_dims >= 1 && padded_dims <= 3 && (a.dim() == padded_dims + 1 || a.dim() == padded_dims + 2),
          "pad: {} mode pads the last 1, 2 or 3 dims of a tensor with one or two more (batch, channel); got {} "
          "padded dims for an input of shape {}",
          mode_name(mode), padded_dims, a.sizes());
  }
  Tensor result = a;
  bool copied = false;  // whether a cat or an index_select made a new tensor
  for (int k = 0; k < padded_dims; ++k) {
    const int dim = a.dim() - 1 - k;
    const int64_t before = pad[2 * k], after = pad[2 * k + 1];
    copied = copied || before > 0 || after > 0;
    if (mode == PadMode::Constant) {
      result = pad_constant(result, dim, before, after, value.value_or(0.0));
      continue;
    }
    check_border(mode, result, dim, before, after);
    if (before == 0 && after == 0) continue;
    result = index_select(result, dim, source_index(mode, result.size(dim), before, after, a.device()));
  }
  // Nothing added: a new tensor all the same (PyTorch's clone), never the input or a view of it.
  return copied ? result : result.clone();
}

}  // namespace ember
