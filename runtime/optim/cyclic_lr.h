// optim::CyclicLR: PyTorch 2.x's torch.optim.lr_scheduler.CyclicLR. The rate of each group goes
// from base_lr up to max_lr over step_size_up steps and back over step_size_down, the swing
// scaled per cycle or per step; with cycle_momentum the optimizer's momentum (SGD, RMSprop) or
// beta1 (Adam, AdamW, Adamax, NAdam, RAdam) moves the opposite way, between max_momentum and
// base_momentum. At step e, with total = up + down:
//   cycle = floor(1 + e / total);  x = 1 + e / total - cycle
//   f = x / (up / total)  if x <= up / total,  else (x - 1) / (up / total - 1)
//   lr = base_lr + (max_lr - base_lr) * f * scale;  momentum = max_momentum - (max_momentum - base_momentum) * f *
//   scale scale: triangular 1, triangular2 1 / 2^(cycle - 1), exp_range gamma^e, or scale_fn(cycle or e)
//
//   optim::CyclicLR scheduler(sgd, /*base_lr=*/{0.01}, /*max_lr=*/{0.1}, {.step_size_up = 2000});
//   for (batch ...) { train(); scheduler.step(); }
//
// Inside ember::compile the rates are read per replay, but a cycled momentum is a baked
// hyperparameter: each change recompiles (turn cycle_momentum off in compiled training).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/optim/lr_scheduler.h"

namespace ember::optim {

struct CyclicLROptions {
  double step_size_up = 2000.0;            // steps from base_lr up to max_lr
  std::optional<double> step_size_down;    // steps back down; step_size_up when unset
  std::string mode = "triangular";         // "triangular", "triangular2" or "exp_range"; ignored with scale_fn
  double gamma = 1.0;                      // exp_range's factor per step
  std::function<double(double)> scale_fn;  // a custom scale, replacing mode's
  std::string scale_mode = "cycle";        // scale_fn's argument: "cycle" (the cycle number) or "iterations" (the step)
  bool cycle_momentum = true;
  std::vector<double> base_momentum{0.8};  // one for every group, or one per group
  std::vector<double> max_momentum{0.9};
};

class CyclicLR : public LRScheduler {
 public:
  // base_lr and max_lr: one rate for every group, or one per group. Sets every group's rate to
  // base_lr (and, with cycle_momentum, its momentum to max_momentum), as PyTorch does.
  CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr, CyclicLROptions options = {},
           Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  // The scale of step `epoch` in cycle `cycle` (mode's, or scale_fn's).
  double scale(double cycle, int64_t epoch) const;
  // Sets each group's momentum (or beta1) to its value, all checked by the optimizer's option
  // rules before any is set.
  void set_momenta(const std::vector<double>& values) const;

  std::vector<double> cycle_base_lrs_, max_lrs_;
  std::vector<double> base_momentums_, max_momentums_;
  double total_size_ = 0.0;
  double step_ratio_ = 0.0;
  std::function<double(double)> scale_fn_;
  bool scale_by_cycle_ = true;
  bool cycle_momentum_ = false;
};

}  // namespace ember::optim
