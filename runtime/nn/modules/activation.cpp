// Activation modules' forwards: each calls the op of the same name with the caller's location.
#include "runtime/nn/modules/activation.h"

#include "runtime/functional.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

Tensor ReLUImpl::forward(const Tensor& input, Where where) { return relu(input, where); }

Tensor GELUImpl::forward(const Tensor& input, Where where) {
  return gelu(input, options_.tanh_approximation, where);
}

std::string GELUImpl::extra_repr() const {
  return options_.tanh_approximation ? "approximate='tanh'" : "approximate='none'";
}

Tensor SiLUImpl::forward(const Tensor& input, Where where) { return silu(input, where); }

Tensor TanhImpl::forward(const Tensor& input, Where where) { return ember::tanh(input, where); }

Tensor SigmoidImpl::forward(const Tensor& input, Where where) { return sigmoid(input, where); }

Tensor LeakyReLUImpl::forward(const Tensor& input, Where where) {
  return leaky_relu(input, options_.negative_slope, where);
}

std::string LeakyReLUImpl::extra_repr() const { return "negative_slope=" + python_float(options_.negative_slope); }

Tensor ELUImpl::forward(const Tensor& input, Where where) { return elu(input, options_.alpha, where); }

std::string ELUImpl::extra_repr() const { return "alpha=" + python_float(options_.alpha); }

Tensor SoftplusImpl::forward(const Tensor& input, Where where) {
  return softplus(input, options_.beta, options_.threshold, where);
}

std::string SoftplusImpl::extra_repr() const {
  return "beta=" + python_float(options_.beta) + ", threshold=" + python_float(options_.threshold);
}

Tensor SoftmaxImpl::forward(const Tensor& input, Where where) { return softmax(input, options_.dim, where); }

std::string SoftmaxImpl::extra_repr() const { return fmt::format("dim={}", options_.dim); }

Tensor LogSoftmaxImpl::forward(const Tensor& input, Where where) { return log_softmax(input, options_.dim, where); }

std::string LogSoftmaxImpl::extra_repr() const { return fmt::format("dim={}", options_.dim); }

}  // namespace ember::nn
