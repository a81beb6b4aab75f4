// optim::Optimizer: the interface every optimizer implements (step, zero_grad, per-group learning
// rates for schedulers, state dicts), and OptimizerBase, which holds parameter groups with typed
// options and per-parameter state and implements the generic parts once.
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/nn/ordered_dict.h"
#include "runtime/tensor.h"

namespace ember::optim {

// An optimizer's state as flat named entries (what a checkpoint stores). Keys:
//   scalars  "param_groups.<g>.<option>"   every hyperparameter of group g (bools as 0 / 1)
//            "param_groups.<g>.initial_lr" the base rate of g's schedulers, once one was made
//            "param_groups.<g>.num_params" the number of parameters in group g
//            "state.<i>.<counter>"          per-parameter counters (Adam's "step")
//   tensors  "state.<i>.<buffer>"           per-parameter buffers ("exp_avg", "momentum_buffer")
// i numbers the parameters across groups in order, as PyTorch does. A parameter that has not been
// stepped yet has no state entries. The tensors of state_dict() alias the optimizer's buffers;
// load_state_dict() copies them.
struct OptimizerState {
  OrderedDict<double> scalars;
  OrderedDict<Tensor> tensors;
};

using LossClosure = std::function<Tensor()>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Updates every parameter that has a gradient, each in one fused pass over its memory.
  // `closure`, when given, is called first (with gradients enabled) and its loss returned. Errors
  // name the line that called step (those raised inside the closure, the closure's own lines).
  Tensor step(const LossClosure& closure = nullptr, Where where = Where::current()) {
    CallSiteScope site(where);
    return step_impl(closure);
  }
  // Clears (set_to_none) or zeroes the gradient of every parameter.
  void zero_grad(bool set_to_none = true);

  // Learning rate of each parameter group: what schedulers read and write. Errors (a group that
  // does not exist, a refused rate) name the caller's line.
  virtual size_t num_param_groups() const = 0;
  // The rule set_lr and every optimizer's options apply (a scheduler checks its rates with it
  // before it sets any): a learning rate is non-negative, and NaN is not.
  static bool is_valid_lr(double lr) { return lr >= 0.0; }
  double get_lr(size_t group, Where where = Where::current()) const {
    CallSiteScope site(where);
    return group_lr(group);
  }
  void set_lr(size_t group, double lr, Where where = Where::current()) {
    CallSiteScope site(where);
    set_group_lr(group, lr);
  }
  // PyTorch's 'initial_lr': the group's lr when the first scheduler was made on it, which every
  // scheduler of the group takes as its base rate (so chained schedulers share one); unset before.
  std::optional<double> initial_lr(size_t group, Where where = Where::current()) const {
    CallSiteScope site(where);
    return group_initial_lr(group);
  }
  void set_initial_lr(size_t group, double lr, Where where = Where::current()) {
    CallSiteScope site(where);
    set_group_initial_lr(group, lr);
  }
  // Every parameter, group after group.
  virtual std::vector<Tensor> parameters() const = 0;

  virtual OptimizerState state_dict() const = 0;
  // Validates everything (group and parameter counts, keys, shapes, every value with the checks
  // the constructor and set_lr use) before changing anything; errors name the offending key.
  void load_state_dict(const OptimizerState& state, Where where = Where::current()) {
    CallSiteScope site(where);
    load_state_impl(state);
  }

 protected:
  // What step, load_state_dict and the learning-rate calls do; an optimizer implements these (the
  // public calls record the caller's line for errors).
  virtual Tensor step_impl(const LossClosure& closure) = 0;
  virtual void load_state_impl(const OptimizerState& state) = 0;
  virtual double group_lr(size_t group) const = 0;
  virtual void set_group_lr(size_t group, double lr) = 0;
  virtual std::optional<double> group_initial_lr(size_t group) const = 0;
  virtual void set_group_initial_lr(size_t group, double lr) = 0;
};

