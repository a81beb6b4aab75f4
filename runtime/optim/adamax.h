// optim::Adamax: PyTorch's torch.optim.Adamax (options, state and update as in its
// _single_tensor_adamax, PyTorch 2.x). At step t (1-based), for a parameter p with gradient g:
//   g = -g                                            (maximize)
//   g = g + weight_decay * p                          (weight_decay != 0)
//   exp_avg = lerp(exp_avg, g, 1 - beta1)
//   exp_inf = max(beta2 * exp_inf, |g| + eps)
//   p = p - lr / (1 - beta1^t) * exp_avg / exp_inf
// A composite of registry ops per parameter: the final add_ carries the per-call refresh of the
// bias-corrected rate, so a compiled step re-reads lr and the step count (docs/ARCHITECTURE.md).
//
//   ember::optim::Adamax opt(model->parameters(), {.lr = 2e-3, .betas = {0.9, 0.999}});
#pragma once

#include <utility>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct AdamaxOptions {
  double lr = 2e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool maximize = false;  // gradient ascent: PyTorch negates the gradient first

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("beta1", self.betas.first);
    visit("beta2", self.betas.second);
    visit("eps", self.eps);
    visit("weight_decay", self.weight_decay);
    visit("maximize", self.maximize);
  }
};

struct AdamaxParamState {
  int64_t step = 0;
  Tensor exp_avg;  // running average of the gradient
  Tensor exp_inf;  // exponentially weighted infinity norm of the gradient

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("exp_avg", self.exp_avg, true);
    visit("exp_inf", self.exp_inf, true);
  }
};

class Adamax : public OptimizerBase<AdamaxOptions, AdamaxParamState> {
 public:
  using Options = AdamaxOptions;
  explicit Adamax(std::vector<Tensor> params, AdamaxOptions options = {}, Where where = Where::current());

  // The rate of step t (1-based): lr / (1 - beta1^t).
  static double corrected_lr(const AdamaxOptions& options, int64_t step) {
    return options.lr / (1.0 - std::pow(options.betas.first, static_cast<double>(step)));
  }

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  void step_group(size_t group_index);
};

}  // namespace ember::optim
