// optim::Optimizer's shared pieces: zero_grad, parameter checks and state-dict key helpers.
#include "runtime/optim/optimizer.h"

#include <charconv>
#include <unordered_set>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/memory/overlap.h"
#include "runtime/zero_grad.h"

namespace ember::optim {

void Optimizer::zero_grad(bool set_to_none) {
  zero_grads(parameters(), set_to_none);
}

namespace detail {

void check_new_params(const std::string& optimizer, const std::vector<Tensor>& params,
                      const std::vector<Tensor>& existing) {
  // As in PyTorch, only the constructor's list (the first group: no parameters exist yet) must not
  // be empty; add_param_group appends an empty group, whose rate schedulers set like any other.
  check(!params.empty() || !existing.empty(), "{}: got an empty parameter list", optimizer);
  std::unordered_set<const TensorImpl*> seen;
  for (const Tensor& param : existing) seen.insert(param.impl());
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& param = params[i];
    check(param.defined(), "{}: parameter {} is an undefined tensor", optimizer, i);
    check(param.is_floating_point(), "{}: parameter {} has dtype {}; only floating-point tensors can be optimized",
          optimizer, i, param.dtype());
    // PyTorch's rule: a leaf, or a non-leaf that retain_grad() gives a .grad of its own.
    check(param.is_leaf() || param.retains_grad(),
          "{}: parameter {} (shape {}) is not a leaf tensor and cannot be optimized (call retain_grad() on it first "
          "to optimize it anyway)",
          optimizer, i, param.sizes());
    check(seen.insert(param.impl()).second,
          "{}: parameter {} (shape {}) appears twice; a parameter may belong to one group only", optimizer, i,
          param.sizes());
  }
}

bool parse_key(const std::string& key, const std::string& section, size_t& index, std::string& field) {
  if (key.size() <= section.size() + 1 || key.compare(0, section.size(), section) != 0 || key[section.size()] != '.')
    return false;
  const size_t start = section.size() + 1;
  const size_t dot = key.find('.', start);
  if (dot == std::string::npos || dot == start || dot + 1 >= key.size()) return false;
  const auto [end, error] = std::from_chars(key.data() + start, key.data() + dot, index);
  if (error != std::errc() || end != key.data() + dot) return false;
  field = key.substr(dot + 1);
  return true;
}

Tensor run_closure(const LossClosure& closure) {
  if (!closure) return {};
  AutoGradMode enable_grad(true);
  CallSiteSuspend closure_lines;
  return closure();
}

void check_adam_like_options(const char* optimizer, double lr, double eps, std::pair<double, double> betas,
                             double weight_decay) {
  check(lr >= 0.0, "{}: Invalid learning rate: {}", optimizer, lr);
  check(eps >= 0.0, "{}: Invalid epsilon value: {}", optimizer, eps);
  check(betas.first >= 0.0 && betas.first < 1.0, "{}: Invalid beta parameter at index 0: {}", optimizer, betas.first);
  check(betas.second >= 0.0 && betas.second < 1.0, "{}: Invalid beta parameter at index 1: {}", optimizer,
        betas.second);
  check(weight_decay >= 0.0, "{}: Invalid weight_decay value: {}", optimizer, weight_decay);
}

Tensor new_state_buffer(const Tensor& param, double value) {
  const DispatchModesHidden outside_capture;
  return full(param.sizes(), value, {.dtype = param.dtype(), .device = param.device()});
}

void check_updatable(const std::string& optimizer, const Tensor& param, size_t group, size_t index) {
  check(!has_internal_overlap(param),
        "{}: parameter {} of group {} (shape {}, strides {}) is expanded: several of its elements share one "
        "address, so it cannot be updated in place; clone() it first",
        optimizer, index, group, param.sizes(), param.strides());
}

bool option_added_later(std::string_view option) { return option == "maximize"; }

std::string group_key(size_t group, const char* field) { return fmt::format("param_groups.{}.{}", group, field); }
std::string state_key(size_t index, const char* field) { return fmt::format("state.{}.{}", index, field); }

}  // namespace detail
}  // namespace ember::optim
