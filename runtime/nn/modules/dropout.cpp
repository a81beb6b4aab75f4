// nn::Dropout: the dropout op, gated on the module's training flag.
#include "runtime/nn/modules/dropout.h"

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

DropoutImpl::DropoutImpl(double p, Where where) : Module("Dropout"), p_(p) {
  CallSiteScope site(where);
  check(p >= 0.0 && p <= 1.0, "Dropout: probability must be in [0, 1], got {}", p);
}

Tensor DropoutImpl::forward(const Tensor& input, Where where) {
  const bool training = is_training();
  if (dispatch_mode_active()) [[unlikely]] {
    // A compiled step captured in one mode must not replay in the other (PyTorch guards on
    // module.training too). Weak: the guard must not keep the module alive.
    notify_host_guard(fmt::format("Dropout(p={}).training == {}", p_, training),
                      [self = weak_from_this(), training] {
                        const std::shared_ptr<Module> module = self.lock();
                        return module != nullptr && module->is_training() == training;
                      });
  }
  return dropout(input, p_, training, where);
}

// PyTorch adds ", inplace=False": ember's Dropout has no in-place form, so it prints no such field.
std::string DropoutImpl::extra_repr() const { return "p=" + python_float(p_); }

}  // namespace ember::nn