namespace detail {
// Checks that `params` can be optimized (defined floating-point leaves, none already in `existing`).
void check_new_params(const std::string& optimizer, const std::vector<Tensor>& params,
                      const std::vector<Tensor>& existing);
// Splits "<section>.<index>.<field>"; false when `key` does not have that form.
bool parse_key(const std::string& key, const std::string& section, size_t& index, std::string& field);
std::string group_key(size_t group, const char* field);
std::string state_key(size_t index, const char* field);
// Options added after states were first saved ("maximize"): a state without one loads it as false,
// as PyTorch's Optimizer.__setstate__ defaults them, so older checkpoints still load.
bool option_added_later(std::string_view option);
// Calls `closure` with gradients enabled and returns its loss; undefined without a closure.
Tensor run_closure(const LossClosure& closure);
// The option checks Adamax, NAdam and RAdam share, in PyTorch's wording ("Invalid learning rate:
// -1"): lr, eps and weight_decay >= 0, both betas in [0, 1) (each comparison refuses NaN too).
void check_adam_like_options(const char* optimizer, double lr, double eps, std::pair<double, double> betas,
                             double weight_decay);
// A buffer of `param`'s shape, dtype and device filled with `value`, for optimizer state. Made
// outside any dispatch mode: a compiled step then binds it as state it reads and writes back, and
// its replays carry it on (a buffer made inside the graph would be made anew by every replay).
Tensor new_state_buffer(const Tensor& param, double value);
// Refuses parameter `index` of group `group` when an in-place update cannot write it (an expanded
// tensor: several elements at one address). OptimizerBase::check_all_updatable runs it on every
// parameter before a step whose update is several ops writes anything.
void check_updatable(const std::string& optimizer, const Tensor& param, size_t group, size_t index);
}  // namespace detail

// Options: an aggregate with a `double lr`, `void validate(const char* optimizer) const` and
//   template <typename Self, typename Visit> static void fields(Self&, Visit&&)
// calling visit(name, field) for each double or bool hyperparameter.
// ParamState: per-parameter state with the same static `fields`, calling visit(name, field, required)
// for int64_t counters, double reals (NAdam's mu_product) and Tensor buffers (an optional buffer may
// be undefined).
template <typename Options, typename ParamState>
class OptimizerBase : public Optimizer {
 public:
  struct ParamGroup {
    std::vector<Tensor> params;
    Options options;
    std::optional<double> initial_lr;  // see Optimizer::initial_lr
  };

  // Adds a group with its own options (the constructor's defaults when none are given).
  void add_param_group(std::vector<Tensor> params, std::optional<Options> options = std::nullopt,
                       Where where = Where::current()) {
    CallSiteScope site(where);
    const Options& chosen = options ? *options : defaults_;
    chosen.validate(name_.c_str());
    detail::check_new_params(name_, params, parameters());
    groups_.push_back({std::move(params), chosen, std::nullopt});
  }
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const Options& defaults() const { return defaults_; }
  // A parameter's state; null until its first step.
  const ParamState* state(const Tensor& param) const {
    auto found = state_.find(param.impl());
    return found == state_.end() ? nullptr : &found->second;
  }

  size_t num_param_groups() const override { return groups_.size(); }
  std::vector<Tensor> parameters() const override {
    std::vector<Tensor> all;
    for (const ParamGroup& group : groups_) all.insert(all.end(), group.params.begin(), group.params.end());
    return all;
  }

  OptimizerState state_dict() const override {
    OptimizerState out;
    size_t index = 0;
    for (size_t g = 0; g < groups_.size(); ++g) {
      Options::fields(groups_[g].options, [&](const char* name, const auto& value) {
        out.scalars.insert(detail::group_key(g, name), static_cast<double>(value));
      });
      if (groups_[g].initial_lr) out.scalars.insert(detail::group_key(g, "initial_lr"), *groups_[g].initial_lr);
      out.scalars.insert(detail::group_key(g, "num_params"), static_cast<double>(groups_[g].params.size()));
    }
    for (const ParamGroup& group : groups_) {
      for (const Tensor& param : group.params) {
        if (const ParamState* found = state(param)) {
          ParamState::fields(*found, [&](const char* name, const auto& value, bool) {
            if constexpr (std::is_same_v<std::decay_t<decltype(value)>, Tensor>) {
              if (value.defined()) out.tensors.insert(detail::state_key(index, name), value);
            } else {
              out.scalars.insert(detail::state_key(index, name), static_cast<double>(value));
            }
          });
        }
        ++index;
      }
    }
    return out;
  }

