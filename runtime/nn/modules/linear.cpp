// nn::Linear: parameter creation, PyTorch's default initialisation, forward.
#include "runtime/nn/modules/linear.h"

#include <cmath>

#include "runtime/functional.h"
#include "runtime/nn/init.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, LinearOptions options, Where where)
    : Module("Linear"), in_features_(in_features), out_features_(out_features) {
  CallSiteScope site(where);
  check(in_features >= 0 && out_features >= 0,
        "Linear: feature counts must be non-negative, got in_features={} out_features={}", in_features,
        out_features);
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  weight = register_parameter("weight", empty({out_features, in_features}, tensor_options));
  if (options.bias) bias = register_parameter("bias", empty({out_features}, tensor_options));
  reset_parameters(options.generator);
}

void LinearImpl::reset_parameters(Generator* generator) {
  // kaiming_uniform_(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default.
  if (in_features_ > 0) init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::FanIn,
                                               init::Nonlinearity::LeakyReLU, generator);
  if (bias.defined()) {
    const double bound = in_features_ > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features_)) : 0.0;
    init::uniform_(bias, -bound, bound, generator);
  }
}

Tensor LinearImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  return linear(input, weight, bias);
}

std::string LinearImpl::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features_, out_features_,
                     python_bool(bias.defined()));
}

}  // namespace ember::nn
