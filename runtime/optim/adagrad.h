// optim::Adagrad: libtorch's torch::optim::Adagrad (options, state and update as in PyTorch's
// _single_tensor_adagrad). At step t (1-based), for a parameter p with gradient g:
//   g = -g                                       (maximize)
//   g = g + weight_decay * p                     (weight_decay != 0)
//   clr = lr / (1 + (t - 1) * lr_decay)
//   sum = sum + g * g
//   p = p - clr * g / (sqrt(sum) + eps)
// As in PyTorch, every parameter's state (step 0, sum = initial_accumulator_value) exists from the
// moment it joins the optimizer, stepped or not. The update is a composite of registry ops per
// parameter (no fused kernel yet): see docs/ARCHITECTURE.md, "nn, optim, data".
//
//   ember::optim::Adagrad opt(model->parameters(), {.lr = 0.1, .lr_decay = 1e-4});
#pragma once

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  double initial_accumulator_value = 0.0;  // the starting value of every element of `sum`
  double eps = 1e-10;
  bool maximize = false;  // gradient ascent: PyTorch negates the gradient first

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("lr_decay", self.lr_decay);
    visit("weight_decay", self.weight_decay);
    visit("initial_accumulator_value", self.initial_accumulator_value);
    visit("eps", self.eps);
    visit("maximize", self.maximize);
  }
};

struct AdagradParamState {
  int64_t step = 0;
  Tensor sum;  // running sum of squared gradients

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("sum", self.sum, true);
  }
};

class Adagrad : public OptimizerBase<AdagradOptions, AdagradParamState> {
 public:
  using Options = AdagradOptions;
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions options = {}, Where where = Where::current());

  // OptimizerBase::add_param_group, then the new parameters' initial state, as at construction.
  void add_param_group(std::vector<Tensor> params, std::optional<AdagradOptions> options = std::nullopt,
                       Where where = Where::current());

  // The learning rate of step t (1-based): lr / (1 + (t - 1) * lr_decay).
  static double decayed_lr(double lr, double lr_decay, int64_t step) {
    return lr / (1.0 + static_cast<double>(step - 1) * lr_decay);
  }

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  // Gives every parameter of group `group_index` without state its initial state.
  void init_state(size_t group_index);
  void step_group(size_t group_index);
};

}  // namespace ember::optim
