// ReduceLROnPlateau: PyTorch 2.x's rules transcribed comparison by comparison (is_better, the bad
// epoch count, the cooldown, and _reduce_lr's max(old * factor, min_lr) applied only when it changes
// the rate by more than eps). Built without FMA contraction like the other schedules.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "runtime/dispatch.h"
#include "runtime/error.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace ember::optim {

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions options, Where where)
    : optimizer_(optimizer), options_(std::move(options)) {
  CallSiteScope site(where);
  const PlateauOptions& o = options_;
  // PyTorch refuses only factor >= 1; a negative or NaN one would give rates the optimizer refuses.
  check(o.factor >= 0.0 && o.factor < 1.0, "ReduceLROnPlateau: factor must be in [0, 1), got {}", o.factor);
  check(o.mode == "min" || o.mode == "max", "ReduceLROnPlateau: mode must be 'min' or 'max', got '{}'", o.mode);
  check(o.threshold_mode == "rel" || o.threshold_mode == "abs",
        "ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got '{}'", o.threshold_mode);
  // Not checked by PyTorch; a NaN one would make every metric a bad epoch, silently.
  check(!std::isnan(o.threshold), "ReduceLROnPlateau: threshold must not be NaN");
  check(o.patience >= 0, "ReduceLROnPlateau: patience must be non-negative, got {}", o.patience);
  check(o.cooldown >= 0, "ReduceLROnPlateau: cooldown must be non-negative, got {}", o.cooldown);
  check(!std::isnan(o.eps), "ReduceLROnPlateau: eps must not be NaN");
  const size_t groups = optimizer.num_param_groups();
  if (o.min_lr.size() == 1) {
    min_lrs_.assign(groups, o.min_lr[0]);
  } else {
    check(o.min_lr.size() == groups, "ReduceLROnPlateau: expected {} min_lrs (one per parameter group) or one, got {}",
          groups, o.min_lr.size());
    min_lrs_ = o.min_lr;
  }
  for (size_t g = 0; g < min_lrs_.size(); ++g)
    check(std::isfinite(min_lrs_[g]) && min_lrs_[g] >= 0.0,
          "ReduceLROnPlateau: min_lr of parameter group {} must be finite and non-negative, got {}", g, min_lrs_[g]);
  // PyTorch's _reset(): the worst possible value for the mode, so the first metric is an improvement.
  best_ = o.mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  for (size_t g = 0; g < groups; ++g) last_lr_.push_back(optimizer.get_lr(g));
}

bool ReduceLROnPlateau::is_better(double metric) const {
  const bool rel = options_.threshold_mode == "rel";
  if (options_.mode == "min")
    return rel ? metric < best_ * (1.0 - options_.threshold) : metric < best_ - options_.threshold;
  return rel ? metric > best_ * (options_.threshold + 1.0) : metric > best_ + options_.threshold;
}

void ReduceLROnPlateau::step(double metric, Where where) {
  CallSiteScope site(where);
  // A replay could only repeat the captured metric: a compile capture breaks the graph here, and
  // the step runs eagerly on every call.
  if (dispatch_mode_active()) notify_host_state_change("ReduceLROnPlateau.step(metric)");
  // PyTorch zips over the groups and min_lrs; a group added since construction would be skipped.
  check(optimizer_.num_param_groups() == min_lrs_.size(),
        "ReduceLROnPlateau.step: the optimizer has {} parameter groups, the scheduler was made for {}; make the "
        "scheduler after adding every group",
        optimizer_.num_param_groups(), min_lrs_.size());
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > options_.patience) {
    reduce_rates();
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  for (size_t g = 0; g < last_lr_.size(); ++g) last_lr_[g] = optimizer_.get_lr(g);
}

void ReduceLROnPlateau::reduce_rates() {
  for (size_t g = 0; g < min_lrs_.size(); ++g) {
    const double old_lr = optimizer_.get_lr(g);
    const double new_lr = std::max(old_lr * options_.factor, min_lrs_[g]);
    if (old_lr - new_lr > options_.eps) optimizer_.set_lr(g, new_lr);
  }
}

OrderedDict<double> ReduceLROnPlateau::state_dict() const {
  OrderedDict<double> state;
  state.insert("last_epoch", static_cast<double>(last_epoch_));
  state.insert("best", best_);
  state.insert("num_bad_epochs", static_cast<double>(num_bad_epochs_));
  state.insert("cooldown_counter", static_cast<double>(cooldown_counter_));
  for (size_t g = 0; g < last_lr_.size(); ++g) state.insert(fmt::format("last_lr.{}", g), last_lr_[g]);
  return state;
}

void ReduceLROnPlateau::load_state_dict(const OrderedDict<double>& state, Where where) {
  CallSiteScope site(where);
  const size_t groups = last_lr_.size();
  check(state.size() == 4 + groups,
        "ReduceLROnPlateau.load_state_dict: expected {} entries (last_epoch, best, num_bad_epochs, "
        "cooldown_counter and last_lr for {} groups), got {}",
        4 + groups, groups, state.size());
  auto read = [&](const std::string& key) {
    const double* value = state.find(key);
    check(value != nullptr, "ReduceLROnPlateau.load_state_dict: missing key '{}'", key);
    return *value;
  };
  // Whole numbers in range: a NaN or 1e300 cast to int64 is undefined behaviour.
  auto read_count = [&](const std::string& key) {
    const double value = read(key);
    check(std::isfinite(value) && value == std::floor(value) && value >= 0.0 && value <= 9007199254740992.0,
          "ReduceLROnPlateau.load_state_dict: '{}' must be a whole number from 0 to 2^53, got {}", key, value);
    return static_cast<int64_t>(value);
  };
  const int64_t last_epoch = read_count("last_epoch");
  // best is +-inf until the first step, and a NaN metric never becomes the best: only NaN is wrong.
  const double best = read("best");
  check(!std::isnan(best), "ReduceLROnPlateau.load_state_dict: 'best' must not be NaN");
  const int64_t num_bad_epochs = read_count("num_bad_epochs");
  const int64_t cooldown_counter = read_count("cooldown_counter");
  std::vector<double> last_lr(groups);
  for (size_t g = 0; g < groups; ++g) {
    const std::string key = fmt::format("last_lr.{}", g);
    last_lr[g] = read(key);
    check(std::isfinite(last_lr[g]) && last_lr[g] >= 0.0,
          "ReduceLROnPlateau.load_state_dict: '{}' must be a finite non-negative learning rate, got {}", key,
          last_lr[g]);
  }
  last_epoch_ = last_epoch;
  best_ = best;
  num_bad_epochs_ = num_bad_epochs;
  cooldown_counter_ = cooldown_counter;
  last_lr_ = std::move(last_lr);
}

}  // namespace ember::optim
