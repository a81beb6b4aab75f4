// Tensor methods for the functions of runtime/functional_shape_more.h: each forwards to the
// function of the same name.
#include "runtime/functional.h"

namespace ember {

Tensor Tensor::movedim(const Dims& source, const Dims& destination, Where where) const {
  return ember::movedim(*this, source, destination, where);
}
Tensor Tensor::movedim(int64_t source, int64_t destination, Where where) const {
  return ember::movedim(*this, source, destination, where);
}
Tensor Tensor::moveaxis(const Dims& source, const Dims& destination, Where where) const {
  return ember::moveaxis(*this, source, destination, where);
}
Tensor Tensor::moveaxis(int64_t source, int64_t destination, Where where) const {
  return ember::moveaxis(*this, source, destination, where);
}
Tensor Tensor::swapaxes(int64_t dim0, int64_t dim1, Where where) const {
  return ember::swapaxes(*this, dim0, dim1, where);
}
Tensor Tensor::swapdims(int64_t dim0, int64_t dim1, Where where) const {
  return ember::swapdims(*this, dim0, dim1, where);
}
Tensor Tensor::unflatten(int64_t dim, const Dims& sizes, Where where) const {
  return ember::unflatten(*this, dim, sizes, where);
}
Tensor Tensor::tile(const Dims& reps, Where where) const { return ember::tile(*this, reps, where); }
Tensor Tensor::diag(int64_t diagonal, Where where) const { return ember::diag(*this, diagonal, where); }
Tensor Tensor::diag_embed(int64_t offset, int64_t dim1, int64_t dim2, Where where) const {
  return ember::diag_embed(*this, offset, dim1, dim2, where);
}
Tensor Tensor::diagflat(int64_t offset, Where where) const { return ember::diagflat(*this, offset, where); }
Tensor Tensor::trace(Where where) const { return ember::trace(*this, where); }
Tensor Tensor::kron(const Tensor& other, Where where) const { return ember::kron(*this, other, where); }
Tensor Tensor::cross(const Tensor& other, int64_t dim, Where where) const {
  return ember::cross(*this, other, dim, where);
}
Tensor Tensor::outer(const Tensor& other, Where where) const { return ember::outer(*this, other, where); }
Tensor Tensor::dot(const Tensor& other, Where where) const { return ember::dot(*this, other, where); }

}  // namespace ember
