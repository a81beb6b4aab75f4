// OptimizerBase::validate_state: everything load_state_dict checks before it changes anything.
// Included by optimizer.h; a separate file only to keep that header short.
#pragma once

#include <algorithm>
#include <cmath>

#include "runtime/optim/optimizer.h"

namespace ember::optim {

template <typename Options, typename ParamState>
std::vector<typename OptimizerBase<Options, ParamState>::ParamGroup> OptimizerBase<Options, ParamState>::validate_state(
    const OptimizerState& state) const {
  const char* who = name_.c_str();
  std::vector<std::string> option_names;
  Options probe_options{};
  Options::fields(probe_options, [&](const char* name, const auto&) { option_names.emplace_back(name); });
  std::vector<std::string> counter_names;
  std::vector<std::string> real_names;  // per-parameter real numbers (NAdam's mu_product)
  std::vector<std::string> tensor_names;
  std::vector<std::string> required_names;
  ParamState probe_state{};
  ParamState::fields(probe_state, [&](const char* name, const auto& value, bool required) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, Tensor>) {
      tensor_names.emplace_back(name);
    } else if constexpr (std::is_floating_point_v<std::decay_t<decltype(value)>>) {
      real_names.emplace_back(name);
    } else {
      counter_names.emplace_back(name);
    }
    if (required) required_names.emplace_back(name);
  });
  auto listed = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };

  // Groups: the same number, each with the same number of parameters and every option, whose
  // values pass the checks the constructor makes (bools exactly 0 or 1, as state_dict writes them).
  size_t state_groups = 0;
  while (state.scalars.contains(detail::group_key(state_groups, "num_params"))) ++state_groups;
  check(state_groups == groups_.size(), "{}: load_state_dict: the state has {} parameter groups, the optimizer {}",
        who, state_groups, groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string count_key = detail::group_key(g, "num_params");
    const double count = state.scalars.at(count_key);
    check(count == static_cast<double>(groups_[g].params.size()),
          "{}: load_state_dict: '{}' is {}, but parameter group {} has {} parameters", who, count_key, count, g,
          groups_[g].params.size());
    for (const std::string& option : option_names) {
      const std::string key = detail::group_key(g, option.c_str());
      check(state.scalars.contains(key) || detail::option_added_later(option), "{}: load_state_dict: missing key '{}'",
            who, key);
    }
  }
  std::vector<ParamGroup> loaded = groups_;
  for (size_t g = 0; g < loaded.size(); ++g) {
    Options::fields(loaded[g].options, [&](const char* name, auto& value) {
      const std::string key = detail::group_key(g, name);
      const double* found = state.scalars.find(key);
      if (found == nullptr) {  // an option added later, absent from an older state: off
        value = std::decay_t<decltype(value)>{};
        return;
      }
      const double saved = *found;
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>)
        check(saved == 0.0 || saved == 1.0, "{}: load_state_dict: '{}' must be 0 or 1, got {}", who, key, saved);
      value = static_cast<std::decay_t<decltype(value)>>(saved);
    });
    loaded[g].options.validate(fmt::format("{}: load_state_dict: param_groups.{}", who, g).c_str());
    const std::string initial_key = detail::group_key(g, "initial_lr");
    loaded[g].initial_lr.reset();  // a state saved before any scheduler has none, as in PyTorch
    if (const double* initial = state.scalars.find(initial_key)) {
      check(std::isfinite(*initial) && *initial >= 0.0,
            "{}: load_state_dict: '{}' must be a finite non-negative learning rate, got {}", who, initial_key,
            *initial);
      loaded[g].initial_lr = *initial;
    }
  }

  // Every key is one this optimizer writes; buffers match their parameter's shape.
  const std::vector<Tensor> params = parameters();
  size_t index = 0;
  std::string field;
  for (const auto& [key, value] : state.scalars) {
    bool known = false;
    if (detail::parse_key(key, "param_groups", index, field)) {
      known = index < groups_.size() &&
              (field == "num_params" || field == "initial_lr" || listed(option_names, field));
    } else if (detail::parse_key(key, "state", index, field)) {
      known = index < params.size() && listed(counter_names, field);
      // A count (Adam's step) is a whole number: a NaN or 1e300 cast to int64 is undefined
      // behaviour, and a fraction or a negative count a state no step could have written.
      check(!known || (std::isfinite(value) && value == std::floor(value) && value >= 0.0 &&
                       value <= 9007199254740992.0),
            "{}: load_state_dict: '{}' must be a whole number from 0 to 2^53, got {}", who, key, value);
      const bool real = index < params.size() && listed(real_names, field);
      check(!real || std::isfinite(value), "{}: load_state_dict: '{}' must be finite, got {}", who, key, value);
      known = known || real;
    }
    check(known, "{}: load_state_dict: unexpected key '{}'", who, key);
  }
  for (const auto& [key, tensor] : state.tensors) {
    const bool known = detail::parse_key(key, "state", index, field) && index < params.size() &&
                       listed(tensor_names, field);
    check(known, "{}: load_state_dict: unexpected key '{}'", who, key);
    check(tensor.defined(), "{}: load_state_dict: '{}' is an undefined tensor", who, key);
    check(tensor.sizes() == params[index].sizes(),
          "{}: load_state_dict: size mismatch for '{}': the state has shape {}, the parameter {}", who, key,
          tensor.sizes(), params[index].sizes());
  }

  // A parameter with any state has all of its required entries.
  for (size_t i = 0; i < params.size(); ++i) {
    if (!has_state_entries(state, i)) continue;
    for (const std::string& name : required_names) {
      const std::string key = detail::state_key(i, name.c_str());
      const bool present = listed(tensor_names, name) ? state.tensors.contains(key) : state.scalars.contains(key);
      check(present, "{}: load_state_dict: missing key '{}'", who, key);
    }
  }
  return loaded;
}

}  // namespace ember::optim
