// More learning-rate schedulers (torch.optim.lr_scheduler, PyTorch 2.x): ConstantLR, PolynomialLR,
// MultiplicativeLR, CosineAnnealingWarmRestarts and OneCycleLR on the LRScheduler framework of
// lr_scheduler.h; ReduceLROnPlateau, which (as in PyTorch) is no chainable schedule: its step
// takes a metric and lowers the rates only when the metric stops improving; and ChainedScheduler
// and SequentialLR, which step other schedulers together or one after another.
//
//   optim::OneCycleLR scheduler(opt, /*max_lr=*/{0.1}, {.total_steps = 1000});
//   for (batch ...) { train(); scheduler.step(); }
//   optim::ReduceLROnPlateau plateau(opt, {.patience = 3});
//   for (epoch ...) { plateau.step(validation_loss()); }
//
// The chainable ones use PyTorch's recursive forms (each rate from the optimizer's current one),
// so they compose with other schedulers on one optimizer as PyTorch's do.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/nn/ordered_dict.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/optimizer.h"

namespace ember::optim {

// Multiplies the rate by factor from epoch 0 until epoch total_iters, where it divides it back out.
class ConstantLR : public LRScheduler {
 public:
  explicit ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3.0, int64_t total_iters = 5,
                      Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  double factor_;
  int64_t total_iters_;
};

// Decays the base rate to 0 over total_iters epochs: base * (1 - epoch / total_iters)^power.
class PolynomialLR : public LRScheduler {
 public:
  explicit PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0,
                        Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  int64_t total_iters_;
  double power_;
};

// Multiplies the current rate by lambda(epoch) at every epoch after the first, one lambda for
// every group or one per group.
class MultiplicativeLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t epoch)>;
  MultiplicativeLR(Optimizer& optimizer, Lambda lambda, Where where = Where::current());
  MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lambdas, Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  std::vector<Lambda> lambdas_;
};

// Cosine from the base rate down towards eta_min over T_cur = 0 .. T_i - 1, restarting at the base
// rate after each period; the first period is T_0 epochs and each next one T_mult times longer.
// step() takes no epoch (PyTorch's step(epoch) form, with fractional epochs, is not offered).
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0.0,
                              Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  int64_t T_0_;
  int64_t T_mult_;
  double eta_min_;
};

// The 1cycle policy: from max_lr / div_factor up to max_lr over the first pct_start of total_steps,
// then down to max_lr / div_factor / final_div_factor (three_phase: back to the initial rate over
// as many steps, then down to the minimum). Like PyTorch it overwrites each group's initial_lr with
// max_lr / div_factor. Stepping past total_steps is an error; step total_steps itself extrapolates
// the last phase, as PyTorch does (linear annealing then goes below zero, which ember's optimizers
// refuse where PyTorch would set it). PyTorch's cycle_momentum is not offered: ember's Optimizer
// has no momentum setter (PyTorch's default cycles SGD's momentum or Adam's beta1).
struct OneCycleOptions {
  std::optional<int64_t> total_steps;  // or epochs * steps_per_epoch
  std::optional<int64_t> epochs;
  std::optional<int64_t> steps_per_epoch;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // or "linear"
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

class OneCycleLR : public LRScheduler {
 public:
  // max_lr: one rate for every group, or one per group.
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, OneCycleOptions options, Where where = Where::current());
  int64_t total_steps() const { return total_steps_; }

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  struct Phase {
    double end_step;
    int start;  // 0: initial rate, 1: max_lr, 2: min rate
    int end;
  };
  double anneal(double start, double end, double pct) const;

  int64_t total_steps_ = 0;
  bool cosine_ = true;
  std::vector<Phase> phases_;
  std::vector<std::vector<double>> group_rates_;  // per group: initial, max, min
};

// Lowers every group's rate by `factor` once the metric has not improved for more than `patience`
// steps, then waits `cooldown` steps before counting again.
struct PlateauOptions {
  std::string mode = "min";  // "min": lower is better; "max": higher is better
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // "rel": relative to the best; "abs": absolute
  int64_t cooldown = 0;
  std::vector<double> min_lr = {0.0};  // one for every group, or one per group
  double eps = 1e-8;                   // a change smaller than this is not made
};

