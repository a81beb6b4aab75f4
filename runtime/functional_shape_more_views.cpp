// movedim, swapaxes, narrow, unflatten, meshgrid and tile (runtime/functional_shape_more.h): all
// but tile are views made by permute, transpose, slice, view and expand, so they share the input's
// storage and take those ops' gradients.
#include <algorithm>
#include <array>
#include <string>

#include "runtime/functional.h"

namespace ember {

namespace {

// The dims of `dims` wrapped into [0, rank), refusing a repeat (named after `role`).
Dims wrapped_unique(const Dims& dims, int rank, const Dims& source, const Dims& destination, const char* role) {
  std::array<bool, Dims::kMaxRank> seen{};
  Dims wrapped;
  for (const int64_t dim : dims) {
    const int d = wrap_dim(dim, rank, "movedim");
    check(!seen[d], "movedim: repeated dim in `{}` ({}), moving source {} to destination {}", role, dims, source,
          destination);
    seen[d] = true;
    wrapped.push_back(d);
  }
  return wrapped;
}

}  // namespace

Tensor movedim(const Tensor& a, const Dims& source, const Dims& destination, Where where) {
  CallSiteScope site(where);
  check(source.size() == destination.size(),
        "movedim: Invalid source or destination dims: source ({} dims) should contain the same number of dims as "
        "destination ({} dims)",
        source, destination);
  const int rank = a.dim();
  const Dims from = wrapped_unique(source, rank, source, destination, "source");
  const Dims to = wrapped_unique(destination, rank, source, destination, "destination");
  // order[p] is the input dim shown at output position p: the moved dims first, then the others
  // in increasing order in the positions left free.
  std::array<int64_t, Dims::kMaxRank> order;
  order.fill(-1);
  std::array<bool, Dims::kMaxRank> moved{};
  for (int i = 0; i < from.size(); ++i) {
    order[to[i]] = from[i];
    moved[from[i]] = true;
  }
  int next = 0;
  Dims permutation;
  for (int position = 0; position < rank; ++position) {
    if (order[position] < 0) {
      while (moved[next]) ++next;
      order[position] = next++;
    }
    permutation.push_back(order[position]);
  }
  // A 0-d tensor (dims 0 and -1 wrap to 0) has nothing to permute; a view of it all the same, as
  // PyTorch returns.
  return rank == 0 ? view(a, {}) : permute(a, permutation);
}

Tensor movedim(const Tensor& a, int64_t source, int64_t destination, Where where) {
  return movedim(a, Dims{source}, Dims{destination}, where);
}

Tensor moveaxis(const Tensor& a, const Dims& source, const Dims& destination, Where where) {
  return movedim(a, source, destination, where);
}

Tensor moveaxis(const Tensor& a, int64_t source, int64_t destination, Where where) {
  return movedim(a, Dims{source}, Dims{destination}, where);
}

Tensor swapaxes(const Tensor& a, int64_t dim0, int64_t dim1, Where where) {
  CallSiteScope site(where);
  // Checked here so that a bad dim is reported under the name the user called.
  wrap_dim(dim0, a.dim(), "swapaxes");
  wrap_dim(dim1, a.dim(), "swapaxes");
  return transpose(a, dim0, dim1);
}

Tensor swapdims(const Tensor& a, int64_t dim0, int64_t dim1, Where where) {
  CallSiteScope site(where);
  wrap_dim(dim0, a.dim(), "swapdims");
  wrap_dim(dim1, a.dim(), "swapdims");
  return transpose(a, dim0, dim1);
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length, Where where) {
  return a.narrow(dim, start, length, where);
}

Tensor unflatten(const Tensor& a, int64_t dim, const Dims& sizes, Where where) {
  CallSiteScope site(where);
  check(!sizes.empty(), "unflatten: sizes must be non-empty (dim {}, input shape {})", dim, a.sizes());
  check(a.dim() > 0, "unflatten: cannot unflatten a 0-d tensor (dim {}, sizes {})", dim, sizes);
  const int d = wrap_dim(dim, a.dim(), "unflatten");
  const int64_t size = a.size(d);
  check(a.dim() - 1 + sizes.size() <= Dims::kMaxRank,
        "unflatten: the result would have {} dims (input shape {}, sizes {}): ember tensors have at most {}",
        a.dim() - 1 + sizes.size(), a.sizes(), sizes, Dims::kMaxRank);
  int inferred = -1;
  int64_t known = 1;
  bool overflowed = false, has_zero = false;
  for (int i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      check(inferred < 0, "unflatten: only one dimension can be inferred, got sizes {}", sizes);
      inferred = i;
      continue;
    }
    check(sizes[i] >= 0, "unflatten: invalid size {} in sizes {}", sizes[i], sizes);
    has_zero = has_zero || sizes[i] == 0;
    overflowed = __builtin_mul_overflow(known, sizes[i], &known) || overflowed;
  }
  const auto mismatch = [&] {
    fail("unflatten: Provided sizes {} don't multiply up to the size of dim {} ({}) in the input tensor {}", sizes, dim,
         size, a.sizes());
  };
  if (overflowed && !has_zero) mismatch();  // a product past int64 cannot be a dim's size
  Dims resolved = sizes;
  if (inferred >= 0) {
    check(!has_zero,
          "unflatten: cannot infer the -1 in sizes {}: the other sizes multiply to 0, so any value would do "
          "(dim {} of size {})",
          sizes, dim, size);
    if (size % known != 0) mismatch();
    resolved[inferred] = size / known;
  }
  if (resolved.checked_product() != size) mismatch();
  Dims shape;
  for (int i = 0; i < a.dim(); ++i) {
    if (i != d) {
      shape.push_back(a.size(i));
      continue;
    }
    for (const int64_t piece : resolved) shape.push_back(piece);
  }
  // Splitting one dim is always possible without copying (each piece's stride is the dim's stride
  // times the sizes after it), so view never refuses here.
  return view(a, shape);
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing, Where where) {
  CallSiteScope site(where);
  check(!tensors.empty(), "meshgrid expects a non-empty TensorList");
  check(indexing == "ij" || indexing == "xy", "meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {}",
        std::string(indexing));
  check(tensors.size() <= static_cast<size_t>(Dims::kMaxRank),
        "meshgrid: {} tensors would make results of {} dims: ember tensors have at most {}", tensors.size(),
        tensors.size(), Dims::kMaxRank);
  for (size_t i = 0; i < tensors.size(); ++i) {
    check(tensors[i].dim() <= 1, "meshgrid: Expected 0D or 1D tensor in the tensor list but got tensor {} of shape {}",
          i, tensors[i].sizes());
    check(tensors[i].dtype() == tensors[0].dtype(),
          "meshgrid expects all tensors to have the same dtype: tensor 0 is {}, tensor {} is {}", tensors[0].dtype(), i,
          tensors[i].dtype());
    check(tensors[i].device() == tensors[0].device(),
          "meshgrid expects all tensors to have the same device: tensor 0 is on {}, tensor {} on {}",
          tensors[0].device(), i, tensors[i].device());
  }
  // "xy" is "ij" with the first two inputs (and so the first two results) swapped.
  std::vector<Tensor> inputs = tensors;
  const bool swap = indexing == "xy" && inputs.size() >= 2;
  if (swap) std::swap(inputs[0], inputs[1]);
  Dims shape;
  for (const Tensor& input : inputs) shape.push_back(input.numel());
  std::vector<Tensor> grids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Dims along = Dims::filled(shape.size(), 1);
    along[i] = shape[i];
    grids.push_back(expand(view(inputs[i], along), shape));
  }
  if (swap) std::swap(grids[0], grids[1]);
  return grids;
}

Tensor tile(const Tensor& a, const Dims& reps, Where where) {
  CallSiteScope site(where);
  for (const int64_t times : reps)
    check(times >= 0, "tile: reps must be non-negative, got {} (shape {})", reps, a.sizes());
  Dims padded = Dims::filled(std::max(a.dim() - reps.size(), 0), 1);
  for (const int64_t times : reps) padded.push_back(times);
  // The result's size is checked here too, so that its error names tile rather than repeat.
  Dims result = Dims::filled(padded.size() - a.dim(), 1);
  for (const int64_t size : a.sizes()) result.push_back(size);
  bool overflowed = false;
  for (int d = 0; d < padded.size(); ++d)
    overflowed = __builtin_mul_overflow(result[d], padded[d], &result[d]) || overflowed;
  check(!overflowed && result.checked_product().has_value(),
        "tile: the input of shape {} tiled {} times would have more elements than an int64 counts", a.sizes(), reps);
  return repeat(a, padded);
}

}  // namespace ember
