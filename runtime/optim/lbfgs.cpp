// optim::LBFGS: option checks, the flat-vector helpers and the step (PyTorch's LBFGS.step in its
// order of operations and stopping tests; the algorithm in lbfgs.h, the line search in
// lbfgs_line_search.cpp, the state dict in lbfgs_state.cpp).
#include "runtime/optim/lbfgs.h"

#include <algorithm>
#include <cmath>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/optim/lbfgs_line_search.h"

namespace ember::optim {

void LBFGSOptions::validate(const char* optimizer) const {
  check(lr >= 0.0, "{}: Invalid learning rate: {}", optimizer, lr);
  check(max_iter >= 1, "{}: max_iter must be at least 1, got {}", optimizer, max_iter);
  check(!max_eval || *max_eval >= 1, "{}: max_eval must be at least 1, got {}", optimizer, max_eval.value_or(0));
  check(tolerance_grad >= 0.0, "{}: tolerance_grad must be non-negative, got {}", optimizer, tolerance_grad);
  check(tolerance_change >= 0.0, "{}: tolerance_change must be non-negative, got {}", optimizer, tolerance_change);
  check(history_size >= 1, "{}: history_size must be at least 1, got {}", optimizer, history_size);
  check(!line_search_fn || *line_search_fn == "strong_wolfe",
        "{}: line_search_fn must be unset or \"strong_wolfe\" (the only line search PyTorch supports), got \"{}\"",
        optimizer, line_search_fn.value_or(""));
}

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions options, Where where)
    : params_(std::move(params)), options_(std::move(options)) {
  CallSiteScope site(where);
  options_.validate("LBFGS");
  if (!options_.max_eval) options_.max_eval = options_.max_iter * 5 / 4;  // PyTorch's default
  detail::check_new_params("LBFGS", params_, {});
  for (size_t i = 0; i < params_.size(); ++i) {
    // One flat vector holds every gradient: one dtype and device, as PyTorch's torch.cat needs.
    check(params_[i].dtype() == params_[0].dtype() && params_[i].device() == params_[0].device(),
          "LBFGS: parameter {} is {} on {}, parameter 0 {} on {}; all parameters must share one dtype and device", i,
          params_[i].dtype(), params_[i].device(), params_[0].dtype(), params_[0].device());
  }
}

void LBFGS::add_param_group(std::vector<Tensor> params, std::optional<LBFGSOptions> options, Where where) {
  CallSiteScope site(where);
  fail(
      "LBFGS doesn't support per-parameter options (parameter groups): it has one group of {} parameters, "
      "and cannot add a group of {}",
      params_.size(), params.size());
}

void LBFGS::check_group(size_t group) const {
  check(group == 0, "LBFGS: parameter group {} does not exist (1 group)", group);
}
double LBFGS::group_lr(size_t group) const {
  check_group(group);
  return options_.lr;
}
void LBFGS::set_group_lr(size_t group, double lr) {
  check_group(group);
  check(is_valid_lr(lr), "LBFGS: learning rate must be non-negative, got {}", lr);
  if (dispatch_mode_active()) notify_host_state_change(fmt::format("LBFGS.set_lr({}, {})", group, lr));
  options_.lr = lr;
}
std::optional<double> LBFGS::group_initial_lr(size_t group) const {
  check_group(group);
  return initial_lr_;
}
void LBFGS::set_group_initial_lr(size_t group, double lr) {
  check_group(group);
  check(std::isfinite(lr) && lr >= 0.0, "LBFGS: initial_lr must be finite and non-negative, got {}", lr);
  initial_lr_ = lr;
}

int64_t LBFGS::num_elements() const {
  int64_t total = 0;
  for (const Tensor& param : params_) total += param.numel();
  return total;
}

Tensor LBFGS::gather_flat_grad() const {
  std::vector<Tensor> views;
  for (const Tensor& param : params_) {
    const Tensor grad = param.grad();
    views.push_back(grad.defined() ? grad.reshape({-1})
                                   : zeros({param.numel()}, {.dtype = param.dtype(), .device = param.device()}));
  }
  return cat(views, 0);
}

void LBFGS::add_to_params(double step, const Tensor& d) {
  int64_t offset = 0;
  for (const Tensor& param : params_) {
    Tensor(param).add_(d.narrow(0, offset, param.numel()).reshape(param.sizes()), step);
    offset += param.numel();
  }
}

std::vector<Tensor> LBFGS::clone_params() const {
  std::vector<Tensor> copies;
  for (const Tensor& param : params_) copies.push_back(param.clone());
  return copies;
}

void LBFGS::set_params(const std::vector<Tensor>& values) {
  for (size_t i = 0; i < params_.size(); ++i) Tensor(params_[i]).copy_(values[i]);
}

double LBFGS::evaluate(const LossClosure& closure, Tensor* loss_tensor) const {
  const Tensor loss = detail::run_closure(closure);
  check(loss.defined() && loss.numel() == 1,
        "LBFGS.step: the closure must return the loss as a one-element tensor, got {}",
        loss.defined() ? fmt::format("shape {}", loss.sizes()) : std::string("an undefined tensor"));
  if (loss_tensor != nullptr) *loss_tensor = loss;
  return detail::host_scalar("LBFGS.step: loss.item", loss);
}

