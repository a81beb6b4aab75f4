// Learning-rate schedulers (torch.optim.lr_scheduler): StepLR, MultiStepLR, ExponentialLR,
// CosineAnnealingLR, LambdaLR and LinearLR (the linear warm-up). Each sets the learning rate of
// every parameter group of an optimizer, once at construction (epoch 0) and again at each step().
// Formulas are PyTorch 1.13's recursive ("chainable") forms, so the sequences match PyTorch to the
// last bit. As in PyTorch, the base rate of a group is its initial_lr, which the first scheduler
// made on the group records (Optimizer::initial_lr): schedulers chained on one optimizer share it.
//
//   optim::StepLR scheduler(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (epoch ...) { train(); scheduler.step(); }
//
// step() may also run inside an ember::compile'd training step: it is a host effect that every
// replay repeats at the same point (before the next optimizer step reads the rate), so a
// per-iteration schedule neither breaks the graph nor recompiles it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/nn/ordered_dict.h"
#include "runtime/optim/optimizer.h"

namespace ember::optim {

// A scheduler refers to its optimizer, which must outlive it. Errors of the constructors, step() and
// load_state_dict() name the scheduler ("StepLR") and the caller's line.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one epoch and writes the new learning rates into the optimizer. Refused (nothing
  // changes) once the optimizer has more parameter groups than when the scheduler was made, or
  // when the schedule gives a group a rate the optimizer refuses (negative or NaN: PyTorch would
  // set it), checked for every group before anything changes.
  void step(Where where = Where::current());
  // The learning rates the last step() set, one per parameter group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }

  // Scalars "last_epoch", "step_count", "base_lrs.<g>", "last_lr.<g>". The schedule's own settings
  // (step_size, gamma, lambdas, ...) are not included: construct the same scheduler, then load.
  OrderedDict<double> state_dict() const;
  // Validates every key and the group count before changing anything.
  void load_state_dict(const OrderedDict<double>& state, Where where = Where::current());

 protected:
  // `name` ("StepLR") names the scheduler in errors, compile dumps and guards. A subclass's
  // constructor opens a CallSiteScope for its caller's `where` before it checks its settings.
  LRScheduler(Optimizer& optimizer, const char* name);
  // Called by subclasses at the end of their constructor, once their settings are checked: records
  // each group's initial_lr where none is (PyTorch's setdefault) and takes those as the base
  // rates, then makes PyTorch's initial step (epoch 0).
  void start();
  // The learning rates for `epoch` (last_epoch() + 1, or 0 at construction), given the optimizer's
  // current ones, which are those of the epoch before.
  virtual std::vector<double> compute_lr(int64_t epoch) const = 0;
  double current_lr(size_t group) const { return optimizer_.get_lr(group); }

  Optimizer& optimizer_;

 private:
  void step_here();  // step() without the call site: reports itself to a capture, then advances
  void report_step_to_capture();
  void advance();    // step()'s work: the next epoch's rates, checked, then applied
  // compute_lr(epoch), each rate checked with the optimizer's rule; `caller` ("StepLR.step") names
  // the call in the error.
  std::vector<double> checked_rates(int64_t epoch, const std::string& caller) const;
  // Moves to the next epoch with `rates`, already checked: the counters, last_lr and the optimizer.
  void apply(std::vector<double> rates);

  const char* name_;
  // Expires with this scheduler: a compiled step's guard then recompiles instead of replaying
  // step() on a dead object.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
};

// Multiplies the learning rate by gamma every step_size epochs: base * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// Multiplies the learning rate by gamma at each milestone epoch: base * gamma^(milestones <= epoch).
// A milestone listed k times multiplies by gamma^k there (PyTorch keeps them in a Counter); the
// list need not be sorted.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1,
              Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// Multiplies the learning rate by gamma every epoch: base * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma, Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  double gamma_;
};

// Cosine from the base rate down to eta_min over T_max epochs (and back up over the next T_max):
// eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, computed recursively.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0, Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// base * lambda(epoch), with one lambda for every group or one per group.
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t epoch)>;
  LambdaLR(Optimizer& optimizer, Lambda lambda, Where where = Where::current());
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lambdas, Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  std::vector<Lambda> lambdas_;
};

// Linear warm-up: the factor on the base rate goes linearly from start_factor (epoch 0) to
// end_factor (epoch total_iters) and stays there. With total_iters = 0 it stays at start_factor,
// as PyTorch's (every epoch after 0 is past total_iters, which changes nothing).
class LinearLR : public LRScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3.0, double end_factor = 1.0,
                    int64_t total_iters = 5, Where where = Where::current());

 protected:
  std::vector<double> compute_lr(int64_t epoch) const override;

 private:
  double start_factor_;
  double end_factor_;
  int64_t total_iters_;
};

}  // namespace ember::optim
