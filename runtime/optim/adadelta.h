// optim::Adadelta: PyTorch's torch.optim.Adadelta (options, state and update as in its
// _single_tensor_adadelta, PyTorch 2.x). For a parameter p with gradient g:
//   g = -g                                                  (maximize)
//   g = g + weight_decay * p                                (weight_decay != 0)
//   square_avg = rho * square_avg + (1 - rho) * g * g
//   delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
//   acc_delta = rho * acc_delta + (1 - rho) * delta * delta
//   p = p - lr * delta
// A composite of registry ops per parameter: the final add_ carries the per-call refresh of -lr
// and advances the step count (docs/ARCHITECTURE.md, "nn, optim, data").
//
//   ember::optim::Adadelta opt(model->parameters(), {.lr = 1.0, .rho = 0.9});
#pragma once

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct AdadeltaOptions {
  double lr = 1.0;   // scales delta before it is applied
  double rho = 0.9;  // smoothing constant of both running averages
  double eps = 1e-6;
  double weight_decay = 0.0;
  bool maximize = false;  // gradient ascent: PyTorch negates the gradient first

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("rho", self.rho);
    visit("eps", self.eps);
    visit("weight_decay", self.weight_decay);
    visit("maximize", self.maximize);
  }
};

struct AdadeltaParamState {
  int64_t step = 0;
  Tensor square_avg;  // running average of squared gradients
  Tensor acc_delta;   // running average of squared updates

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("square_avg", self.square_avg, true);
    visit("acc_delta", self.acc_delta, true);
  }
};

class Adadelta : public OptimizerBase<AdadeltaOptions, AdadeltaParamState> {
 public:
  using Options = AdadeltaOptions;
  explicit Adadelta(std::vector<Tensor> params, AdadeltaOptions options = {}, Where where = Where::current());

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  void step_group(size_t group_index);
};

}  // namespace ember::optim
