// nn::Dropout: the dropout op, gated on the module's training flag.
#include "runtime/nn/modules/dropout.h"

#include "runtime/functional.h"

namespace ember::nn {

DropoutImpl::DropoutImpl(double p) : Module("Dropout"), p_(p) {
  check(p >= 0.0 && p <= 1.0, "Dropout: probability must be in [0, 1], got {}", p);
}

Tensor DropoutImpl::forward(const Tensor& input, Where where) {
  return dropout(input, p_, is_training(), where);
}

std::string DropoutImpl::extra_repr() const { return fmt::format("p={}", p_); }

}  // namespace ember::nn