 protected:
  void load_state_impl(const OptimizerState& state) override {
    // Every value is checked and converted first (validate_state), and the buffers copied, so
    // that nothing below can fail once the first group changed.
    std::vector<ParamGroup> loaded_groups = validate_state(state);
    std::unordered_map<const TensorImpl*, ParamState> loaded_state;
    const std::vector<Tensor> params = parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      if (!has_state_entries(state, i)) continue;
      ParamState& entry = loaded_state[params[i].impl()];
      ParamState::fields(entry, [&](const char* name, auto& value, bool) {
        const std::string key = detail::state_key(i, name);
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>, Tensor>) {
          // A copy on the parameter's device and dtype, so the optimizer owns its buffers.
          if (const Tensor* source = state.tensors.find(key))
            value = source->to(params[i].device()).to(params[i].dtype()).clone();
        } else {
          value = static_cast<std::decay_t<decltype(value)>>(state.scalars.at(key));  // a checked whole number
        }
      });
    }
    groups_ = std::move(loaded_groups);
    state_ = std::move(loaded_state);
    ++state_generation_;  // new buffers: a compiled step bound to the old ones must capture again
  }

  double group_lr(size_t group) const override { return group_at(group).options.lr; }
  void set_group_lr(size_t group, double lr) override {
    check(is_valid_lr(lr), "{}: learning rate must be non-negative, got {}", name_, lr);
    if (dispatch_mode_active()) notify_host_state_change(fmt::format("{}.set_lr({}, {})", name_, group, lr));
    groups_[group_index(group)].options.lr = lr;
  }
  std::optional<double> group_initial_lr(size_t group) const override { return group_at(group).initial_lr; }
  void set_group_initial_lr(size_t group, double lr) override {
    check(std::isfinite(lr) && lr >= 0.0, "{}: initial_lr must be finite and non-negative, got {}", name_, lr);
    groups_[group_index(group)].initial_lr = lr;
  }

  // `where`: the user's line that constructs the optimizer, which its option errors name.
  OptimizerBase(std::string name, std::vector<Tensor> params, Options defaults, Where where)
      : name_(std::move(name)), defaults_(defaults) {
    CallSiteScope site(where);
    defaults_.validate(name_.c_str());
    add_param_group(std::move(params));
  }

  // The state of `param`, default-constructed on first use.
  ParamState& state_for(const Tensor& param) { return state_[param.impl()]; }

  // detail::check_updatable on every parameter with a gradient, in every group: an optimizer
  // whose update is several ops per parameter calls it before updating the first, so a refused
  // parameter leaves the whole step undone (no earlier parameter or state changed), as the
  // multi-tensor steps of SGD and Adam, which check every parameter before writing any, do.
  void check_all_updatable() const {
    for (size_t group = 0; group < groups_.size(); ++group) {
      const std::vector<Tensor>& params = groups_[group].params;
      for (size_t index = 0; index < params.size(); ++index)
        if (params[index].grad().defined()) detail::check_updatable(name_, params[index], group, index);
    }
  }

  // The step of an optimizer updating one group at a time (the composites: RMSprop, Adagrad,
  // Adamax, NAdam, RAdam, Adadelta): the closure's loss, then, without gradient recording and once
  // every parameter was found updatable (so a refused one undoes nothing), step_group(g) per group.
  template <typename StepGroup>
  Tensor step_groups(const LossClosure& closure, StepGroup&& step_group) {
    Tensor loss = detail::run_closure(closure);
    NoGradGuard no_grad;
    check_all_updatable();
    for (size_t group = 0; group < groups_.size(); ++group) step_group(group);
    return loss;
  }

  // Guards group `group_index`'s hyperparameters (see guard_hyperparameters), then calls
  // update(param, grad) for each of its parameters that has a gradient, in order. One without a
  // gradient is skipped, as PyTorch skips it, and reported to a compile capture, which recompiles
  // once it has one.
  template <typename Update>
  void for_each_param_with_grad(size_t group_index, Update&& update) {
    guard_hyperparameters(group_index);
    for (const Tensor& param : groups_[group_index].params) {
      Tensor grad = param.grad();
      if (!grad.defined()) {
        notify_grad_absent(param);
        continue;
      }
      update(param, std::move(grad));
    }
  }

  // Under a compile capture every hyperparameter but lr (a per-call refresh) is baked into the
  // graph, and so are the groups and their parameters the step went over: a guard makes a replay
  // recompile once one of group `group`'s hyperparameters changed, a group was added or a
  // parameter joined or left it, as PyTorch's compile guards param_groups. The guard also fails
  // once this optimizer is gone, before a replay's refreshes (which call into it) could run.
  void guard_hyperparameters(size_t group) const {
    if (!dispatch_mode_active()) return;
    std::string values;
    Options::fields(groups_[group].options, [&](const char* name, const auto& value) {
      if (std::string_view(name) != "lr") values += fmt::format("{}{}={}", values.empty() ? "" : ", ", name, value);
    });
    std::vector<std::weak_ptr<TensorImpl>> params;
    for (const Tensor& param : groups_[group].params) params.push_back(param.impl_ptr());
    const std::string what = fmt::format("{} param group {} of {} with {} parameters at {}", name_, group,
                                         groups_.size(), params.size(), values);
    notify_host_guard(what,
                      [alive = std::weak_ptr<const bool>(lifetime_.alive), this, group, groups = groups_.size(),
                       params = std::move(params), baked = baked_hyperparameters(group),
                       generation = state_generation_] {
                        return !alive.expired() && groups_.size() == groups && same_params(group, params) &&
                               baked_hyperparameters(group) == baked && state_generation_ == generation;
                      });
  }

  std::string name_;  // "Adam": names the optimizer in errors

 private:
  size_t group_index(size_t group) const {
    check(group < groups_.size(), "{}: parameter group {} does not exist ({} groups)", name_, group, groups_.size());
    return group;
  }
  const ParamGroup& group_at(size_t group) const { return groups_[group_index(group)]; }

  static bool has_state_entries(const OptimizerState& state, size_t index) {
    bool found = false;
    ParamState probe;
    ParamState::fields(probe, [&](const char* name, const auto&, bool) {
      const std::string key = detail::state_key(index, name);
      found = found || state.scalars.contains(key) || state.tensors.contains(key);
    });
    return found;
  }

  // Checks `state` for load_state_dict and returns the groups it describes (this optimizer's
  // parameters with the state's options and initial_lr).
  std::vector<ParamGroup> validate_state(const OptimizerState& state) const;

  // Whether group `group` holds exactly `params`, in order. Compared by owner, which needs no
  // lock per parameter and cannot mistake a new tensor for a freed one at its address.
  bool same_params(size_t group, const std::vector<std::weak_ptr<TensorImpl>>& params) const {
    const std::vector<Tensor>& now = groups_[group].params;
    if (now.size() != params.size()) return false;
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].owner_before(now[i].impl_ptr()) || now[i].impl_ptr().owner_before(params[i])) return false;
    return true;
  }

  std::vector<double> baked_hyperparameters(size_t group) const {
    std::vector<double> values;
    Options::fields(groups_[group].options, [&](const char* name, const auto& value) {
      if (std::string_view(name) != "lr") values.push_back(static_cast<double>(value));
    });
    return values;
  }

  // Expires with this object (see guard_hyperparameters); a copy or a move target gets its own,
  // since the guards and refreshes a capture keeps point at the object they were made by.
  struct LifetimeToken {
    std::shared_ptr<const bool> alive = std::make_shared<const bool>(true);
    LifetimeToken() = default;
    LifetimeToken(const LifetimeToken&) : LifetimeToken() {}
    LifetimeToken& operator=(const LifetimeToken&) { return *this; }
  };
  LifetimeToken lifetime_;
  Options defaults_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
  // Bumped by load_state_dict, which replaces the state's tensors: a compiled step's guard
  // compares it, since the old buffers it is bound to may still be held elsewhere (a state_dict()
  // the user kept) and so pass the graph's "still referenced" guard.
  uint64_t state_generation_ = 0;
};

}  // namespace ember::optim

#include "runtime/optim/optimizer_validate.h"
