// optim::Adam and optim::AdamW (optionally AMSGrad): one implementation, the decay mode chosen at
// compile time. Formulas: kernels/optim_functors.h (fn::AdamStep), as in PyTorch 1.13 up to one
// rounding (a multiply by 1 / sqrt(1 - beta2^t) where PyTorch divides; see the functor).
//
//   ember::optim::Adam opt(model->parameters(), {.lr = 1e-3});
//   ember::optim::AdamW opt(model->parameters(), {.lr = 1e-3, .weight_decay = 0.1, .amsgrad = true});
#pragma once

#include <utility>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

// Decoupled = AdamW, whose weight decay multiplies the parameter by (1 - lr * weight_decay) and
// defaults to 0.01; Adam adds weight_decay * param to the gradient and defaults to 0.
template <bool Decoupled>
struct AdamOptionsFor {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = Decoupled ? 1e-2 : 0.0;
  bool amsgrad = false;
  bool maximize = false;  // gradient ascent: PyTorch negates the gradient first
  // One multi-tensor step per batch of parameters sharing device, dtype and step count
  // (runtime/optim/multi_tensor_steps.h) instead of one step per parameter; same results. Not a
  // hyperparameter: checkpoints do not save it.
  bool foreach = true;

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("beta1", self.betas.first);
    visit("beta2", self.betas.second);
    visit("eps", self.eps);
    visit("weight_decay", self.weight_decay);
    visit("amsgrad", self.amsgrad);
    visit("maximize", self.maximize);
  }
};
using AdamOptions = AdamOptionsFor<false>;
using AdamWOptions = AdamOptionsFor<true>;

struct AdamParamState {
  int64_t step = 0;
  Tensor exp_avg;
  Tensor exp_avg_sq;
  Tensor max_exp_avg_sq;  // with amsgrad only

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("exp_avg", self.exp_avg, true);
    visit("exp_avg_sq", self.exp_avg_sq, true);
    visit("max_exp_avg_sq", self.max_exp_avg_sq, false);
  }
};

template <bool Decoupled>
class AdamFamily : public OptimizerBase<AdamOptionsFor<Decoupled>, AdamParamState> {
 public:
  using Options = AdamOptionsFor<Decoupled>;
  explicit AdamFamily(std::vector<Tensor> params, Options options = {}, Where where = Where::current());

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  // A copy of the parameter's state for this step, with zeros for any buffer it lacks (its first
  // step, or amsgrad turned on); the caller stores it once the update went through.
  AdamParamState ready_state(const Tensor& param, const Options& options) const;
  void step_each(size_t group_index);
  void step_batched(size_t group_index);
};

using Adam = AdamFamily<false>;
using AdamW = AdamFamily<true>;
extern template struct AdamOptionsFor<false>;
extern template struct AdamOptionsFor<true>;
extern template class AdamFamily<false>;
extern template class AdamFamily<true>;

}  // namespace ember::optim
