// optim::NAdam: PyTorch's torch.optim.NAdam, Adam with Nesterov momentum (options, state and
// update as in its _single_tensor_nadam, PyTorch 2.x). At step t (1-based), for a parameter p
// with gradient g, with psi = momentum_decay:
//   g = -g                                                   (maximize)
//   p = p * (1 - lr * weight_decay)                          (weight_decay != 0, decoupled)
//   g = g + weight_decay * p                                 (weight_decay != 0, not decoupled)
//   mu_t = beta1 * (1 - 0.5 * 0.96^(t * psi));  mu_product = mu_product * mu_t
//   exp_avg = lerp(exp_avg, g, 1 - beta1);  exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
//   denom = sqrt(exp_avg_sq / (1 - beta2^t)) + eps
//   p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
//   p = p - lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * exp_avg / denom
// A composite of registry ops per parameter. The ops that take a host scalar carry per-call
// refreshes, so a compiled step re-reads lr and advances step and mu_product: the decoupled
// decay's factor (lr only), then the division by 1 - beta2^t, whose refresh advances the state,
// then the two updates, which read the advanced state (refreshes replay in capture order).
//
//   ember::optim::NAdam opt(model->parameters(), {.lr = 2e-3, .momentum_decay = 4e-3});
#pragma once

#include <cmath>
#include <utility>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct NAdamOptions {
  double lr = 2e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum_decay = 4e-3;         // psi: how fast mu_t approaches beta1
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
    visit("momentum_decay", self.momentum_decay);
    visit("decoupled_weight_decay", self.decoupled_weight_decay);
    visit("maximize", self.maximize);
  }

  // mu_t of step t (1-based).
  double mu(int64_t step) const {
    return betas.first * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(step) * momentum_decay));
  }
};

struct NAdamParamState {
  int64_t step = 0;
  double mu_product = 1.0;  // the product of mu_1 .. mu_t
  Tensor exp_avg;
  Tensor exp_avg_sq;

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("mu_product", self.mu_product, true);
    visit("exp_avg", self.exp_avg, true);
    visit("exp_avg_sq", self.exp_avg_sq, true);
  }
};

class NAdam : public OptimizerBase<NAdamOptions, NAdamParamState> {
 public:
  using Options = NAdamOptions;
  explicit NAdam(std::vector<Tensor> params, NAdamOptions options = {}, Where where = Where::current());

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  void step_group(size_t group_index);
};

}  // namespace ember::optim
