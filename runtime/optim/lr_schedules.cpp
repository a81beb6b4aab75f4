// The schedules of lr_scheduler.h: each one's settings checks and its recursive formula, transcribed
// from PyTorch 1.13's get_lr() operation by operation. Built without FMA contraction
// (runtime/CMakeLists.txt): Python rounds every multiply and add, so a fused multiply-add would
// put rates an ulp off PyTorch's.
#include "runtime/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ember::optim {

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, Where where)
    : LRScheduler(optimizer, "StepLR"), step_size_(step_size), gamma_(gamma) {
  CallSiteScope site(where);
  check(step_size > 0, "StepLR: step_size must be positive, got {}", step_size);
  // The rate is multiplied by gamma: a negative or NaN gamma gives a rate the optimizer refuses.
  check(gamma >= 0.0, "StepLR: gamma must be non-negative, got {}", gamma);
  start();
}

std::vector<double> StepLR::compute_lr(int64_t epoch) const {
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    const bool decay = epoch != 0 && epoch % step_size_ == 0;
    rates.push_back(decay ? current_lr(g) * gamma_ : current_lr(g));
  }
  return rates;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma, Where where)
    : LRScheduler(optimizer, "MultiStepLR"), milestones_(std::move(milestones)), gamma_(gamma) {
  CallSiteScope site(where);
  check(gamma >= 0.0, "MultiStepLR: gamma must be non-negative, got {}", gamma);
  start();
}

std::vector<double> MultiStepLR::compute_lr(int64_t epoch) const {
  // Like PyTorch, no special case for epoch 0: a milestone 0 decays the rate at construction.
  const auto hits = std::count(milestones_.begin(), milestones_.end(), epoch);
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    // Python's gamma ** k for a float and an int is C's pow, as here.
    rates.push_back(hits == 0 ? current_lr(g) : current_lr(g) * std::pow(gamma_, static_cast<double>(hits)));
  }
  return rates;
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, Where where)
    : LRScheduler(optimizer, "ExponentialLR"), gamma_(gamma) {
  CallSiteScope site(where);
  check(gamma >= 0.0, "ExponentialLR: gamma must be non-negative, got {}", gamma);
  start();
}

std::vector<double> ExponentialLR::compute_lr(int64_t epoch) const {
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) rates.push_back(epoch == 0 ? current_lr(g) : current_lr(g) * gamma_);
  return rates;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min, Where where)
    : LRScheduler(optimizer, "CosineAnnealingLR"), T_max_(T_max), eta_min_(eta_min) {
  CallSiteScope site(where);
  check(T_max > 0, "CosineAnnealingLR: T_max must be positive, got {}", T_max);
  // The rate reaches eta_min at epoch T_max (and an infinite one makes the first step NaN).
  check(std::isfinite(eta_min) && eta_min >= 0.0, "CosineAnnealingLR: eta_min must be finite and non-negative, got {}",
        eta_min);
  start();
}

std::vector<double> CosineAnnealingLR::compute_lr(int64_t epoch) const {
  constexpr double pi = std::numbers::pi;
  const double period = static_cast<double>(T_max_);
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    const double lr = current_lr(g);
    if (epoch == 0) {
      rates.push_back(lr);
    } else if ((epoch - 1 - T_max_) % (2 * T_max_) == 0) {
      // The restart point of the cosine, where the recursive ratio would divide by zero.
      rates.push_back(lr + (base_lrs()[g] - eta_min_) * (1.0 - std::cos(pi / period)) / 2.0);
    } else {
      rates.push_back((1.0 + std::cos(pi * static_cast<double>(epoch) / period)) /
                          (1.0 + std::cos(pi * static_cast<double>(epoch - 1) / period)) * (lr - eta_min_) +
                      eta_min_);
    }
  }
  return rates;
}

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lambda, Where where)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.num_param_groups(), lambda), where) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lambdas, Where where)
    : LRScheduler(optimizer, "LambdaLR"), lambdas_(std::move(lambdas)) {
  CallSiteScope site(where);
  check(lambdas_.size() == optimizer.num_param_groups(), "LambdaLR: got {} lambdas for {} parameter groups",
        lambdas_.size(), optimizer.num_param_groups());
  for (const Lambda& lambda : lambdas_) check(static_cast<bool>(lambda), "LambdaLR: a lambda is empty");
  start();
}

std::vector<double> LambdaLR::compute_lr(int64_t epoch) const {
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    double factor = 0.0;
    {
      CallSiteSuspend lambda_lines;  // the user's lambda: its errors name its own lines, like a loss closure's
      factor = lambdas_[g](epoch);
    }
    rates.push_back(base_lrs()[g] * factor);
  }
  return rates;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters, Where where)
    : LRScheduler(optimizer, "LinearLR"),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  CallSiteScope site(where);
  check(start_factor > 0.0 && start_factor <= 1.0, "LinearLR: start_factor must be in (0, 1], got {}", start_factor);
  check(end_factor >= 0.0 && end_factor <= 1.0, "LinearLR: end_factor must be in [0, 1], got {}", end_factor);
  // 0 is PyTorch's too: every epoch after the first is past total_iters and keeps start_factor.
  check(total_iters >= 0, "LinearLR: total_iters must be non-negative, got {}", total_iters);
  start();
}

std::vector<double> LinearLR::compute_lr(int64_t epoch) const {
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    const double lr = current_lr(g);
    if (epoch == 0) {
      rates.push_back(lr * start_factor_);
    } else if (epoch > total_iters_) {
      rates.push_back(lr);
    } else {
      // The ratio of consecutive factors, so the schedule composes with others like PyTorch's.
      const double change = end_factor_ - start_factor_;
      rates.push_back(lr * (1.0 + change / (static_cast<double>(total_iters_) * start_factor_ +
                                            static_cast<double>(epoch - 1) * change)));
    }
  }
  return rates;
}

}  // namespace ember::optim
