// optim::SWALR: PyTorch 2.3's torch.optim.swa_utils.SWALR, the learning-rate schedule of stochastic
// weight averaging. Over anneal_epochs steps each group's rate moves from the rate it had when the
// annealing began towards swa_lr, then stays at swa_lr. With t = clamp(step / max(1, anneal_epochs),
// 0, 1) and alpha = f(t), f(t) = (1 - cos(pi t)) / 2 ("cos") or t ("linear"):
//   lr(step) = swa_lr * alpha + lr_start * (1 - alpha)
// computed as PyTorch's recursive form: lr_start is recovered from the group's current rate and the
// previous step's alpha, (lr - alpha_prev * swa_lr) / (1 - alpha_prev) (swa_lr once alpha_prev is 1),
// so the schedule starts from whatever rate another scheduler left. With anneal_epochs = 0 the rate
// is swa_lr from construction on.
//
//   optim::SWALR swa_scheduler(opt, /*swa_lr=*/{0.05}, /*anneal_epochs=*/5, "linear");
//   for (epoch ...) { train(); if (epoch >= swa_start) { swa_model.update_parameters(model); swa_scheduler.step(); } }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/optim/lr_scheduler.h"

namespace ember::optim {

class SWALR : public LRScheduler {
 public:
  // swa_lr: one rate for every group, or one per group (finite and non-negative: ember's optimizers
  // refuse a negative rate, which PyTorch would anneal towards). anneal_epochs >= 0; anneal_strategy
  // "cos" or "linear". The state dict is LRScheduler's: construct the same SWALR, then load.
  SWALR(Optimizer& optimizer, std::vector<double> swa_lr, int64_t anneal_epochs = 10,
        const std::string& anneal_strategy = "cos", Where where = Where::current());

  const std::vector<double>& swa_lrs() const { return swa_lrs_; }
  int64_t anneal_epochs() const { return anneal_epochs_; }

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  double anneal(double t) const;

  std::vector<double> swa_lrs_;
  int64_t anneal_epochs_;
  bool cosine_;
};

}  // namespace ember::optim
