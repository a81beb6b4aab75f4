// nn::Dropout: the dropout op, gated on the module's training flag.
#include "runtime/nn/modules/dropout.h"

#include "runtime/functional.h"
#include "runtime/nn/python_repr.h"
#include "runtime/nn/training_guard.h"

namespace ember::nn {

DropoutImpl::DropoutImpl(double p, Where where) : Module("Dropout"), p_(p) {
  CallSiteScope site(where);
  check(p >= 0.0 && p <= 1.0, "Dropout: probability must be in [0, 1], got {}", p);
}

Tensor DropoutImpl::forward(const Tensor& input, Where where) {
  return dropout(input, p_, training_for_forward(*this), where);
}

// torch.nn.Dropout's fields; ember's Dropout has no in-place form, which is PyTorch's inplace=False.
std::string DropoutImpl::extra_repr() const { return "p=" + python_float(p_) + ", inplace=False"; }

}  // namespace ember::nn
