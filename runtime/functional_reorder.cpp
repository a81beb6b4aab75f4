// flip, repeat and roll as compositions of index_select, expand + reshape, and slice + cat: each
// costs one copy per dim it touches (flip and roll) or one in all (repeat), which is what a
// dedicated kernel would write once; their gradients are those ops' own (index_add for flip, a
// sum over the repeats for repeat, the inverse slices for roll), equal to PyTorch's.
#include <array>

#include "runtime/functional.h"

namespace ember {

namespace {

int64_t product_of(const Dims& sizes, int first, int last) {
  int64_t product = 1;
  for (int i = first; i < last; ++i) product *= sizes[i];
  return product;
}

// Dim `dim` of `a` tiled `times` times: a viewed as [before, 1, size, after], expanded to
// [before, times, size, after] and copied. The copy is a clone, never a reshape, which could keep
// an expanded dim as a view (a size-1 dim merges with any stride) sharing a's memory.
Tensor repeat_one_dim(const Tensor& a, int dim, int64_t times) {
  const Dims& sizes = a.sizes();
  const int64_t before = product_of(sizes, 0, dim), after = product_of(sizes, dim + 1, sizes.size());
  Dims result = sizes;
  result[dim] = sizes[dim] * times;
  const Tensor grouped = reshape(a, {before, 1, sizes[dim], after});
  return view(clone(expand(grouped, {before, times, sizes[dim], after})), result);
}

}  // namespace

Tensor flip(const Tensor& a, const Dims& dims, Where where) {
  CallSiteScope site(where);
  std::array<bool, Dims::kMaxRank> seen{};
  Dims wrapped;
  for (const int64_t dim : dims) {
    const int d = wrap_dim(dim, a.dim(), "flip");
    check(!seen[d], "flip: dim {} appears more than once in dims {}", d, dims);
    seen[d] = true;
    wrapped.push_back(d);
  }
  if (wrapped.empty()) return clone(a);  // torch.flip returns a new tensor
  Tensor result = a;
  const TensorOptions index_options{.dtype = kInt64, .device = a.device()};
  for (const int64_t d : wrapped) {
    const int64_t size = a.dim() == 0 ? 1 : a.size(d);
    result = index_select(result, d, arange(static_cast<double>(size - 1), -1.0, -1.0, index_options));
  }
  return result;
}

Tensor repeat(const Tensor& a, const Dims& repeats, Where where) {
  CallSiteScope site(where);
  check(repeats.size() >= a.dim(),
        "repeat: {} repeats {} for a tensor of {} dims (shape {}); give at least one per dim", repeats.size(),
        repeats, a.dim(), a.sizes());
  for (const int64_t times : repeats)
    check(times >= 0, "repeat: repeats must be non-negative, got {} (shape {})", repeats, a.sizes());
  // The leading dims the extra repeats apply to.
  Dims padded = Dims::filled(repeats.size() - a.dim(), 1);
  for (const int64_t size : a.sizes()) padded.push_back(size);
  Dims result;
  int repeated_dims = 0;
  for (int i = 0; i < repeats.size(); ++i) {
    result.push_back(padded[i] * repeats[i]);
    repeated_dims += repeats[i] != 1;
  }
  check(result.checked_product().has_value(), "repeat: the result shape {} has more elements than an int64 counts",
        result);
  const Tensor source = reshape(a, padded);
  // One copy: each repeated dim i of size s becomes the pair (repeats[i], s) of an expanded view
  // of [.., 1, s, ..], and the copy merges the pairs. When the pairs need more dims than a
  // tensor has, one repeated dim at a time.
  if (padded.size() + repeated_dims > Dims::kMaxRank) {
    Tensor tiled = source;
    for (int i = 0; i < repeats.size(); ++i)
      if (repeats[i] != 1) tiled = repeat_one_dim(tiled, i, repeats[i]);
    return tiled;
  }
  Dims paired, expanded;
  for (int i = 0; i < repeats.size(); ++i) {
    if (repeats[i] != 1) {
      paired.push_back(1);
      expanded.push_back(repeats[i]);
    }
    paired.push_back(padded[i]);
    expanded.push_back(padded[i]);
  }
  return view(clone(expand(reshape(source, paired), expanded)), result);
}

Tensor roll(const Tensor& a, const Dims& shifts, const Dims& dims, Where where) {
  CallSiteScope site(where);
  check(!shifts.empty(), "roll: shifts must not be empty");
  if (dims.empty()) {
    check(shifts.size() == 1, "roll: without dims, shifts must have one entry (the flattened tensor's), got {}",
          shifts);
    return reshape(roll(flatten(a), shifts, {0}), a.sizes());
  }
  check(shifts.size() == dims.size(), "roll: shifts {} and dims {} must have as many entries", shifts, dims);
  Tensor result = a;
  for (int i = 0; i < dims.size(); ++i) {
    const int d = wrap_dim(dims[i], a.dim(), "roll");
    const int64_t size = a.size(d);
    if (size == 0) continue;
    // The element at index j moves to (j + shift) mod size: the output starts at size - shift.
    const int64_t start = ((size - shifts[i] % size) % size);
    if (start == 0) continue;
    result = cat({slice(result, d, start, size), slice(result, d, 0, start)}, d);
  }
  return result.is_same(a) ? clone(a) : result;
}

}  // namespace ember
