// The modules of activation_more.h: each forward calls its nn::functional function with the caller's
// location; constructors check what torch.nn's check, and extra_repr prints as theirs.
#include "runtime/nn/modules/activation_more.h"

#include "runtime/functional.h"
#include "runtime/nn/functional_activations_more.h"
#include "runtime/nn/init.h"
#include "runtime/nn/python_repr.h"
#include "runtime/nn/training_guard.h"

namespace ember::nn {

namespace F = functional;

Tensor ReLU6Impl::forward(const Tensor& input, Where where) { return F::relu6(input, where); }
Tensor HardswishImpl::forward(const Tensor& input, Where where) { return F::hardswish(input, where); }
Tensor HardsigmoidImpl::forward(const Tensor& input, Where where) { return F::hardsigmoid(input, where); }
Tensor MishImpl::forward(const Tensor& input, Where where) { return F::mish(input, where); }
Tensor LogSigmoidImpl::forward(const Tensor& input, Where where) { return F::logsigmoid(input, where); }
Tensor SoftsignImpl::forward(const Tensor& input, Where where) { return F::softsign(input, where); }
Tensor TanhshrinkImpl::forward(const Tensor& input, Where where) { return F::tanhshrink(input, where); }

HardtanhImpl::HardtanhImpl(HardtanhOptions options, Where where) : OptionActivationImpl("Hardtanh", options) {
  CallSiteScope site(where);
  check(options.max_val > options.min_val,
        "Hardtanh: max_val must be greater than min_val, got min_val = {} and "
        "max_val = {}",
        options.min_val, options.max_val);
}

Tensor HardtanhImpl::forward(const Tensor& input, Where where) {
  return F::hardtanh(input, options_.min_val, options_.max_val, where);
}

std::string HardtanhImpl::extra_repr() const {
  return "min_val=" + python_float(options_.min_val) + ", max_val=" + python_float(options_.max_val);
}

Tensor ThresholdImpl::forward(const Tensor& input, Where where) {
  return F::threshold(input, options_.threshold, options_.value, where);
}

std::string ThresholdImpl::extra_repr() const {
  return "threshold=" + python_float(options_.threshold) + ", value=" + python_float(options_.value);
}

Tensor GLUImpl::forward(const Tensor& input, Where where) { return F::glu(input, options_.dim, where); }

std::string GLUImpl::extra_repr() const { return fmt::format("dim={}", options_.dim); }

// The functional refuses alpha = 0 too, but torch.nn.CELU builds with it and fails in forward: ember
// says so at construction, where the mistake is.
CELUImpl::CELUImpl(CELUOptions options, Where where) : OptionActivationImpl("CELU", options) {
  CallSiteScope site(where);
  check(options.alpha != 0.0, "CELU: alpha cannot be 0 (it divides the input), got alpha = {}", options.alpha);
}

Tensor CELUImpl::forward(const Tensor& input, Where where) { return F::celu(input, options_.alpha, where); }

std::string CELUImpl::extra_repr() const { return "alpha=" + python_float(options_.alpha); }

Tensor SoftminImpl::forward(const Tensor& input, Where where) { return F::softmin(input, options_.dim, where); }

std::string SoftminImpl::extra_repr() const { return fmt::format("dim={}", options_.dim); }

SoftshrinkImpl::SoftshrinkImpl(SoftshrinkOptions options, Where where) : OptionActivationImpl("Softshrink", options) {
  CallSiteScope site(where);
  check(options.lambda >= 0.0, "Softshrink: lambda must be greater or equal to 0, but found to be {}", options.lambda);
}

Tensor SoftshrinkImpl::forward(const Tensor& input, Where where) {
  return F::softshrink(input, options_.lambda, where);
}

// torch.nn.Softshrink and Hardshrink print the bare number: "Softshrink(0.5)".
std::string SoftshrinkImpl::extra_repr() const { return python_float(options_.lambda); }

Tensor HardshrinkImpl::forward(const Tensor& input, Where where) {
  return F::hardshrink(input, options_.lambda, where);
}

std::string HardshrinkImpl::extra_repr() const { return python_float(options_.lambda); }

RReLUImpl::RReLUImpl(RReLUOptions options, Where where) : OptionActivationImpl("RReLU", options) {
  CallSiteScope site(where);
  check(options.lower <= options.upper,
        "RReLU: lower bound should be less than or equal to the upper bound, got "
        "lower = {} and upper = {}",
        options.lower, options.upper);
}

Tensor RReLUImpl::forward(const Tensor& input, Where where) {
  return F::rrelu(input, options_.lower, options_.upper, training_for_forward(*this), where);
}

std::string RReLUImpl::extra_repr() const {
  return "lower=" + python_float(options_.lower) + ", upper=" + python_float(options_.upper);
}

PReLUImpl::PReLUImpl(PReLUOptions options, Where where) : OptionActivationImpl("PReLU", options) {
  CallSiteScope site(where);
  check(options.num_parameters >= 1, "PReLU: num_parameters must be at least 1, got {}", options.num_parameters);
  const TensorOptions tensor_options{.dtype = options.dtype, .device = options.device};
  weight = register_parameter("weight", empty({options.num_parameters}, tensor_options));
  reset_parameters();
}

void PReLUImpl::reset_parameters() { init::constant_(weight, options_.init); }

Tensor PReLUImpl::forward(const Tensor& input, Where where) { return F::prelu(input, weight, where); }

std::string PReLUImpl::extra_repr() const { return fmt::format("num_parameters={}", options_.num_parameters); }

}  // namespace ember::nn
