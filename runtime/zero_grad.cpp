// zero_grads (see the header).
#include "runtime/zero_grad.h"

#include "runtime/dispatch.h"

namespace ember {

void zero_grads(const std::vector<Tensor>& parameters, bool set_to_none) {
  NoGradGuard no_grad;
  for (Tensor parameter : parameters) {
    if (set_to_none) {
      parameter.set_grad({});
      continue;
    }
    if (Tensor grad = parameter.grad(); grad.defined()) grad.zero_();
  }
}

}  // namespace ember
