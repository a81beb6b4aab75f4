// Tensor methods for the composite shape and masking functions (runtime/functional_shape_ops.h):
// each forwards to the function of the same name.
#include "runtime/functional.h"

namespace ember {

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim, Where where) const {
  return ember::split(*this, split_size, dim, where);
}
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& split_sizes, int64_t dim, Where where) const {
  return ember::split(*this, split_sizes, dim, where);
}
std::vector<Tensor> Tensor::split_with_sizes(const std::vector<int64_t>& split_sizes, int64_t dim,
                                             Where where) const {
  return ember::split_with_sizes(*this, split_sizes, dim, where);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim, Where where) const {
  return ember::chunk(*this, chunks, dim, where);
}
std::vector<Tensor> Tensor::unbind(int64_t dim, Where where) const { return ember::unbind(*this, dim, where); }
Tensor Tensor::masked_fill(const Tensor& mask, double value, Where where) const {
  return ember::masked_fill(*this, mask, value, where);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value, Where where) const {
  return ember::masked_fill(*this, mask, value, where);
}
Tensor Tensor::tril(int64_t diagonal, Where where) const { return ember::tril(*this, diagonal, where); }
Tensor Tensor::triu(int64_t diagonal, Where where) const { return ember::triu(*this, diagonal, where); }
Tensor Tensor::flip(const Dims& dims, Where where) const { return ember::flip(*this, dims, where); }
Tensor Tensor::repeat(const Dims& repeats, Where where) const { return ember::repeat(*this, repeats, where); }
Tensor Tensor::roll(const Dims& shifts, const Dims& dims, Where where) const {
  return ember::roll(*this, shifts, dims, where);
}

Tensor& Tensor::masked_fill_(const Tensor& mask, double value, Where where) {
  return ember::masked_fill_(*this, mask, value, where);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value, Where where) {
  return ember::masked_fill_(*this, mask, value, where);
}
Tensor& Tensor::tril_(int64_t diagonal, Where where) { return ember::tril_(*this, diagonal, where); }
Tensor& Tensor::triu_(int64_t diagonal, Where where) { return ember::triu_(*this, diagonal, where); }

}  // namespace ember
