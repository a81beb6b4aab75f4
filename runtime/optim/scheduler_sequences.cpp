// ChainedScheduler and SequentialLR: PyTorch 2.x's schedulers of schedulers, built on LRScheduler's
// public calls only (step, state_dict / load_state_dict, base_lrs). Their state dicts nest each
// scheduler's own under "<index>.".
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/error.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace ember::optim {

namespace {

void check_schedulers(const char* name, const std::vector<LRScheduler*>& schedulers) {
  check(!schedulers.empty(), "{}: expects at least one scheduler, got none", name);
  for (size_t i = 0; i < schedulers.size(); ++i) check(schedulers[i] != nullptr, "{}: scheduler {} is null", name, i);
}

void insert_nested_states(const std::vector<LRScheduler*>& schedulers, OrderedDict<double>& state) {
  for (size_t i = 0; i < schedulers.size(); ++i) {
    const OrderedDict<double> part = schedulers[i]->state_dict();  // named: items() refers into it
    for (const auto& [key, value] : part.items()) state.insert(fmt::format("{}.{}", i, key), value);
  }
}

// Loads the "<i>." parts of `state` into the schedulers, all or none: a part one refuses puts back
// those loaded before it. Keys in `own` belong to the caller and are skipped; any other key must
// name a scheduler.
void load_nested_states(const char* name, const std::vector<LRScheduler*>& schedulers, const OrderedDict<double>& state,
                        const std::vector<std::string>& own, Where where) {
  std::vector<OrderedDict<double>> parts(schedulers.size());
  for (const auto& [key, value] : state.items()) {
    if (std::find(own.begin(), own.end(), key) != own.end()) continue;
    const size_t dot = key.find('.');
    size_t index = schedulers.size();  // no scheduler, unless the key starts with "<digits>."
    if (dot != std::string::npos) {
      const auto [end, error] = std::from_chars(key.data(), key.data() + dot, index);
      if (error != std::errc() || end != key.data() + dot) index = schedulers.size();
    }
    check(index < schedulers.size(), "{}.load_state_dict: key '{}' names none of the {} schedulers", name, key,
          schedulers.size());
    parts[index].insert(key.substr(dot + 1), value);
  }
  std::vector<OrderedDict<double>> before;
  for (LRScheduler* scheduler : schedulers) before.push_back(scheduler->state_dict());
  size_t loaded = 0;
  try {
    for (; loaded < schedulers.size(); ++loaded) schedulers[loaded]->load_state_dict(parts[loaded], where);
  } catch (...) {
    for (size_t i = 0; i < loaded; ++i) schedulers[i]->load_state_dict(before[i], where);
    throw;
  }
}

// Sets the scheduler's last_epoch through its state dict, the one public way to.
void set_last_epoch(LRScheduler& scheduler, int64_t epoch, Where where = Where::current()) {
  OrderedDict<double> state = scheduler.state_dict();
  state["last_epoch"] = static_cast<double>(epoch);
  scheduler.load_state_dict(state, where);
}

// Under a compile capture: a guard that fails once `alive` expires (a replay then recompiles
// instead of calling a dead object), and `advance` as the host effect replays repeat. The
// schedulers' own guards are recorded when advance() steps them; their effects are not, being
// part of this one.
void report_to_capture(const char* name, const std::shared_ptr<const bool>& alive, std::function<void()> advance) {
  if (!dispatch_mode_active()) return;
  notify_host_guard(fmt::format("{} alive", name),
                    [alive = std::weak_ptr<const bool>(alive)] { return !alive.expired(); });
  notify_host_effect(fmt::format("{}.step()", name), advance);
}

}  // namespace

ChainedScheduler::ChainedScheduler(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, Where where)
    : optimizer_(optimizer), schedulers_(std::move(schedulers)) {
  CallSiteScope site(where);
  check_schedulers("ChainedScheduler", schedulers_);
  read_rates();
}

void ChainedScheduler::read_rates() {
  last_lr_.clear();
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) last_lr_.push_back(optimizer_.get_lr(g));
}

void ChainedScheduler::step(Where where) {
  CallSiteScope site(where);
  report_to_capture("ChainedScheduler", alive_, [this] { advance(); });
  advance();
}

void ChainedScheduler::advance() {
  HostEffectScope effect;  // the schedulers' steps are part of this one
  for (LRScheduler* scheduler : schedulers_) scheduler->step();
  read_rates();
}

OrderedDict<double> ChainedScheduler::state_dict() const {
  OrderedDict<double> state;
  insert_nested_states(schedulers_, state);
  return state;
}

