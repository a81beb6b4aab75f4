// Activation modules' forwards: each calls the op of the same name with the caller's location.
#include "runtime/nn/modules/activation.h"

#include "runtime/functional.h"

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

}  // namespace ember::nn
