// optim::SGD: stochastic gradient descent with momentum, dampening, Nesterov momentum, L2 weight
// decay and maximize (ascent), PyTorch's formulas (kernels/optim_functors.h, fn::SgdStep).
//
//   ember::optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
#pragma once

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool maximize = false;  // gradient ascent: step along +grad (PyTorch negates the gradient first)
  // One multi-tensor step per batch of parameters sharing device, dtype and buffer state
  // (runtime/optim/multi_tensor_steps.h) instead of one step per parameter; same results. Not a
  // hyperparameter: checkpoints do not save it.
  bool foreach = true;

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("momentum", self.momentum);
    visit("dampening", self.dampening);
    visit("weight_decay", self.weight_decay);
    visit("nesterov", self.nesterov);
    visit("maximize", self.maximize);
  }
};

// Exists only for parameters of groups with momentum != 0.
struct SGDParamState {
  Tensor momentum_buffer;

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("momentum_buffer", self.momentum_buffer, true);
  }
};

class SGD : public OptimizerBase<SGDOptions, SGDParamState> {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {}, Where where = Where::current());

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  // The momentum buffer of `param`, and whether this is its first step: then a new uninitialised
  // one, which the caller stores as state once the step filled it.
  Tensor momentum_buffer(const Tensor& param, bool& first_step) const;
  void step_each(size_t group_index);
  void step_batched(size_t group_index);
};

}  // namespace ember::optim