void ChainedScheduler::load_state_dict(const OrderedDict<double>& state, Where where) {
  CallSiteScope site(where);
  load_nested_states("ChainedScheduler", schedulers_, state, {}, where);
  // PyTorch restores its _last_lr, which a step read from the optimizer after the last scheduler
  // wrote it: that scheduler's saved last_lr. (Loading does not change the optimizer's rates.)
  last_lr_ = schedulers_.back()->get_last_lr();
}

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones,
                           Where where)
    : optimizer_(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  CallSiteScope site(where);
  check_schedulers("SequentialLR", schedulers_);
  check(milestones_.size() + 1 == schedulers_.size(),
        "SequentialLR: expects one milestone fewer than schedulers, got {} schedulers and {} milestones",
        schedulers_.size(), milestones_.size());
  // PyTorch does not check the order; its bisect assumes it.
  check(std::is_sorted(milestones_.begin(), milestones_.end()), "SequentialLR: milestones must be sorted, got {}",
        fmt::join(milestones_, ", "));
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g)
    check(optimizer.initial_lr(g).has_value(),
          "SequentialLR: parameter group {} has no initial_lr; make its schedulers first", g);
  // PyTorch: every group back to its initial_lr, every scheduler's construction step undone, and
  // the first scheduler's initial step made again.
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) optimizer.set_lr(g, *optimizer.initial_lr(g));
  for (LRScheduler* scheduler : schedulers_) set_last_epoch(*scheduler, scheduler->last_epoch() - 1, where);
  schedulers_.front()->step(where);
  last_lr_ = schedulers_.front()->get_last_lr();
}

void SequentialLR::step(Where where) {
  CallSiteScope site(where);
  report_to_capture("SequentialLR", alive_, [this] { advance(); });
  advance();
}

void SequentialLR::advance() {
  HostEffectScope effect;  // the schedulers' steps and the restart's set_lr are part of this one
  const int64_t epoch = last_epoch_ + 1;
  const size_t index = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  LRScheduler& scheduler = *schedulers_[index];
  if (index > 0 && milestones_[index - 1] == epoch) {
    restart(scheduler);
  } else {
    scheduler.step();
  }
  last_epoch_ = epoch;  // after the step, so a refused one can be retried (PyTorch counts it anyway)
  last_lr_ = scheduler.get_last_lr();
}

void SequentialLR::restart(LRScheduler& scheduler) {
  // PyTorch's _update_lr(0): the scheduler's closed form at epoch 0, from its base rates. Its
  // recursive form at epoch 0 on rates reset to those base rates gives the same for every ember
  // schedule but two: MultiplicativeLR (PyTorch multiplies the current rate by lambda(0); here the
  // base rate is kept) and CosineAnnealingWarmRestarts (PyTorch keeps its stale T_cur; here the
  // cosine restarts), and it is an ulp off for CosineAnnealingLR with a non-zero eta_min.
  const OrderedDict<double> before = scheduler.state_dict();
  std::vector<double> rates;
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) rates.push_back(optimizer_.get_lr(g));
  try {
    set_last_epoch(scheduler, -1);
    for (size_t g = 0; g < scheduler.base_lrs().size(); ++g) optimizer_.set_lr(g, scheduler.base_lrs()[g]);
    scheduler.step();
  } catch (...) {
    scheduler.load_state_dict(before);
    for (size_t g = 0; g < rates.size(); ++g) optimizer_.set_lr(g, rates[g]);
    throw;
  }
}

OrderedDict<double> SequentialLR::state_dict() const {
  OrderedDict<double> state;
  state.insert("last_epoch", static_cast<double>(last_epoch_));
  for (size_t g = 0; g < last_lr_.size(); ++g) state.insert(fmt::format("last_lr.{}", g), last_lr_[g]);
  insert_nested_states(schedulers_, state);
  return state;
}

void SequentialLR::load_state_dict(const OrderedDict<double>& state, Where where) {
  CallSiteScope site(where);
  std::vector<std::string> own{"last_epoch"};
  for (size_t g = 0; g < last_lr_.size(); ++g) own.push_back(fmt::format("last_lr.{}", g));
  std::vector<double> values;
  for (const std::string& key : own) {
    const double* value = state.find(key);
    check(value != nullptr, "SequentialLR.load_state_dict: missing key '{}'", key);
    values.push_back(*value);
  }
  check(values[0] == std::floor(values[0]) && values[0] >= 0.0 && values[0] <= 9007199254740992.0,
        "SequentialLR.load_state_dict: 'last_epoch' must be a whole number from 0 to 2^53, got {}", values[0]);
  for (size_t g = 1; g < values.size(); ++g)
    check(std::isfinite(values[g]) && values[g] >= 0.0,
          "SequentialLR.load_state_dict: '{}' must be a finite non-negative learning rate, got {}", own[g], values[g]);
  load_nested_states("SequentialLR", schedulers_, state, own, where);
  last_epoch_ = static_cast<int64_t>(values[0]);
  last_lr_.assign(values.begin() + 1, values.end());
}

}  // namespace ember::optim
