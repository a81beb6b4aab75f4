// LRScheduler: what every learning-rate scheduler shares: the base rates, step() and its report to
// a compile capture, and the state dict. The schedules' formulas are in lr_schedules.cpp.
#include "runtime/optim/lr_scheduler.h"

#include <cmath>

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

}  // namespace ember::optim
