// Shape helpers: strides, dim wrapping, broadcasting.
#include "runtime/dims.h"

namespace ember {

std::string Dims::str() const { return fmt::format("[{}]", fmt::join(begin(), end(), ", ")); }

void Dims::fail_too_many_elements() const {
  fail("shape {} has more elements than an int64 can count", *this);
}

Dims contiguous_strides(const Dims& sizes) {
  Dims strides = Dims::filled(sizes.size(), 1);
  for (int i = sizes.size() - 2; i >= 0; --i) {
    // Checked even when a size is 0: [0, 2^62, 2^62] has no elements but strides past int64.
    const bool overflow = __builtin_mul_overflow(strides[i + 1], std::max<int64_t>(sizes[i + 1], 1), &strides[i]);
    if (overflow) fail("shape {} has strides past what an int64 can hold", sizes);
  }
  return strides;
}

int wrap_dim(int64_t dim, int rank, std::string_view op) {
  const int64_t bound = std::max(rank, 1);  // a 0-d tensor accepts dim 0 and -1, like PyTorch
  check(dim >= -bound && dim < bound, "{}: dim {} is out of range for a tensor of rank {}", op,
        dim, rank);
  return static_cast<int>(dim < 0 ? dim + bound : dim);
}

int wrap_insert_dim(int64_t dim, int rank, std::string_view op) {
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
