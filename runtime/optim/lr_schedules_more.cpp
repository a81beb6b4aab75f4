// ConstantLR, PolynomialLR, MultiplicativeLR and CosineAnnealingWarmRestarts: each one's settings
// checks and its PyTorch 2.x get_lr(), transcribed operation by operation (the recursive form where
// PyTorch uses one). Built without FMA contraction like lr_schedules.cpp: Python rounds every
// multiply and add.
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace ember::optim {

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters, Where where)
    : LRScheduler(optimizer, "ConstantLR"), factor_(factor), total_iters_(total_iters) {
  CallSiteScope site(where);
  check(factor >= 0.0 && factor <= 1.0, "ConstantLR: factor must be in [0, 1], got {}", factor);
  // PyTorch takes a negative one (the factor is then never divided back out); refused, as LinearLR's.
  check(total_iters >= 0, "ConstantLR: total_iters must be non-negative, got {}", total_iters);
  start();
}

std::vector<double> ConstantLR::compute_lr(int64_t epoch) const {
  // Python raises ZeroDivisionError dividing a factor 0 back out; named here instead of 0 * inf.
  check(epoch != total_iters_ || epoch == 0 || factor_ != 0.0,
        "ConstantLR.step: epoch {} divides the factor 0 back out of the rate (PyTorch divides by zero here)", epoch);
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    const double lr = current_lr(g);
    if (epoch == 0) {
      rates.push_back(lr * factor_);
    } else if (epoch != total_iters_) {
      rates.push_back(lr);
    } else {
      rates.push_back(lr * (1.0 / factor_));
    }
  }
  return rates;
}

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power, Where where)
    : LRScheduler(optimizer, "PolynomialLR"), total_iters_(total_iters), power_(power) {
  CallSiteScope site(where);
  // PyTorch checks neither. A negative total_iters acts as 0 there; a negative power divides by
  // zero at epoch total_iters, and a NaN one gives NaN rates.
  check(total_iters >= 0, "PolynomialLR: total_iters must be non-negative, got {}", total_iters);
  check(std::isfinite(power) && power >= 0.0, "PolynomialLR: power must be finite and non-negative, got {}", power);
  start();
}

std::vector<double> PolynomialLR::compute_lr(int64_t epoch) const {
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    const double lr = current_lr(g);
    if (epoch == 0 || epoch > total_iters_) {
      rates.push_back(lr);
    } else {
      // The ratio of consecutive factors, so the schedule composes with others like PyTorch's.
      const double total = static_cast<double>(total_iters_);
      const double decay =
          std::pow((1.0 - static_cast<double>(epoch) / total) / (1.0 - static_cast<double>(epoch - 1) / total), power_);
      rates.push_back(lr * decay);
    }
  }
  return rates;
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, Lambda lambda, Where where)
    : MultiplicativeLR(optimizer, std::vector<Lambda>(optimizer.num_param_groups(), lambda), where) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lambdas, Where where)
    : LRScheduler(optimizer, "MultiplicativeLR"), lambdas_(std::move(lambdas)) {
  CallSiteScope site(where);
  check(lambdas_.size() == optimizer.num_param_groups(), "MultiplicativeLR: got {} lambdas for {} parameter groups",
        lambdas_.size(), optimizer.num_param_groups());
  for (const Lambda& lambda : lambdas_) check(static_cast<bool>(lambda), "MultiplicativeLR: a lambda is empty");
  start();
}

std::vector<double> MultiplicativeLR::compute_lr(int64_t epoch) const {
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    if (epoch == 0) {
      rates.push_back(current_lr(g));  // the lambdas are not called at construction
      continue;
    }
    double factor = 0.0;
    {
      CallSiteSuspend lambda_lines;  // the user's lambda: its errors name its own lines
      factor = lambdas_[g](epoch);
    }
    rates.push_back(current_lr(g) * factor);
  }
  return rates;
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult,
                                                         double eta_min, Where where)
    : LRScheduler(optimizer, "CosineAnnealingWarmRestarts"), T_0_(T_0), T_mult_(T_mult), eta_min_(eta_min) {
  CallSiteScope site(where);
  check(T_0 > 0, "CosineAnnealingWarmRestarts: T_0 must be a positive integer, got {}", T_0);
  check(T_mult >= 1, "CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got {}", T_mult);
  // PyTorch checks only its type; as CosineAnnealingLR's, it is where the rate goes.
  check(std::isfinite(eta_min) && eta_min >= 0.0,
        "CosineAnnealingWarmRestarts: eta_min must be finite and non-negative, got {}", eta_min);
  start();
}

std::vector<double> CosineAnnealingWarmRestarts::compute_lr(int64_t epoch) const {
  // PyTorch's step() without an epoch counts T_cur up by one and, when it reaches T_i, subtracts
  // T_i and multiplies T_i by T_mult. That depends on the epoch alone, so it is recomputed here
  // (the periods grow geometrically, or are taken by modulo) and a state dict's last_epoch is enough.
  int64_t T_cur = epoch;
  int64_t T_i = T_0_;
  if (T_mult_ == 1) {
    T_cur = epoch % T_0_;
  } else {
    while (T_cur >= T_i) {
      T_cur -= T_i;
      // Python's ints do not overflow; a saturated T_i is still past T_cur, which is all that is
      // compared, but its cosine would differ: unreachable for any epoch count that fits a run.
      if (__builtin_mul_overflow(T_i, T_mult_, &T_i)) T_i = std::numeric_limits<int64_t>::max();
    }
  }
  std::vector<double> rates;
  for (double base : base_lrs()) {
    const double angle = std::numbers::pi * static_cast<double>(T_cur) / static_cast<double>(T_i);
    rates.push_back(eta_min_ + (base - eta_min_) * (1.0 + std::cos(angle)) / 2.0);
  }
  return rates;
}

}  // namespace ember::optim
