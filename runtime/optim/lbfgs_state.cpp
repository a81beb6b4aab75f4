// optim::LBFGS's state dict: the one group's options and the optimizer's one state under the
// first parameter's index, as PyTorch keeps them (keys in lbfgs.h), and load_state_dict, which
// checks everything before it changes anything.
#include <cmath>
#include <set>

#include "runtime/optim/lbfgs.h"

namespace ember::optim {

namespace {

// The numeric options in state-dict order; line_search_fn is coded 0 (none) / 1 (strong_wolfe).
template <typename Visit>
void visit_numeric_options(LBFGSOptions& options, Visit&& visit) {
  visit("lr", options.lr);
  visit("max_iter", options.max_iter);
  visit("max_eval", *options.max_eval);
  visit("tolerance_grad", options.tolerance_grad);
  visit("tolerance_change", options.tolerance_change);
  visit("history_size", options.history_size);
}

std::string pair_key(const char* field, size_t pair) { return fmt::format("state.0.{}.{}", field, pair); }

}  // namespace

OptimizerState LBFGS::state_dict() const {
  OptimizerState out;
  LBFGSOptions options = options_;
  visit_numeric_options(options, [&](const char* name, const auto& value) {
    out.scalars.insert(detail::group_key(0, name), static_cast<double>(value));
  });
  out.scalars.insert(detail::group_key(0, "line_search_fn"), options_.line_search_fn ? 1.0 : 0.0);
  if (initial_lr_) out.scalars.insert(detail::group_key(0, "initial_lr"), *initial_lr_);
  out.scalars.insert(detail::group_key(0, "num_params"), static_cast<double>(params_.size()));
  if (!state_) return out;
  out.scalars.insert("state.0.func_evals", static_cast<double>(state_->func_evals));
  out.scalars.insert("state.0.n_iter", static_cast<double>(state_->n_iter));
  if (state_->n_iter == 0) return out;
  out.scalars.insert("state.0.t", state_->t);
  out.scalars.insert("state.0.H_diag", state_->H_diag);
  out.scalars.insert("state.0.prev_loss", state_->prev_loss);
  out.tensors.insert("state.0.d", state_->d);
  out.tensors.insert("state.0.prev_flat_grad", state_->prev_flat_grad);
  for (size_t k = 0; k < state_->old_dirs.size(); ++k) {
    out.scalars.insert(pair_key("ro", k), state_->ro[k]);
    out.tensors.insert(pair_key("old_dirs", k), state_->old_dirs[k]);
    out.tensors.insert(pair_key("old_stps", k), state_->old_stps[k]);
  }
  return out;
}

void LBFGS::load_state_impl(const OptimizerState& state) {
  const char* who = "LBFGS: load_state_dict";
  std::set<std::string> read_keys;  // every key read below; any other is refused at the end
  auto scalar = [&](const std::string& key) {
    const double* found = state.scalars.find(key);
    check(found != nullptr, "{}: missing key '{}'", who, key);
    read_keys.insert(key);
    return *found;
  };
  auto whole = [&](const std::string& key) {
    const double value = scalar(key);
    check(std::isfinite(value) && value == std::floor(value) && value >= 0.0 && value <= 9007199254740992.0,
          "{}: '{}' must be a whole number from 0 to 2^53, got {}", who, key, value);
    return static_cast<int64_t>(value);
  };
  auto finite = [&](const std::string& key) {
    const double value = scalar(key);
    check(std::isfinite(value), "{}: '{}' must be finite, got {}", who, key, value);
    return value;
  };
  const int64_t flat_size = num_elements();
  auto flat_tensor = [&](const std::string& key) {
    const Tensor* found = state.tensors.find(key);
    check(found != nullptr && found->defined(), "{}: missing key '{}'", who, key);
    check(found->sizes() == Dims{flat_size},
          "{}: size mismatch for '{}': the state has shape {}, the flat parameters [{}]", who, key, found->sizes(),
          flat_size);
    read_keys.insert(key);
    return found->to(params_[0].device()).to(params_[0].dtype()).clone();  // the optimizer owns its buffers
  };

  const double groups = state.scalars.contains(detail::group_key(1, "num_params")) ? 2 : 1;
  check(groups == 1, "{}: the state has several parameter groups, LBFGS has one", who);
  const int64_t num_params = whole(detail::group_key(0, "num_params"));
  check(num_params == static_cast<int64_t>(params_.size()), "{}: the state has {} parameters, the optimizer {}", who,
        num_params, params_.size());
  LBFGSOptions options = options_;
  visit_numeric_options(options, [&](const char* name, auto& value) {
    const std::string key = detail::group_key(0, name);
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, int64_t>) {
      value = whole(key);
    } else {
      value = scalar(key);
    }
  });
  const std::string search_key = detail::group_key(0, "line_search_fn");
  const double search = scalar(search_key);
  check(search == 0.0 || search == 1.0, "{}: '{}' must be 0 (none) or 1 (strong_wolfe), got {}", who, search_key,
        search);
  options.line_search_fn = search == 1.0 ? std::optional<std::string>("strong_wolfe") : std::nullopt;
  options.validate(fmt::format("{}: param_groups.0", who).c_str());
  std::optional<double> initial_lr;
  if (state.scalars.contains(detail::group_key(0, "initial_lr"))) {
    initial_lr = finite(detail::group_key(0, "initial_lr"));
    check(*initial_lr >= 0.0, "{}: 'param_groups.0.initial_lr' must be non-negative, got {}", who, *initial_lr);
  }

  std::optional<LBFGSState> loaded;
  if (state.scalars.contains("state.0.func_evals") || state.scalars.contains("state.0.n_iter")) {
    LBFGSState entry;
    entry.func_evals = whole("state.0.func_evals");
    entry.n_iter = whole("state.0.n_iter");
    if (entry.n_iter > 0) {
      entry.t = finite("state.0.t");
      entry.H_diag = finite("state.0.H_diag");
      entry.prev_loss = scalar("state.0.prev_loss");  // may be inf or NaN, as a loss may
      entry.d = flat_tensor("state.0.d");
      entry.prev_flat_grad = flat_tensor("state.0.prev_flat_grad");
      for (size_t k = 0; state.scalars.contains(pair_key("ro", k)); ++k) {
        check(static_cast<int64_t>(k) < options.history_size, "{}: the state keeps more than history_size = {} pairs",
              who, options.history_size);
        entry.ro.push_back(finite(pair_key("ro", k)));
        entry.old_dirs.push_back(flat_tensor(pair_key("old_dirs", k)));
        entry.old_stps.push_back(flat_tensor(pair_key("old_stps", k)));
      }
    }
    loaded = std::move(entry);
  }
  // Every key was read above: anything else is one LBFGS never writes (a mistyped or foreign key,
  // a pair past the first missing one, history with n_iter = 0).
  for (const auto& [key, value] : state.scalars) check(read_keys.contains(key), "{}: unexpected key '{}'", who, key);
  for (const auto& [key, value] : state.tensors) check(read_keys.contains(key), "{}: unexpected key '{}'", who, key);
  options_ = std::move(options);
  initial_lr_ = initial_lr;
  state_ = std::move(loaded);
}

}  // namespace ember::optim
