// The learning-rate schedulers: the shared step/state logic and each schedule's recursive formula,
// transcribed from PyTorch 1.13's get_lr() so that rounding matches too.
#include "runtime/optim/lr_scheduler.h"

#include <cmath>
#include <numbers>

#include "runtime/dispatch.h"

namespace ember::optim {

LRScheduler::LRScheduler(Optimizer& optimizer, const char* name) : optimizer_(optimizer), name_(name) {}

void LRScheduler::start() {
  // Only now, so that a scheduler whose settings were refused left the optimizer as it was.
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
    if (!optimizer_.initial_lr(g)) optimizer_.set_initial_lr(g, optimizer_.get_lr(g));
    base_lrs_.push_back(*optimizer_.initial_lr(g));
  }
  step_here();
}

void LRScheduler::step(Where where) {
  CallSiteScope site(where);
  step_here();
}

void LRScheduler::step_here() {
  // Guarded so that eager steps build no string. A compiled replay calls advance() where this
  // call was captured; the guard keeps it from calling a scheduler that no longer exists.
  if (dispatch_mode_active()) {
    notify_host_guard(fmt::format("{} alive", name_),
                      [alive = std::weak_ptr<const bool>(alive_)] { return !alive.expired(); });
    notify_host_effect(fmt::format("{}.step()", name_), [this] { advance(); });
  }
  advance();
}

void LRScheduler::advance() {
  HostEffectScope effect;  // the optimizer's set_lr() below is part of this step, not a change of its own
  // PyTorch zips over the groups and its base_lrs here, silently leaving a group out or reading
  // its rate unscheduled; refused instead, before anything changes.
  check(optimizer_.num_param_groups() == base_lrs_.size(),
        "{}.step: the optimizer has {} parameter groups, the scheduler was made for {}; make the scheduler after "
        "adding every group",
        name_, optimizer_.num_param_groups(), base_lrs_.size());
  ++step_count_;
  ++last_epoch_;
  last_lr_ = compute_lr();
  internal_assert(last_lr_.size() == optimizer_.num_param_groups(), "scheduler computed one rate per group");
  for (size_t g = 0; g < last_lr_.size(); ++g) optimizer_.set_lr(g, last_lr_[g]);
}

OrderedDict<double> LRScheduler::state_dict() const {
  OrderedDict<double> state;
  state.insert("last_epoch", static_cast<double>(last_epoch_));
  state.insert("step_count", static_cast<double>(step_count_));
  for (size_t g = 0; g < base_lrs_.size(); ++g) state.insert(fmt::format("base_lrs.{}", g), base_lrs_[g]);
  for (size_t g = 0; g < last_lr_.size(); ++g) state.insert(fmt::format("last_lr.{}", g), last_lr_[g]);
  return state;
}

void LRScheduler::load_state_dict(const OrderedDict<double>& state) {
  const size_t groups = base_lrs_.size();
  check(state.size() == 2 + 2 * groups,
        "LRScheduler: load_state_dict: expected {} entries (last_epoch, step_count and base_lrs / last_lr for {} "
        "groups), got {}",
        2 + 2 * groups, groups, state.size());
  std::vector<double> base_lrs(groups);
  std::vector<double> last_lr(groups);
  auto read = [&](const std::string& key) {
    const double* value = state.find(key);
    check(value != nullptr, "LRScheduler: load_state_dict: missing key '{}'", key);
    return *value;
  };
  // Counters are whole numbers in range (a NaN or 1e300 cast to int64 is undefined behaviour),
  // learning rates finite and non-negative, as the constructors and set_lr require.
  auto read_count = [&](const std::string& key, double lowest) {
    const double value = read(key);
    check(std::isfinite(value) && value == std::floor(value) && value >= lowest && value <= 9007199254740992.0,
          "LRScheduler: load_state_dict: '{}' must be a whole number from {} to 2^53, got {}", key, lowest, value);
    return static_cast<int64_t>(value);
  };
  auto read_lr = [&](const std::string& key) {
    const double value = read(key);
    check(std::isfinite(value) && value >= 0.0,
          "LRScheduler: load_state_dict: '{}' must be a finite non-negative learning rate, got {}", key, value);
    return value;
  };
  const int64_t last_epoch = read_count("last_epoch", -1.0);
  const int64_t step_count = read_count("step_count", 0.0);
  for (size_t g = 0; g < groups; ++g) {
    base_lrs[g] = read_lr(fmt::format("base_lrs.{}", g));
    last_lr[g] = read_lr(fmt::format("last_lr.{}", g));
  }
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  base_lrs_ = std::move(base_lrs);
  last_lr_ = std::move(last_lr);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer, "StepLR"), step_size_(step_size), gamma_(gamma) {
  check(step_size > 0, "StepLR: step_size must be positive, got {}", step_size);
  start();
}

std::vector<double> StepLR::compute_lr() const {
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) {
    const bool decay = last_epoch() != 0 && last_epoch() % step_size_ == 0;
    rates.push_back(decay ? current_lr(g) * gamma_ : current_lr(g));
  }
  return rates;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer, "CosineAnnealingLR"), T_max_(T_max), eta_min_(eta_min) {
  check(T_max > 0, "CosineAnnealingLR: T_max must be positive, got {}", T_max);
  start();
}

std::vector<double> CosineAnnealingLR::compute_lr() const {
  constexpr double pi = std::numbers::pi;
  const int64_t epoch = last_epoch();
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

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lambda)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.num_param_groups(), lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lambdas)
    : LRScheduler(optimizer, "LambdaLR"), lambdas_(std::move(lambdas)) {
  check(lambdas_.size() == optimizer.num_param_groups(), "LambdaLR: got {} lambdas for {} parameter groups",
        lambdas_.size(), optimizer.num_param_groups());
  for (const Lambda& lambda : lambdas_) check(static_cast<bool>(lambda), "LambdaLR: a lambda is empty");
  start();
}

std::vector<double> LambdaLR::compute_lr() const {
  std::vector<double> rates;
  for (size_t g = 0; g < base_lrs().size(); ++g) rates.push_back(base_lrs()[g] * lambdas_[g](last_epoch()));
  return rates;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer, "LinearLR"),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  check(start_factor > 0.0 && start_factor <= 1.0, "LinearLR: start_factor must be in (0, 1], got {}", start_factor);
  check(end_factor >= 0.0 && end_factor <= 1.0, "LinearLR: end_factor must be in [0, 1], got {}", end_factor);
  check(total_iters > 0, "LinearLR: total_iters must be positive, got {}", total_iters);
  start();
}

std::vector<double> LinearLR::compute_lr() const {
  const int64_t epoch = last_epoch();
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
