// optim::LBFGS: libtorch's torch::optim::LBFGS (options, state and algorithm as in PyTorch's
// torch/optim/lbfgs.py), limited-memory BFGS over all parameters as one flat vector. Each step
// calls the closure up to max_eval times: it keeps the last history_size pairs
//   s = t * d (the step taken),   y = grad_new - grad_old (the change of the gradient),   ro = 1 / (y . s)
// (a pair only when y . s > 1e-10), scales the initial inverse Hessian by H_diag = (y . s) / (y . y),
// and finds the next direction d = -H grad by the two-loop recursion. The step length t is lr
// (the first iteration ever: min(1, 1 / |grad|_1) * lr), or what the strong Wolfe line search
// finds (line_search_fn = "strong_wolfe"). A step stops after max_iter iterations or max_eval
// evaluations, when max |grad| <= tolerance_grad, when grad . d > -tolerance_change, or when the
// step (max |t d|) or the loss change falls below tolerance_change.
//
// One parameter group only, as in PyTorch; every parameter of one dtype and device. The loss
// and the scalars the algorithm branches on are read on the host (as PyTorch's float() and
// comparisons do), so under ember::compile a step is a graph break, which fullgraph refuses.
//
//   ember::optim::LBFGS opt(model->parameters(), {.line_search_fn = "strong_wolfe"});
//   opt.step([&] { opt.zero_grad(); Tensor loss = criterion(model(x), y); loss.backward(); return loss; });
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

struct LBFGSOptions {
  double lr = 1.0;
  int64_t max_iter = 20;            // iterations per step
  std::optional<int64_t> max_eval;  // closure calls per step; max_iter * 5 / 4 when unset
  double tolerance_grad = 1e-7;
  double tolerance_change = 1e-9;
  int64_t history_size = 100;                 // (s, y) pairs kept
  std::optional<std::string> line_search_fn;  // none: fixed step lr; or "strong_wolfe"

  // PyTorch's lr check, and what its step would reject or silently misuse: counts below 1, a
  // negative tolerance, an unknown line search.
  void validate(const char* optimizer) const;
};

// The optimizer's one state (PyTorch keeps it as the first parameter's state). Set by the first
// step: func_evals and n_iter always, the rest once an iteration ran (n_iter > 0).
struct LBFGSState {
  int64_t func_evals = 0;        // closure calls over all steps
  int64_t n_iter = 0;            // iterations over all steps
  Tensor d;                      // the last direction (flat)
  double t = 0.0;                // the last step length
  std::vector<Tensor> old_dirs;  // y of each kept pair, oldest first
  std::vector<Tensor> old_stps;  // s of each kept pair
  std::vector<double> ro;        // 1 / (y . s) of each kept pair
  double H_diag = 1.0;           // the scale of the initial inverse Hessian
  Tensor prev_flat_grad;         // the gradient the last iteration started from
  double prev_loss = 0.0;        // the loss the last iteration started from
};

// state_dict() keys (see OptimizerState): the options under "param_groups.0." (line_search_fn as
// 0 = none, 1 = "strong_wolfe"; max_eval resolved), "state.0.func_evals", "state.0.n_iter", and
// once an iteration ran "state.0.{t,H_diag,prev_loss}", "state.0.{d,prev_flat_grad}" and per kept
// pair k "state.0.ro.<k>", "state.0.old_dirs.<k>", "state.0.old_stps.<k>".
class LBFGS : public Optimizer {
 public:
  using Options = LBFGSOptions;
  explicit LBFGS(std::vector<Tensor> params, LBFGSOptions options = {}, Where where = Where::current());

  // Always refused: LBFGS has one parameter group (PyTorch raises the same at construction).
  void add_param_group(std::vector<Tensor> params, std::optional<LBFGSOptions> options = std::nullopt,
                       Where where = Where::current());

  const LBFGSOptions& options() const { return options_; }
  // Null before the first step.
  const LBFGSState* state() const { return state_ ? &*state_ : nullptr; }

  size_t num_param_groups() const override { return 1; }
  std::vector<Tensor> parameters() const override { return params_; }
  OptimizerState state_dict() const override;

 protected:
  // Runs up to max_iter iterations and returns the closure's first loss. A closure is required.
  // The state is stored once the step went through; a closure that throws leaves it unchanged
  // (the parameters may have moved, as in PyTorch).
  Tensor step_impl(const LossClosure& closure) override;
  void load_state_impl(const OptimizerState& state) override;
  double group_lr(size_t group) const override;
  void set_group_lr(size_t group, double lr) override;
  std::optional<double> group_initial_lr(size_t group) const override;
  void set_group_initial_lr(size_t group, double lr) override;

 private:
  void check_group(size_t group) const;
  int64_t num_elements() const;
  // All gradients as one flat vector (zeros for a parameter without one).
  Tensor gather_flat_grad() const;
  // params += step * d (d flat).
  void add_to_params(double step, const Tensor& d);
  std::vector<Tensor> clone_params() const;
  void set_params(const std::vector<Tensor>& values);
  // Calls the closure and returns its loss on the host.
  double evaluate(const LossClosure& closure, Tensor* loss_tensor = nullptr) const;

  std::vector<Tensor> params_;
  LBFGSOptions options_;
  std::optional<double> initial_lr_;
  std::optional<LBFGSState> state_;
};

}  // namespace ember::optim
