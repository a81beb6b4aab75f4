// Tensor methods and operators: each forwards to the function of the same name.
#include <ostream>

#include "runtime/functional.h"

namespace ember {

Tensor Tensor::view(const Dims& shape, Where where) const { return ember::view(*this, shape, where); }
Tensor Tensor::reshape(const Dims& shape, Where where) const { return ember::reshape(*this, shape, where); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1, Where where) const {
  return ember::transpose(*this, dim0, dim1, where);
}
Tensor Tensor::t(Where where) const {
  CallSiteScope site(where);
  check(dim() <= 2, "t: expects a tensor with <= 2 dims, got shape {}", sizes());
  // A tensor of fewer than 2 dims comes back as a view of itself, not the same handle: setting
  // requires_grad or detach_() on the result must not change the input (PyTorch: transpose(0, 0)).
  return dim() < 2 ? ember::transpose(*this, 0, 0, where) : ember::transpose(*this, 0, 1, where);
}
Tensor Tensor::permute(const Dims& order, Where where) const { return ember::permute(*this, order, where); }
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step, Where where) const {
  return ember::slice(*this, dim, start, end, step, where);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length, Where where) const {
  CallSiteScope site(where);
  check(this->dim() > 0, "narrow: cannot be applied to a 0-d tensor (dim {}, start {}, length {})", dim, start, length);
  check(length >= 0, "narrow: length must be non-negative, got {}", length);
  const int64_t size = sizes()[wrap_dim(dim, this->dim(), "narrow")];
  const int64_t begin = start < 0 ? start + size : start;
  check(begin >= 0 && begin <= size && length <= size - begin,
        "narrow: start {} and length {} are out of range for dim {} of size {}", start, length, dim, size);
  return ember::slice(*this, dim, begin, begin + length, 1, where);
}
Tensor Tensor::select(int64_t dim, int64_t index, Where where) const {
  CallSiteScope site(where);
  check(this->dim() > 0, "select: cannot be applied to a 0-d tensor (dim {}, index {})", dim, index);
  const int64_t size = sizes()[wrap_dim(dim, this->dim(), "select")];
  check(index >= -size && index < size, "select: index {} is out of range for dim {} of size {}", index,
        dim, size);
  const int64_t begin = index < 0 ? index + size : index;
  return ember::squeeze(ember::slice(*this, dim, begin, begin + 1, 1, where), dim, where);
}
Tensor Tensor::expand(const Dims& shape, Where where) const { return ember::expand(*this, shape, where); }
Tensor Tensor::expand_as(const Tensor& other, Where where) const {
  return ember::expand(*this, other.sizes(), where);
}
Tensor Tensor::squeeze(Where where) const { return ember::squeeze(*this, std::nullopt, where); }
Tensor Tensor::squeeze(int64_t dim, Where where) const { return ember::squeeze(*this, dim, where); }
Tensor Tensor::unsqueeze(int64_t dim, Where where) const { return ember::unsqueeze(*this, dim, where); }
Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2, Where where) const {
  return ember::diagonal(*this, offset, dim1, dim2, where);
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim, Where where) const {
  return ember::flatten(*this, start_dim, end_dim, where);
}
Tensor Tensor::contiguous(Where where) const {
  return is_contiguous() ? *this : ember::clone(*this, where);
}
Tensor Tensor::clone(Where where) const { return ember::clone(*this, where); }
Tensor Tensor::to(DType dtype, Where where) const {
  return dtype == this->dtype() ? *this : ember::to_dtype(*this, dtype, where);
}
Tensor Tensor::to(Device device, bool non_blocking, Where where) const {
  return device == this->device() ? *this : ember::to_device(*this, device, non_blocking, where);
}

