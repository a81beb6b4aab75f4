// optim::Rprop: libtorch's torch::optim::Rprop (options, state and update as in PyTorch's
// _single_tensor_rprop), resilient backpropagation: each element keeps its own step size, which
// only the sign of the gradient steers. At each step, for a parameter p with gradient g:
//   g = -g                                                        (maximize)
//   s = sign(g * prev)
//   factor = etaplus where s > 0, etaminus where s < 0, 1 where s == 0
//   step_size = clamp(step_size * factor, step_size_min, step_size_max)
//   g = 0 where factor == etaminus      (the sign flipped: no move now, and no flip seen next step)
//   p = p - sign(g) * step_size;   prev = g
// step_size starts at the group's lr and prev at 0, as PyTorch's first step sets them. A
// composite of registry ops per parameter (no fused kernel).
//
//   ember::optim::Rprop opt(model->parameters(), {.lr = 1e-2, .etas = {0.5, 1.2}});
#pragma once

#include <utility>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct RpropOptions {
  double lr = 1e-2;                                // every step size's starting value
  std::pair<double, double> etas{0.5, 1.2};        // (etaminus, etaplus): 0 < etaminus < 1 < etaplus
  std::pair<double, double> step_sizes{1e-6, 50};  // (min, max) bounds of every step size
  bool maximize = false;                           // gradient ascent: PyTorch negates the gradient first

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("etaminus", self.etas.first);
    visit("etaplus", self.etas.second);
    visit("step_size_min", self.step_sizes.first);
    visit("step_size_max", self.step_sizes.second);
    visit("maximize", self.maximize);
  }
};

struct RpropParamState {
  int64_t step = 0;
  Tensor prev;       // the last step's gradient, zeroed where its sign flipped
  Tensor step_size;  // per element

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("prev", self.prev, true);
    visit("step_size", self.step_size, true);
  }
};

class Rprop : public OptimizerBase<RpropOptions, RpropParamState> {
 public:
  using Options = RpropOptions;
  explicit Rprop(std::vector<Tensor> params, RpropOptions options = {}, Where where = Where::current());

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  void step_group(size_t group_index);
};

}  // namespace ember::optim
