// split, chunk and unbind: views of the input made by slice (and select), so the pieces share its
// storage, their gradients are slice's, and a compiled function captures them as the views they
// are. The pieces are marked as returned together, which refuses in-place updates of them while
// recording gradients, as PyTorch does (autograd/view_history.h).
#include <fmt/ranges.h>

#include "runtime/autograd/view_history.h"
#include "runtime/functional.h"

namespace ember {

namespace {

// `function` names the caller in errors: split, split_with_sizes or chunk.
void check_splittable(const Tensor& a, const char* function) {
  check(a.dim() > 0, "{}: expects a tensor with at least 1 dim, got a 0-d tensor", function);
}

std::vector<Tensor> pieces_of_sizes(const Tensor& a, const std::vector<int64_t>& sizes, int dim,
                                    const char* function) {
  std::vector<Tensor> pieces;
  pieces.reserve(sizes.size());
  int64_t start = 0;
  for (const int64_t size : sizes) {
    pieces.push_back(slice(a, dim, start, start + size));
    start += size;
  }
  autograd::mark_views_returned_together(pieces, function);
  return pieces;
}

std::vector<Tensor> split_evenly(const Tensor& a, int64_t split_size, int64_t dim, const char* function) {
  check_splittable(a, function);
  const int wrapped = wrap_dim(dim, a.dim(), function);
  const int64_t size = a.size(wrapped);
  check(split_size >= 0, "{}: split_size must be non-negative, got {} (dim {} of shape {})", function, split_size,
        dim, a.sizes());
  check(split_size > 0 || size == 0,
        "{}: split_size can be 0 only for a dim of size 0, got split_size 0 for dim {} of size {} (shape {})",
        function, dim, size, a.sizes());
  // PyTorch's count: at least one piece, so a split_size past the size (or an empty dim) gives
  // the whole dim as one piece. Written without `size + split_size`, which could overflow.
  const int64_t count = split_size == 0 ? 1 : std::max<int64_t>(size / split_size + (size % split_size != 0), 1);
  std::vector<int64_t> sizes(static_cast<size_t>(count), split_size);
  sizes.back() = size - split_size * (count - 1);
  return pieces_of_sizes(a, sizes, wrapped, function);
}

std::vector<Tensor> split_sized(const Tensor& a, const std::vector<int64_t>& split_sizes, int64_t dim,
                                const char* function) {
  check_splittable(a, function);
  const int wrapped = wrap_dim(dim, a.dim(), function);
  const int64_t size = a.size(wrapped);
  int64_t total = 0;
  for (const int64_t piece : split_sizes) {
    check(piece >= 0, "{}: split_sizes must be non-negative, got [{}]", function, fmt::join(split_sizes, ", "));
    // A sum past the dim's size is already wrong; stopping there keeps it from overflowing.
    total = piece > size - total ? size + 1 : total + piece;
  }
  check(total == size, "{}: split_sizes [{}] must sum to {}, the size of dim {} (shape {})", function,
        fmt::join(split_sizes, ", "), size, dim, a.sizes());
  return pieces_of_sizes(a, split_sizes, wrapped, function);
}

}  // namespace

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim, Where where) {
  CallSiteScope site(where);
  return split_evenly(a, split_size, dim, "split");
}

std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& split_sizes, int64_t dim, Where where) {
  CallSiteScope site(where);
  return split_sized(a, split_sizes, dim, "split");
}

std::vector<Tensor> split_with_sizes(const Tensor& a, const std::vector<int64_t>& split_sizes, int64_t dim,
                                     Where where) {
  CallSiteScope site(where);
  return split_sized(a, split_sizes, dim, "split_with_sizes");
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim, Where where) {
  CallSiteScope site(where);
  check_splittable(a, "chunk");
  check(chunks > 0, "chunk: chunks must be greater than 0, got {}", chunks);
  const int wrapped = wrap_dim(dim, a.dim(), "chunk");
  const int64_t size = a.size(wrapped);
  // An empty dim gives `chunks` empty pieces (split would give one), as PyTorch's chunk does.
  if (size == 0) return split_sized(a, std::vector<int64_t>(static_cast<size_t>(chunks), 0), wrapped, "chunk");
  return split_evenly(a, size / chunks + (size % chunks != 0), wrapped, "chunk");
}

std::vector<Tensor> unbind(const Tensor& a, int64_t dim, Where where) {
  CallSiteScope site(where);
  check(a.dim() > 0, "unbind: expects a tensor with at least 1 dim, got a 0-d tensor");
  const int wrapped = wrap_dim(dim, a.dim(), "unbind");
  std::vector<Tensor> pieces;
  pieces.reserve(static_cast<size_t>(a.size(wrapped)));
  for (int64_t i = 0; i < a.size(wrapped); ++i) pieces.push_back(a.select(wrapped, i));
  autograd::mark_views_returned_together(pieces, "unbind");
  return pieces;
}

}  // namespace ember
