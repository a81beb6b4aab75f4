// optim::RMSprop: libtorch's torch::optim::RMSprop (options, state and update as in PyTorch's
// _single_tensor_rmsprop). At each step, for a parameter p with gradient g:
//   g = -g                                                     (maximize)
//   g = g + weight_decay * p                                   (weight_decay != 0)
//   square_avg = alpha * square_avg + (1 - alpha) * g * g
//   grad_avg   = alpha * grad_avg + (1 - alpha) * g            (centered)
//   avg = sqrt(square_avg - grad_avg * grad_avg) + eps         (centered; else sqrt(square_avg) + eps)
//   buf = momentum * buf + g / avg;   p = p - lr * buf         (momentum > 0)
//   p = p - lr * g / avg                                       (momentum == 0)
// eps is added after the square root, as PyTorch does. The update is a composite of registry ops
// per parameter (no fused kernel yet): see docs/ARCHITECTURE.md, "nn, optim, data".
//
//   ember::optim::RMSprop opt(model->parameters(), {.lr = 1e-3, .momentum = 0.9, .centered = true});
#pragma once

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;  // smoothing constant of the running averages
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;  // normalize by the estimated variance of the gradient, not its raw second moment
  bool maximize = false;  // gradient ascent: PyTorch negates the gradient first

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("alpha", self.alpha);
    visit("eps", self.eps);
    visit("weight_decay", self.weight_decay);
    visit("momentum", self.momentum);
    visit("centered", self.centered);
    visit("maximize", self.maximize);
  }
};

struct RMSpropParamState {
  int64_t step = 0;
  Tensor square_avg;
  Tensor momentum_buffer;  // with momentum > 0 only
  Tensor grad_avg;         // with centered only

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("square_avg", self.square_avg, true);
    visit("momentum_buffer", self.momentum_buffer, false);
    visit("grad_avg", self.grad_avg, false);
  }
};

class RMSprop : public OptimizerBase<RMSpropOptions, RMSpropParamState> {
 public:
  using Options = RMSpropOptions;
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions options = {}, Where where = Where::current());

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  // A copy of the parameter's state for this step, with zeros for any buffer it lacks (its first
  // step, or momentum / centered turned on since); the caller stores it once the update went through.
  RMSpropParamState ready_state(const Tensor& param, const RMSpropOptions& options) const;
  void step_group(size_t group_index);
};

}  // namespace ember::optim