class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions options = {}, Where where = Where::current());
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;

  // Records one epoch's metric, lowering the rates where it has plateaued. A NaN metric is never
  // an improvement (as in PyTorch, where every comparison with it is false). Inside an
  // ember::compile'd function it breaks the graph: it runs eagerly on every call.
  void step(double metric, Where where = Where::current());
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }

  // Scalars "last_epoch", "best", "num_bad_epochs", "cooldown_counter", "last_lr.<g>"; the
  // settings are not included: construct the same scheduler, then load.
  OrderedDict<double> state_dict() const;
  void load_state_dict(const OrderedDict<double>& state, Where where = Where::current());

 private:
  bool is_better(double metric) const;
  void reduce_rates();

  Optimizer& optimizer_;
  PlateauOptions options_;
  std::vector<double> min_lrs_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

// Steps several schedulers of one optimizer together, in the given order, so their effects
// multiply (PyTorch's ChainedScheduler), e.g. a ConstantLR warm-up with an ExponentialLR decay.
// The schedulers are not owned and must outlive it. ReduceLROnPlateau, whose step takes a metric,
// is no LRScheduler and cannot be chained (PyTorch refuses it at run time). Unlike PyTorch, it
// cannot check that every scheduler drives `optimizer`: LRScheduler does not expose its optimizer.
// As in PyTorch a step is not atomic: a refusal by the second scheduler leaves the first stepped.
// Inside an ember::compile'd step, ChainedScheduler's and SequentialLR's step() is one host effect
// that every replay repeats whole (the schedulers' own steps inside it are part of it).
class ChainedScheduler {
 public:
  ChainedScheduler(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, Where where = Where::current());
  ChainedScheduler(const ChainedScheduler&) = delete;
  ChainedScheduler& operator=(const ChainedScheduler&) = delete;

  void step(Where where = Where::current());
  // The optimizer's rates after the last step (or at construction), one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }

  // Each scheduler's state under "<i>.", i its index: "0.last_epoch", "1.base_lrs.0", ...
  OrderedDict<double> state_dict() const;
  // Loads every scheduler's part, or none: a part that one refuses undoes the parts loaded before it.
  void load_state_dict(const OrderedDict<double>& state, Where where = Where::current());

 private:
  void advance();  // step()'s work, which a compiled replay repeats
  void read_rates();

  Optimizer& optimizer_;
  std::vector<LRScheduler*> schedulers_;
  std::vector<double> last_lr_;
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);  // see LRScheduler's
};

// Runs schedulers one after another (PyTorch's SequentialLR): scheduler i + 1 takes over at
// milestone i, restarting from its epoch 0 on its base rates. Construction, as in PyTorch, sets
// every group back to its initial_lr, undoes the schedulers' construction steps and redoes the
// first one's. The schedulers are not owned and must outlive it; they cannot be ChainedSchedulers
// or SequentialLRs (PyTorch's nest), and, as for ChainedScheduler, that they drive `optimizer` is
// not checked. The restart differs from PyTorch for MultiplicativeLR and CosineAnnealingWarmRestarts
// (scheduler_sequences.cpp says how).
class SequentialLR {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones,
               Where where = Where::current());
  SequentialLR(const SequentialLR&) = delete;
  SequentialLR& operator=(const SequentialLR&) = delete;

  void step(Where where = Where::current());
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }

  // "last_epoch", "last_lr.<g>", then each scheduler's state under "<i>.".
  OrderedDict<double> state_dict() const;
  void load_state_dict(const OrderedDict<double>& state, Where where = Where::current());

 private:
  void advance();  // step()'s work, which a compiled replay repeats
  void restart(LRScheduler& scheduler);

  Optimizer& optimizer_;
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);  // see LRScheduler's
};

}  // namespace ember::optim