Tensor Tensor::add(const Tensor& other, double alpha, Where where) const { return ember::add(*this, other, alpha, where); }
Tensor Tensor::sub(const Tensor& other, double alpha, Where where) const { return ember::sub(*this, other, alpha, where); }
Tensor Tensor::mul(const Tensor& other, Where where) const { return ember::mul(*this, other, where); }
Tensor Tensor::div(const Tensor& other, Where where) const { return ember::div(*this, other, where); }
Tensor Tensor::add(double value, Where where) const { return ember::add(*this, value, where); }
Tensor Tensor::sub(double value, Where where) const { return ember::sub(*this, value, where); }
Tensor Tensor::mul(double value, Where where) const { return ember::mul(*this, value, where); }
Tensor Tensor::div(double value, Where where) const { return ember::div(*this, value, where); }
Tensor Tensor::neg(Where where) const { return ember::neg(*this, where); }
Tensor Tensor::exp(Where where) const { return ember::exp(*this, where); }
Tensor Tensor::log(Where where) const { return ember::log(*this, where); }
Tensor Tensor::sqrt(Where where) const { return ember::sqrt(*this, where); }
Tensor Tensor::abs(Where where) const { return ember::abs(*this, where); }
Tensor Tensor::pow(double exponent, Where where) const { return ember::pow(*this, exponent, where); }
Tensor Tensor::relu(Where where) const { return ember::relu(*this, where); }
Tensor Tensor::sigmoid(Where where) const { return ember::sigmoid(*this, where); }
Tensor Tensor::tanh(Where where) const { return ember::tanh(*this, where); }
Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max, Where where) const {
  return ember::clamp(*this, min, max, where);
}
Tensor Tensor::matmul(const Tensor& other, Where where) const { return ember::matmul(*this, other, where); }
Tensor Tensor::sum(Where where) const { return ember::sum(*this, {}, false, where); }
Tensor Tensor::sum(const Dims& dims, bool keepdim, Where where) const { return ember::sum(*this, dims, keepdim, where); }
Tensor Tensor::mean(Where where) const { return ember::mean(*this, {}, false, where); }
Tensor Tensor::mean(const Dims& dims, bool keepdim, Where where) const { return ember::mean(*this, dims, keepdim, where); }
// max() and min() reduce through amax / amin, whose own error for an empty tensor would name an op
// the user did not call.
Tensor Tensor::max(Where where) const {
  CallSiteScope site(where);
  check(numel() != 0, "max: cannot compute the maximum of an empty tensor (shape {}): the operation has no identity",
        sizes());
  return ember::amax(*this, {}, false, where);
}
Tensor Tensor::min(Where where) const {
  CallSiteScope site(where);
  check(numel() != 0, "min: cannot compute the minimum of an empty tensor (shape {}): the operation has no identity",
        sizes());
  return ember::amin(*this, {}, false, where);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim, Where where) const { return ember::argmax(*this, dim, keepdim, where); }
Tensor Tensor::isnan(Where where) const { return ember::isnan(*this, where); }
Tensor Tensor::isinf(Where where) const { return ember::isinf(*this, where); }
Tensor Tensor::isfinite(Where where) const { return ember::isfinite(*this, where); }
Tensor Tensor::logical_not(Where where) const { return ember::logical_not(*this, where); }
Tensor Tensor::logical_and(const Tensor& other, Where where) const { return ember::logical_and(*this, other, where); }
Tensor Tensor::logical_or(const Tensor& other, Where where) const { return ember::logical_or(*this, other, where); }
Tensor Tensor::logical_xor(const Tensor& other, Where where) const { return ember::logical_xor(*this, other, where); }
Tensor Tensor::any(Where where) const { return ember::any(*this, where); }
Tensor Tensor::any(int64_t dim, bool keepdim, Where where) const { return ember::any(*this, dim, keepdim, where); }
Tensor Tensor::all(Where where) const { return ember::all(*this, where); }
Tensor Tensor::all(int64_t dim, bool keepdim, Where where) const { return ember::all(*this, dim, keepdim, where); }
Tensor Tensor::count_nonzero(const Dims& dims, Where where) const { return ember::count_nonzero(*this, dims, where); }
Tensor Tensor::prod(std::optional<DType> dtype, Where where) const { return ember::prod(*this, dtype, where); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype, Where where) const {
  return ember::prod(*this, dim, keepdim, dtype, where);
}
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype, Where where) const {
  return ember::cumsum(*this, dim, dtype, where);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype, Where where) const {
  return ember::cumprod(*this, dim, dtype, where);
}
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim, Where where) const { return ember::cummax(*this, dim, where); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim, Where where) const { return ember::cummin(*this, dim, where); }
Tensor Tensor::logcumsumexp(int64_t dim, Where where) const { return ember::logcumsumexp(*this, dim, where); }
Tensor Tensor::softmax(int64_t dim, Where where) const { return ember::softmax(*this, dim, where); }
Tensor Tensor::log_softmax(int64_t dim, Where where) const { return ember::log_softmax(*this, dim, where); }

