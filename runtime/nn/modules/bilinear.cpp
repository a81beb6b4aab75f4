// nn::Bilinear: parameter creation, PyTorch's initialisation and the forward through F::bilinear.
#include "runtime/nn/modules/bilinear.h"

#include <cmath>

#include "runtime/nn/functional_layers_more.h"
#include "runtime/nn/init.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

BilinearImpl::BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features, BilinearOptions options,
                           Where where)
    : Module("Bilinear"), in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {
  CallSiteScope site(where);
  check(in1_features >= 0 && in2_features >= 0 && out_features >= 0,
        "Bilinear: feature counts must be non-negative, got in1_features={} in2_features={} out_features={}",
        in1_features, in2_features, out_features);
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  weight = register_parameter("weight", empty({out_features, in1_features, in2_features}, tensor_options));
  if (options.bias) bias = register_parameter("bias", empty({out_features}, tensor_options));
  reset_parameters(options.generator);
}

void BilinearImpl::reset_parameters(Generator* generator) {
  // PyTorch's bound 1 / sqrt(weight.size(1)); with in1_features = 0 (where Python divides by zero)
  // the parameters are set to 0.
  const double bound = in1_features_ > 0 ? 1.0 / std::sqrt(static_cast<double>(in1_features_)) : 0.0;
  init::uniform_(weight, -bound, bound, generator);
  if (bias.defined()) init::uniform_(bias, -bound, bound, generator);
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2, Where where) {
  return functional::bilinear(input1, input2, weight, bias, where);
}

std::string BilinearImpl::extra_repr() const {
  return fmt::format("in1_features={}, in2_features={}, out_features={}, bias={}", in1_features_, in2_features_,
                     out_features_, python_bool(bias.defined()));
}

}  // namespace ember::nn
