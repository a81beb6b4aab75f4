// optim::SWALR: PyTorch 2.3's settings checks and recursive annealing step (formula in swalr.h).
#include "runtime/optim/swalr.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "runtime/error.h"

namespace ember::optim {

SWALR::SWALR(Optimizer& optimizer, std::vector<double> swa_lr, int64_t anneal_epochs,
             const std::string& anneal_strategy, Where where)
    : LRScheduler(optimizer, "SWALR"), anneal_epochs_(anneal_epochs) {
  CallSiteScope site(where);
  const size_t groups = optimizer.num_param_groups();
  // PyTorch's _format_param takes a number for every group or a list of exactly one per group; a
  // one-element list stands for the number here, as for CyclicLR's rates.
  if (swa_lr.size() == 1) swa_lr.assign(groups, swa_lr[0]);
  check(swa_lr.size() == groups,
        "SWALR: swa_lr must have one value per parameter group ({}) or one for all, got {} values", groups,
        swa_lr.size());
  for (size_t g = 0; g < groups; ++g)
    check(std::isfinite(swa_lr[g]) && Optimizer::is_valid_lr(swa_lr[g]),
          "SWALR: swa_lr of parameter group {} must be finite and non-negative, got {}", g, swa_lr[g]);
  check(anneal_strategy == "cos" || anneal_strategy == "linear",
        "SWALR: anneal_strategy must be one of 'cos' or 'linear', got '{}'", anneal_strategy);
  check(anneal_epochs >= 0, "SWALR: anneal_epochs must be equal or greater than 0, got {}", anneal_epochs);
  swa_lrs_ = std::move(swa_lr);
  cosine_ = anneal_strategy == "cos";
  start();
}

double SWALR::anneal(double t) const { return cosine_ ? (1.0 - std::cos(std::numbers::pi * t)) / 2.0 : t; }

std::vector<double> SWALR::compute_lr(int64_t epoch) const {
  // PyTorch's step is _step_count - 1, which is the epoch being computed (0 at construction):
  // ember's schedulers start at last_epoch -1 and count steps and epochs together.
  int64_t step = epoch;
  if (anneal_epochs_ == 0) step = std::max<int64_t>(1, step);
  const double span = static_cast<double>(std::max<int64_t>(1, anneal_epochs_));
  const double previous_t = std::clamp(static_cast<double>(step - 1) / span, 0.0, 1.0);
  const double previous_alpha = anneal(previous_t);
  const double t = std::clamp(static_cast<double>(step) / span, 0.0, 1.0);
  const double alpha = anneal(t);
  std::vector<double> rates;
  for (size_t g = 0; g < swa_lrs_.size(); ++g) {
    const double swa_lr = swa_lrs_[g];
    // The rate annealing started from, recovered from the current one (PyTorch's _get_initial_lr).
    const double start_lr =
        previous_alpha == 1.0 ? swa_lr : (current_lr(g) - previous_alpha * swa_lr) / (1.0 - previous_alpha);
    rates.push_back(swa_lr * alpha + start_lr * (1.0 - alpha));
  }
  return rates;
}

}  // namespace ember::optim
