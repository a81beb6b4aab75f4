// OneCycleLR: PyTorch 2.x's phases and annealing functions, operation by operation (it is no
// recursive schedule: each rate comes from the group's initial, max and min rates and the step).
// Built without FMA contraction like the other schedules.
#include <cmath>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace ember::optim {

namespace {

constexpr int kInitial = 0;
constexpr int kMax = 1;
constexpr int kMin = 2;

int64_t checked_total_steps(const OneCycleOptions& o) {
  if (o.total_steps) {
    check(*o.total_steps > 0, "OneCycleLR: total_steps must be a positive integer, got {}", *o.total_steps);
    return *o.total_steps;
  }
  check(o.epochs.has_value() && o.steps_per_epoch.has_value(),
        "OneCycleLR: give either total_steps or both epochs and steps_per_epoch");
  check(*o.epochs > 0, "OneCycleLR: epochs must be a positive integer, got {}", *o.epochs);
  check(*o.steps_per_epoch > 0, "OneCycleLR: steps_per_epoch must be a positive integer, got {}", *o.steps_per_epoch);
  check(*o.epochs <= INT64_MAX / *o.steps_per_epoch, "OneCycleLR: epochs * steps_per_epoch ({} * {}) overflows",
        *o.epochs, *o.steps_per_epoch);
  return *o.epochs * *o.steps_per_epoch;
}

}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, OneCycleOptions options, Where where)
    : LRScheduler(optimizer, "OneCycleLR") {
  CallSiteScope site(where);
  total_steps_ = checked_total_steps(options);
  check(options.pct_start >= 0.0 && options.pct_start <= 1.0, "OneCycleLR: pct_start must be in [0, 1], got {}",
        options.pct_start);
  check(options.anneal_strategy == "cos" || options.anneal_strategy == "linear",
        "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '{}'", options.anneal_strategy);
  cosine_ = options.anneal_strategy == "cos";
  // PyTorch does not check these; a zero, negative or NaN divisor gives rates no optimizer takes.
  check(options.div_factor > 0.0 && std::isfinite(options.div_factor),
        "OneCycleLR: div_factor must be positive and finite, got {}", options.div_factor);
  check(options.final_div_factor > 0.0 && std::isfinite(options.final_div_factor),
        "OneCycleLR: final_div_factor must be positive and finite, got {}", options.final_div_factor);
  const size_t groups = optimizer.num_param_groups();
  if (max_lr.size() == 1) max_lr.assign(groups, max_lr[0]);
  check(max_lr.size() == groups, "OneCycleLR: expected {} max_lr values (one per parameter group) or one, got {}",
        groups, max_lr.size());
  for (size_t g = 0; g < groups; ++g)
    check(std::isfinite(max_lr[g]) && max_lr[g] >= 0.0,
          "OneCycleLR: max_lr of parameter group {} must be finite and non-negative, got {}", g, max_lr[g]);

  // PyTorch's phase boundaries, float(pct_start * total_steps) - 1 and so on, as floats.
  const double total = static_cast<double>(total_steps_);
  const double warmup_end = options.pct_start * total - 1.0;
  if (options.three_phase) {
    phases_ = {{warmup_end, kInitial, kMax},
               {2.0 * options.pct_start * total - 2.0, kMax, kInitial},
               {total - 1.0, kInitial, kMin}};
  } else {
    phases_ = {{warmup_end, kInitial, kMax}, {total - 1.0, kMax, kMin}};
  }
  for (size_t g = 0; g < groups; ++g) {
    const double initial = max_lr[g] / options.div_factor;
    group_rates_.push_back({initial, max_lr[g], initial / options.final_div_factor});
  }
  // The first rates' own errors (a phase of length zero) before the optimizer changes.
  compute_lr(0);
  // PyTorch assigns initial_lr (no setdefault): the cycle's start is the base rate, whatever an
  // earlier scheduler recorded. Everything is checked by now, so this is the first change.
  for (size_t g = 0; g < groups; ++g) optimizer.set_initial_lr(g, group_rates_[g][kInitial]);
  start();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (cosine_) {
    const double cos_out = std::cos(std::numbers::pi * pct) + 1.0;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::compute_lr(int64_t epoch) const {
  // As in PyTorch, step total_steps itself is still allowed (the last phase extrapolated a step).
  check(epoch <= total_steps_, "OneCycleLR.step: tried to step {} times; the specified number of total steps is {}",
        epoch, total_steps_);
  const double step = static_cast<double>(epoch);
  std::vector<double> rates;
  for (const std::vector<double>& group : group_rates_) {
    double start_step = 0.0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& phase = phases_[i];
      if (step <= phase.end_step || i + 1 == phases_.size()) {
        // Python raises ZeroDivisionError on a phase that ends where it begins (pct_start * total_steps
        // of 1, say); named here instead of a NaN rate.
        check(phase.end_step != start_step,
              "OneCycleLR: phase {} ends at step {}, where it begins (pct_start too small for total_steps?); "
              "PyTorch divides by zero here",
              i, phase.end_step);
        const double pct = (step - start_step) / (phase.end_step - start_step);
        rates.push_back(anneal(group[phase.start], group[phase.end], pct));
        break;
      }
      start_step = phase.end_step;
    }
  }
  return rates;
}

}  // namespace ember::optim
