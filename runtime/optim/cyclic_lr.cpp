// optim::CyclicLR: PyTorch 2.x's settings, schedule and momentum cycling (formulas in cyclic_lr.h).
#include "runtime/optim/cyclic_lr.h"

#include <cmath>
#include <utility>

#include "runtime/error.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/adamax.h"
#include "runtime/optim/nadam.h"
#include "runtime/optim/radam.h"
#include "runtime/optim/rmsprop.h"
#include "runtime/optim/sgd.h"

namespace ember::optim {

namespace {

// One value for every group, or one per group (PyTorch's _format_param).
std::vector<double> per_group(std::vector<double> values, size_t groups, const char* name) {
  if (values.size() == 1) values.assign(groups, values[0]);
  check(values.size() == groups, "CyclicLR: expected {} values for {} (one per parameter group) or one, got {}", groups,
        name, values.size());
  return values;
}

// When `optimizer` is a Concrete: checks *value as the field `access` picks in group `group`'s
// options by the options' own rules and, with `apply`, sets it (no value: only the probe); true.
template <typename Concrete, typename Access>
bool set_in(Optimizer& optimizer, size_t group, const double* value, bool apply, Access access) {
  auto* concrete = dynamic_cast<Concrete*>(&optimizer);
  if (concrete == nullptr) return false;
  if (value == nullptr) return true;
  auto options = concrete->param_groups()[group].options;
  access(options) = *value;
  options.validate(fmt::format("CyclicLR: the cycled momentum of parameter group {}", group).c_str());
  if (apply) concrete->param_groups()[group].options = options;
  return true;
}

// The optimizers whose momentum CyclicLR cycles, those with 'momentum' or 'betas' among PyTorch's
// defaults: momentum for SGD and RMSprop, beta1 for the Adam family. False for any other.
bool set_momentum_of(Optimizer& optimizer, size_t group, const double* value, bool apply) {
  const auto momentum = [](auto& options) -> double& { return options.momentum; };
  const auto beta1 = [](auto& options) -> double& { return options.betas.first; };
  return set_in<SGD>(optimizer, group, value, apply, momentum) ||
         set_in<RMSprop>(optimizer, group, value, apply, momentum) ||
         set_in<Adam>(optimizer, group, value, apply, beta1) || set_in<AdamW>(optimizer, group, value, apply, beta1) ||
         set_in<Adamax>(optimizer, group, value, apply, beta1) ||
         set_in<NAdam>(optimizer, group, value, apply, beta1) || set_in<RAdam>(optimizer, group, value, apply, beta1);
}

}  // namespace

CyclicLR::CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr,
                   CyclicLROptions options, Where where)
    : LRScheduler(optimizer, "CyclicLR") {
  CallSiteScope site(where);
  const size_t groups = optimizer.num_param_groups();
  cycle_base_lrs_ = per_group(std::move(base_lr), groups, "base_lr");
  max_lrs_ = per_group(std::move(max_lr), groups, "max_lr");
  for (size_t g = 0; g < groups; ++g) {
    check(Optimizer::is_valid_lr(cycle_base_lrs_[g]),
          "CyclicLR: base_lr of parameter group {} must be non-negative, got {}", g, cycle_base_lrs_[g]);
    check(std::isfinite(max_lrs_[g]), "CyclicLR: max_lr of parameter group {} must be finite, got {}", g, max_lrs_[g]);
  }
  // PyTorch divides by step_size_up at the first step (x = 0): zero is a ZeroDivisionError there.
  const double up = options.step_size_up, down = options.step_size_down.value_or(up);
  check(up > 0.0 && std::isfinite(up), "CyclicLR: step_size_up must be positive, got {}", up);
  check(down >= 0.0 && std::isfinite(down), "CyclicLR: step_size_down must be non-negative, got {}", down);
  total_size_ = up + down;
  step_ratio_ = up / total_size_;

  if (options.scale_fn) {
    check(options.scale_mode == "cycle" || options.scale_mode == "iterations",
          "CyclicLR: scale_mode must be 'cycle' or 'iterations', got '{}'", options.scale_mode);
    scale_fn_ = std::move(options.scale_fn);
    scale_by_cycle_ = options.scale_mode == "cycle";
  } else if (options.mode == "triangular") {
    scale_fn_ = [](double) { return 1.0; };
  } else if (options.mode == "triangular2") {
    scale_fn_ = [](double cycle) { return 1.0 / std::pow(2.0, cycle - 1.0); };
  } else if (options.mode == "exp_range") {
    scale_fn_ = [gamma = options.gamma](double epoch) { return std::pow(gamma, epoch); };
    scale_by_cycle_ = false;
  } else {
    fail("CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' when no scale_fn is given, got '{}'",
         options.mode);
  }

  cycle_momentum_ = options.cycle_momentum;
  if (cycle_momentum_) {
    check(set_momentum_of(optimizer, 0, nullptr, false),
          "CyclicLR: cycle_momentum needs an optimizer with momentum or beta1 (SGD, RMSprop, Adam, AdamW, Adamax, "
          "NAdam, RAdam); turn cycle_momentum off for this one");
    base_momentums_ = per_group(std::move(options.base_momentum), groups, "base_momentum");
    max_momentums_ = per_group(std::move(options.max_momentum), groups, "max_momentum");
    set_momenta(max_momentums_);
  }
  for (size_t g = 0; g < groups; ++g) optimizer.set_lr(g, cycle_base_lrs_[g]);
  start();
}

double CyclicLR::scale(double cycle, int64_t epoch) const {
  return scale_fn_(scale_by_cycle_ ? cycle : static_cast<double>(epoch));
}

void CyclicLR::set_momenta(const std::vector<double>& values) const {
  for (bool apply : {false, true})  // all checked before any is set
    for (size_t g = 0; g < values.size(); ++g) set_momentum_of(optimizer_, g, &values[g], apply);
}

std::vector<double> CyclicLR::compute_lr(int64_t epoch) const {
  const double position = static_cast<double>(epoch) / total_size_;
  const double cycle = std::floor(1.0 + position);
  const double x = 1.0 + position - cycle;
  const double factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1.0) / (step_ratio_ - 1.0);
  const double scaled = scale(cycle, epoch);
  std::vector<double> rates;
  bool all_valid = true;
  for (size_t g = 0; g < cycle_base_lrs_.size(); ++g) {
    const double base_height = (max_lrs_[g] - cycle_base_lrs_[g]) * factor;
    rates.push_back(cycle_base_lrs_[g] + base_height * scaled);
    all_valid = all_valid && Optimizer::is_valid_lr(rates.back());
  }
  // PyTorch sets the momentum while computing the rates; here only once the rates will be taken
  // (the caller refuses an invalid one), so a refused step changes nothing.
  if (cycle_momentum_ && all_valid) {
    std::vector<double> momenta;
    for (size_t g = 0; g < max_momentums_.size(); ++g) {
      const double base_height = (max_momentums_[g] - base_momentums_[g]) * factor;
      momenta.push_back(max_momentums_[g] - base_height * scaled);
    }
    set_momenta(momenta);
  }
  return rates;
}

}  // namespace ember::optim