Tensor& Tensor::add_(const Tensor& other, double alpha, Where where) { return ember::add_(*this, other, alpha, where); }
Tensor& Tensor::mul_(const Tensor& other, Where where) { return ember::mul_(*this, other, where); }
Tensor& Tensor::mul_(double value, Where where) { return ember::mul_(*this, value, where); }
Tensor& Tensor::copy_(const Tensor& source, Where where) { return ember::copy_(*this, source, where); }
Tensor& Tensor::fill_(double value, Where where) { return ember::fill_(*this, value, where); }
Tensor& Tensor::zero_(Where where) { return ember::zero_(*this, where); }

Tensor operator+(const Tensor& a, Operand<Tensor> b) { return add(a, b.value, 1.0, b.where); }
Tensor operator-(const Tensor& a, Operand<Tensor> b) { return sub(a, b.value, 1.0, b.where); }
Tensor operator*(const Tensor& a, Operand<Tensor> b) { return mul(a, b.value, b.where); }
Tensor operator/(const Tensor& a, Operand<Tensor> b) { return div(a, b.value, b.where); }
Tensor operator+(const Tensor& a, Operand<double> b) { return add(a, b.value, b.where); }
Tensor operator-(const Tensor& a, Operand<double> b) { return sub(a, b.value, b.where); }
Tensor operator*(const Tensor& a, Operand<double> b) { return mul(a, b.value, b.where); }
Tensor operator/(const Tensor& a, Operand<double> b) { return div(a, b.value, b.where); }
Tensor operator+(double a, Operand<Tensor> b) { return add(b.value, a, b.where); }
Tensor operator-(double a, Operand<Tensor> b) { return rsub(b.value, a, b.where); }
Tensor operator*(double a, Operand<Tensor> b) { return mul(b.value, a, b.where); }
Tensor operator/(double a, Operand<Tensor> b) { return rdiv(b.value, a, b.where); }
Tensor operator-(Operand<Tensor> a) { return neg(a.value, a.where); }
Tensor operator==(const Tensor& a, Operand<Tensor> b) { return eq(a, b.value, b.where); }
Tensor operator!=(const Tensor& a, Operand<Tensor> b) { return ne(a, b.value, b.where); }
Tensor operator<(const Tensor& a, Operand<Tensor> b) { return lt(a, b.value, b.where); }
Tensor operator<=(const Tensor& a, Operand<Tensor> b) { return le(a, b.value, b.where); }
Tensor operator>(const Tensor& a, Operand<Tensor> b) { return gt(a, b.value, b.where); }
Tensor operator>=(const Tensor& a, Operand<Tensor> b) { return ge(a, b.value, b.where); }
Tensor& operator+=(Tensor& a, Operand<Tensor> b) { return add_(a, b.value, 1.0, b.where); }
Tensor& operator*=(Tensor& a, Operand<Tensor> b) { return mul_(a, b.value, b.where); }
std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.str(); }

}  // namespace ember