namespace {
double max_abs(const Tensor& flat) { return detail::host_scalar("LBFGS.step: abs().max()", flat.abs().max()); }
double dot_value(const Tensor& a, const Tensor& b) { return detail::host_scalar("LBFGS.step: dot", a.dot(b)); }
}  // namespace

Tensor LBFGS::step_impl(const LossClosure& closure) {
  check(closure != nullptr,
        "LBFGS.step: a closure is required: LBFGS evaluates the loss several times per step, so pass one that "
        "clears the gradients, computes the loss, calls backward() and returns the loss, e.g. "
        "opt.step([&] {{ opt.zero_grad(); Tensor loss = ...; loss.backward(); return loss; }})");
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) detail::check_updatable("LBFGS", params_[i], 0, i);
  const LBFGSOptions& options = options_;
  // A copy, stored once the step went through. Its tensors are replaced, never written in place.
  LBFGSState state = state_ ? *state_ : LBFGSState{};

  Tensor orig_loss;
  double loss = evaluate(closure, &orig_loss);
  int64_t current_evals = 1;
  state.func_evals += 1;
  Tensor flat_grad = gather_flat_grad();
  bool optimal = max_abs(flat_grad) <= options.tolerance_grad;
  int64_t n_iter = 0;
  while (!optimal && n_iter < options.max_iter) {
    ++n_iter;
    ++state.n_iter;
    // The direction: steepest descent at the very first iteration, else the L-BFGS direction
    // from the history, updated with the last step's pair when its curvature y . s is positive.
    if (state.n_iter == 1) {
      state.d = flat_grad.neg();
      state.old_dirs.clear();
      state.old_stps.clear();
      state.ro.clear();
      state.H_diag = 1.0;
    } else {
      const Tensor y = flat_grad.sub(state.prev_flat_grad);
      const Tensor s = state.d.mul(state.t);
      const double ys = dot_value(y, s);
      if (ys > 1e-10) {
        if (static_cast<int64_t>(state.old_dirs.size()) == options.history_size) {
          state.old_dirs.erase(state.old_dirs.begin());
          state.old_stps.erase(state.old_stps.begin());
          state.ro.erase(state.ro.begin());
        }
        state.old_dirs.push_back(y);
        state.old_stps.push_back(s);
        state.ro.push_back(1.0 / ys);
        state.H_diag = ys / dot_value(y, y);
      }
      // Two-loop recursion: q = -grad through the pairs newest first, scaled by H_diag, then back.
      const size_t kept = state.old_dirs.size();
      std::vector<double> al(kept);
      Tensor q = flat_grad.neg();
      for (size_t i = kept; i-- > 0;) {
        al[i] = dot_value(state.old_stps[i], q) * state.ro[i];
        q.add_(state.old_dirs[i], -al[i]);
      }
      Tensor r = q.mul(state.H_diag);
      for (size_t i = 0; i < kept; ++i) {
        const double be_i = dot_value(state.old_dirs[i], r) * state.ro[i];
        r.add_(state.old_stps[i], al[i] - be_i);
      }
      state.d = r;
    }
    state.prev_flat_grad = flat_grad.clone();
    state.prev_loss = loss;
    // The step length: at the very first iteration small enough for a large gradient.
    state.t =
        state.n_iter == 1
            ? std::min(1.0, 1.0 / detail::host_scalar("LBFGS.step: abs().sum()", flat_grad.abs().sum())) * options.lr
            : options.lr;
    const double gtd = dot_value(flat_grad, state.d);
    if (gtd > -options.tolerance_change) break;  // not a descent direction (to tolerance)

    int64_t ls_func_evals = 0;
    if (options.line_search_fn) {
      const std::vector<Tensor> x_init = clone_params();
      const Tensor& d = state.d;
      auto objective = [&](double step) {
        add_to_params(step, d);
        const double trial_loss = evaluate(closure);
        Tensor trial_grad = gather_flat_grad();
        set_params(x_init);
        return std::pair{trial_loss, std::move(trial_grad)};
      };
      detail::LineSearchResult found =
          detail::strong_wolfe(objective, state.t, d, loss, flat_grad, gtd, options.tolerance_change);
      loss = found.loss;
      flat_grad = std::move(found.flat_grad);
      state.t = found.t;
      ls_func_evals = found.evaluations;
      add_to_params(state.t, d);
      optimal = max_abs(flat_grad) <= options.tolerance_grad;
    } else {
      add_to_params(state.t, state.d);
      // The last iteration does not re-evaluate: in a stochastic setting the loss would be unused.
      if (n_iter != options.max_iter) {
        loss = evaluate(closure);
        flat_grad = gather_flat_grad();
        optimal = max_abs(flat_grad) <= options.tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    state.func_evals += ls_func_evals;

    if (n_iter == options.max_iter || current_evals >= *options.max_eval) break;
    if (optimal) break;  // (the loop's test; here to keep PyTorch's order of tests)
    if (max_abs(state.d.mul(state.t)) <= options.tolerance_change) break;    // no progress in x
    if (std::abs(loss - state.prev_loss) < options.tolerance_change) break;  // no progress in the loss
  }
  state_ = std::move(state);
  return orig_loss;
}

}  // namespace ember::optim
