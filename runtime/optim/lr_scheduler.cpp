// LRScheduler: what every learning-rate scheduler shares: the base rates, step() and its report to
// a compile capture, and the state dict. The schedules' formulas are in lr_schedules.cpp.
#include "runtime/optim/lr_scheduler.h"

#include <cmath>

#include "runtime/dispatch.h"

namespace ember::optim {

LRScheduler::LRScheduler(Optimizer& optimizer, const char* name) : optimizer_(optimizer), name_(name) {}

void LRScheduler::start() {
  // Everything is checked before the optimizer changes: a scheduler whose settings or first rates
  // are refused leaves it as it was. The base rate is the group's initial_lr, or its lr where no
  // scheduler recorded one yet (PyTorch's setdefault).
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
    const double base = optimizer_.initial_lr(g).value_or(optimizer_.get_lr(g));
    check(std::isfinite(base), "{}: parameter group {} has the learning rate {}; a schedule needs a finite base rate",
          name_, g, base);
    base_lrs_.push_back(base);
  }
  std::vector<double> rates = checked_rates(0, name_);
  for (size_t g = 0; g < base_lrs_.size(); ++g)
    if (!optimizer_.initial_lr(g)) optimizer_.set_initial_lr(g, base_lrs_[g]);
  report_step_to_capture();
  apply(std::move(rates));
}

void LRScheduler::step(Where where) {
  CallSiteScope site(where);
  step_here();
}

void LRScheduler::step_here() {
  report_step_to_capture();
  advance();
}

void LRScheduler::report_step_to_capture() {
  // Guarded so that eager steps build no string. A compiled replay calls advance() where this
  // call was captured; the guard keeps it from calling a scheduler that no longer exists.
  if (!dispatch_mode_active()) return;
  notify_host_guard(fmt::format("{} alive", name_),
                    [alive = std::weak_ptr<const bool>(alive_)] { return !alive.expired(); });
  notify_host_effect(fmt::format("{}.step()", name_), [this] { advance(); });
}

void LRScheduler::advance() {
  // PyTorch zips over the groups and its base_lrs here, silently leaving a group out or reading
  // its rate unscheduled; refused instead, before anything changes.
  check(optimizer_.num_param_groups() == base_lrs_.size(),
        "{}.step: the optimizer has {} parameter groups, the scheduler was made for {}; make the scheduler after "
        "adding every group",
        name_, optimizer_.num_param_groups(), base_lrs_.size());
  apply(checked_rates(last_epoch_ + 1, fmt::format("{}.step", name_)));
}

std::vector<double> LRScheduler::checked_rates(int64_t epoch, const std::string& caller) const {
  // Inside the step's host effect: an op a LambdaLR's lambda dispatches would be both recorded in a
  // compiled graph and rerun by its replays, so a capture breaks the graph on it.
  HostEffectScope effect;
  std::vector<double> rates = compute_lr(epoch);
  internal_assert(rates.size() == base_lrs_.size(), "scheduler computed one rate per group");
  // The optimizer's own rule, checked for every group before the first is written: set_lr would
  // refuse the rate partway through the groups, with the epoch already advanced. (PyTorch writes
  // any rate; ember's optimizers refuse a negative or NaN one, so the schedule stops here.)
  for (size_t g = 0; g < rates.size(); ++g)
    check(Optimizer::is_valid_lr(rates[g]),
          "{}: epoch {} gives parameter group {} the learning rate {}, which the optimizer refuses (a learning "
          "rate must be non-negative); the scheduler and the optimizer are left as they were",
          caller, epoch, g, rates[g]);
  return rates;
}

void LRScheduler::apply(std::vector<double> rates) {
  HostEffectScope effect;  // the optimizer's set_lr() below is part of this step, not a change of its own
  ++step_count_;
  ++last_epoch_;
  last_lr_ = std::move(rates);
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

void LRScheduler::load_state_dict(const OrderedDict<double>& state, Where where) {
  CallSiteScope site(where);
  const size_t groups = base_lrs_.size();
  check(state.size() == 2 + 2 * groups,
        "{}.load_state_dict: expected {} entries (last_epoch, step_count and base_lrs / last_lr for {} "
        "groups), got {}",
        name_, 2 + 2 * groups, groups, state.size());
  std::vector<double> base_lrs(groups);
  std::vector<double> last_lr(groups);
  auto read = [&](const std::string& key) {
    const double* value = state.find(key);
    check(value != nullptr, "{}.load_state_dict: missing key '{}'", name_, key);
    return *value;
  };
  // Counters are whole numbers in range (a NaN or 1e300 cast to int64 is undefined behaviour),
  // learning rates finite and non-negative, as the constructors and set_lr require.
  auto read_count = [&](const std::string& key, double lowest) {
    const double value = read(key);
    check(std::isfinite(value) && value == std::floor(value) && value >= lowest && value <= 9007199254740992.0,
          "{}.load_state_dict: '{}' must be a whole number from {} to 2^53, got {}", name_, key, lowest, value);
    return static_cast<int64_t>(value);
  };
  auto read_lr = [&](const std::string& key) {
    const double value = read(key);
    check(std::isfinite(value) && value >= 0.0,
          "{}.load_state_dict: '{}' must be a finite non-negative learning rate, got {}", name_, key, value);
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
