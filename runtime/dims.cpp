// Shape helpers: strides, dim wrapping, broadcasting.
#include "runtime/dims.h"

namespace ember {

std::string Dims::str() const { return fmt::format("[{}]", fmt::join(begin(), end(), ", ")); }

void Dims::fail_too_many_elements() const {
  fail("shape {} has more elements than an int64 can count", *this);
}

void Dims::fail_no_room_for_dim() const {
  fail("shape {} cannot take another dim: ember tensors have at most {} dimensions", *this, kMaxRank);
}

void Dims::fail_too_many_dims(size_t count, const std::source_location& where) {
  CallSiteScope site(where);  // an op's own scope, when one is open, names the user's line instead
  fail("a shape of {} dims was given: ember tensors have at most {} dimensions", count, kMaxRank);
}

Dims contiguous_strides(const Dims& sizes, std::string_view op) {
  Dims strides = Dims::filled(sizes.size(), 1);
  for (int i = sizes.size() - 2; i >= 0; --i) {
    // Checked even when a size is 0: [0, 2^62, 2^62] has no elements but strides past int64.
    const bool overflow = __builtin_mul_overflow(strides[i + 1], std::max<int64_t>(sizes[i + 1], 1), &strides[i]);
    if (overflow) fail("{}: shape {} has strides past what an int64 can hold", op, sizes);
  }
  return strides;
}

std::optional<Dims> view_strides(const Dims& sizes, const Dims& strides, const Dims& shape, std::string_view op) {
  Dims result = contiguous_strides(shape, op);
  if (sizes.product() == 0 || sizes.size() == 0) return result;  // no element whose place could differ
  // Walk the input from its last dim, grouping dims into chunks that are contiguous with each
  // other (stride[d] == size[d + 1] * stride[d + 1], size-1 dims joining any chunk). Each chunk,
  // a run of evenly spaced elements with the stride of its last dim, must be covered exactly by
  // consecutive dims of `shape`, which then step through it with that base stride.
  int out = shape.size() - 1;
  int64_t chunk_stride = strides[sizes.size() - 1];
  int64_t chunk_elements = 1;
  for (int d = sizes.size() - 1; d >= 0; --d) {
    chunk_elements *= sizes[d];
    const bool chunk_ends = d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != chunk_elements * chunk_stride);
    if (!chunk_ends) continue;
    int64_t covered = 1;
    while (out >= 0 && (covered < chunk_elements || shape[out] == 1)) {
      result[out] = covered * chunk_stride;
      covered *= shape[out];
      --out;
    }
    if (covered != chunk_elements) return std::nullopt;  // a dim of `shape` would straddle two chunks
    if (d > 0) {
      chunk_stride = strides[d - 1];
      chunk_elements = 1;
    }
  }
  if (out != -1) return std::nullopt;
  return result;
}

int wrap_dim(int64_t dim, int rank, std::string_view op) {
  const int64_t bound = std::max(rank, 1);  // a 0-d tensor accepts dim 0 and -1, like PyTorch
  check(dim >= -bound && dim < bound, "{}: dim {} is out of range for a tensor of rank {}", op,
        dim, rank);
  return static_cast<int>(dim < 0 ? dim + bound : dim);
}

void check_room_for_dim(const Dims& sizes, std::string_view op) {
  check(sizes.size() < Dims::kMaxRank,
        "{}: the result would have {} dims (input shape {}): ember tensors have at most {}", op, sizes.size() + 1,
        sizes, Dims::kMaxRank);
}

int wrap_insert_dim(int64_t dim, int rank, std::string_view op) {
  check(rank < Dims::kMaxRank, "{}: the result would have {} dims: ember tensors have at most {}", op, rank + 1,
        Dims::kMaxRank);
  const int64_t positions = int64_t{rank} + 1;
  check(dim >= -positions && dim < positions,
        "{}: dim {} is out of range for a new dim of a tensor of rank {} (expected {} to {})", op, dim, rank,
        -positions, rank);
  return static_cast<int>(dim < 0 ? dim + positions : dim);
}

Dims broadcast_shapes(const Dims& a, const Dims& b, std::string_view op) {
  const int rank = std::max(a.size(), b.size());
  Dims result = Dims::filled(rank, 1);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.size() - rank + i;
    const int ib = b.size() - rank + i;
    const int64_t sa = ia >= 0 ? a[ia] : 1;
    const int64_t sb = ib >= 0 ? b[ib] : 1;
    check(sa == sb || sa == 1 || sb == 1,
          "{}: shapes {} and {} cannot be broadcast (size {} vs {} at dim {})", op, a, b, sa, sb, i);
    result[i] = sa == 1 ? sb : sa;
  }
  return result;
}

}  // namespace ember
