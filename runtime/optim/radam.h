// optim::RAdam: PyTorch's torch.optim.RAdam, Adam with a rectified adaptive rate (options, state
// and update as in its _single_tensor_radam, PyTorch 2.x). At step t (1-based), for a parameter p
// with gradient g:
//   g = -g                                                   (maximize)
//   p = p * (1 - lr * weight_decay)                          (weight_decay != 0, decoupled)
//   g = g + weight_decay * p                                 (weight_decay != 0, not decoupled)
//   exp_avg = lerp(exp_avg, g, 1 - beta1);  exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
//   rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
//   rho_t > 5:  rect = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
//               p = p - lr * rect * sqrt(1 - beta2^t) / (1 - beta1^t) * exp_avg / (sqrt(exp_avg_sq) + eps)
//   otherwise:  p = p - lr / (1 - beta1^t) * exp_avg
// The host scalars are gathered into the update's alpha (PyTorch multiplies them into the tensor
// one by one: the same value up to rounding). A composite of registry ops per parameter: the
// decoupled decay's factor and the update's alpha carry per-call refreshes, and which of the two
// updates a step takes is a host guard, so a compiled step recompiles once, when rho_t passes 5.
//
//   ember::optim::RAdam opt(model->parameters(), {.lr = 1e-3, .decoupled_weight_decay = true});
#pragma once

#include <utility>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct RAdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = false;  // AdamW-style decay of the parameter instead of the gradient
  bool maximize = false;                // gradient ascent: PyTorch negates the gradient first

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("beta1", self.betas.first);
    visit("beta2", self.betas.second);
    visit("eps", self.eps);
    visit("weight_decay", self.weight_decay);
    visit("decoupled_weight_decay", self.decoupled_weight_decay);
    visit("maximize", self.maximize);
  }
};

struct RAdamParamState {
  int64_t step = 0;
  Tensor exp_avg;
  Tensor exp_avg_sq;

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("exp_avg", self.exp_avg, true);
    visit("exp_avg_sq", self.exp_avg_sq, true);
  }
};

class RAdam : public OptimizerBase<RAdamOptions, RAdamParamState> {
 public:
  using Options = RAdamOptions;
  explicit RAdam(std::vector<Tensor> params, RAdamOptions options = {}, Where where = Where::current());

  // Whether step t (1-based) takes the rectified update (rho_t > 5).
  static bool rectified(const RAdamOptions& options, int64_t step);
  // The update's alpha at step t: minus the product of the host scalars of the formula above.
  static double update_rate(const RAdamOptions& options, int64_t step);

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  void step_group(size_t group_index);
};

}  // namespace ember::optim
