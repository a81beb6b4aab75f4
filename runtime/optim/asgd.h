// optim::ASGD: PyTorch's torch.optim.ASGD, averaged stochastic gradient descent (options, state
// and update as in its _single_tensor_asgd, PyTorch 2.x). At step t (1-based), for a parameter p
// with gradient g, with the state's eta and mu as the previous step left them:
//   g = -g                                                    (maximize)
//   g = g + weight_decay * p                                  (weight_decay != 0)
//   p = p * (1 - lambd * eta);   p = p - eta * g
//   ax = p  when mu == 1,  else  ax = ax + (p - ax) * mu       (the running average of p)
//   eta = lr / (1 + lambd * lr * t)^alpha;   mu = 1 / max(1, t - t0)
// eta starts at the group's lr and mu at 1. PyTorch keeps eta and mu as scalar tensors of the
// default dtype; here they are doubles (for float64 parameters the same numbers). The ops taking
// eta or mu carry per-call refreshes, so a compiled step reads and advances the state as eager
// does; which branch the average takes (mu == 1) is a guard of the capture.
//
//   ember::optim::ASGD opt(model->parameters(), {.lr = 1e-2, .t0 = 1e3});
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct ASGDOptions {
  double lr = 1e-2;
  double lambd = 1e-4;  // decay term
  double alpha = 0.75;  // power of eta's decay
  double t0 = 1e6;      // the step after which averaging starts
  double weight_decay = 0.0;
  bool maximize = false;  // gradient ascent: PyTorch negates the gradient first

  void validate(const char* optimizer) const;
  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("lr", self.lr);
    visit("lambd", self.lambd);
    visit("alpha", self.alpha);
    visit("t0", self.t0);
    visit("weight_decay", self.weight_decay);
    visit("maximize", self.maximize);
  }

  // eta and mu after step t (1-based).
  double eta(int64_t step) const { return lr / std::pow(1.0 + lambd * lr * static_cast<double>(step), alpha); }
  double mu(int64_t step) const { return 1.0 / std::max(1.0, static_cast<double>(step) - t0); }
};

struct ASGDParamState {
  int64_t step = 0;
  double eta = 0.0;  // the step size of the next update
  double mu = 1.0;   // the weight of the next update in the average
  Tensor ax;         // the average of the parameter

  template <typename Self, typename Visit>
  static void fields(Self& self, Visit&& visit) {
    visit("step", self.step, true);
    visit("eta", self.eta, true);
    visit("mu", self.mu, true);
    visit("ax", self.ax, true);
  }
};

class ASGD : public OptimizerBase<ASGDOptions, ASGDParamState> {
 public:
  using Options = ASGDOptions;
  explicit ASGD(std::vector<Tensor> params, ASGDOptions options = {}, Where where = Where::current());

 protected:
  Tensor step_impl(const LossClosure& closure) override;

 private:
  void step_group(size_t group_index);
  // Expires with this object: the branch guard of a capture (which reads the state) checks it. A
  // copy gets its own, as the guard points at the object that made it.
  struct Alive {
    std::shared_ptr<const bool> token = std::make_shared<const bool>(true);
    Alive() = default;
    Alive(const Alive&) : Alive() {}
    Alive& operator=(const Alive&) { return *this; }
  };
  Alive alive_;
};

}  // namespace ember::optim
