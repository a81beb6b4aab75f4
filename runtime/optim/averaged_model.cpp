// optim::AveragedModel: the deep copy of the model, update_parameters and the averaging functions
// of PyTorch 2.3's swa_utils (formulas in averaged_model.h).
#include "runtime/optim/averaged_model.h"

#include <fmt/format.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/functional_math_more.h"
#include "runtime/tensor_alias.h"

namespace ember::optim {

namespace {

// The names of `model`'s and `copy`'s entries must be the same: the factory built the same
// architecture. `what` is "parameters" or "buffers".
void check_same_names(const OrderedDict<Tensor>& model, const OrderedDict<Tensor>& copy, const char* what) {
  const std::vector<std::string> model_keys = model.keys(), copy_keys = copy.keys();
  check(model_keys == copy_keys,
        "AveragedModel: make_copy built a module whose {} are [{}], but the model's are [{}]; it must build the "
        "model's architecture",
        what, fmt::join(copy_keys, ", "), fmt::join(model_keys, ", "));
}

// Pairs of the averaged copy's tensors and the model's, checked to match in count and shape.
void check_pairs(const OrderedDict<Tensor>& averaged, const OrderedDict<Tensor>& model, const char* what,
                 const char* one) {
  check(averaged.size() == model.size(),
        "AveragedModel.update_parameters: the model has {} {}, the averaged copy {}; update with a model of the "
        "architecture it was made from",
        model.size(), what, averaged.size());
  const std::vector<std::string> names = averaged.keys();
  const std::vector<Tensor> ours = averaged.values(), theirs = model.values();
  for (size_t i = 0; i < ours.size(); ++i)
    check(ours[i].sizes() == theirs[i].sizes(),
          "AveragedModel.update_parameters: {} {} ('{}') has shape {} in the model but {} in the averaged copy", one, i,
          names[i], theirs[i].sizes(), ours[i].sizes());
}

// Writes `value` into the tensor `average` refers to (the handle is a copy; the memory is shared).
void write(Tensor average, const Tensor& value) { average.copy_(value); }

// avg + (p - avg) / (n + 1), divided by the int64 tensor n + 1 as PyTorch's: the quotient keeps the
// average's float dtype (an integer average gets the default float dtype, which copy_ truncates).
Tensor swa_average(const Tensor& averaged, const Tensor& current, const Tensor& num_averaged) {
  return averaged + (current - averaged) / (num_averaged + 1.0);
}

void apply_swa(const Tensor& averaged, const Tensor& current, const Tensor& num_averaged) {
  write(averaged, swa_average(averaged, current, num_averaged));
}

}  // namespace

AvgFn get_swa_avg_fn() {
  return [](const Tensor& averaged, const Tensor& current, const Tensor& num_averaged) {
    NoGradGuard no_grad;
    return swa_average(averaged, current, num_averaged);
  };
}

AvgFn get_ema_avg_fn(double decay) {
  return [decay](const Tensor& averaged, const Tensor& current, const Tensor&) {
    NoGradGuard no_grad;
    return decay * averaged + (1.0 - decay) * current;
  };
}

MultiAvgFn get_swa_multi_avg_fn() {
  return [](const std::vector<Tensor>& averaged, const std::vector<Tensor>& current, const Tensor& num_averaged) {
    NoGradGuard no_grad;
    if (averaged.empty()) return;
    if (averaged[0].is_floating_point()) {
      // PyTorch's weight 1 / (num_averaged + 1) is a tensor of the default float dtype, read as a
      // number by _foreach_lerp_.
      const double weight = reciprocal(num_averaged + 1.0).item();
      for (size_t i = 0; i < averaged.size(); ++i) write(averaged[i], lerp(averaged[i], current[i], weight));
      return;
    }
    for (size_t i = 0; i < averaged.size(); ++i) apply_swa(averaged[i], current[i], num_averaged);
  };
}

MultiAvgFn get_ema_multi_avg_fn(double decay) {
  return [decay](const std::vector<Tensor>& averaged, const std::vector<Tensor>& current, const Tensor&) {
    NoGradGuard no_grad;
    if (averaged.empty()) return;
    const bool floating = averaged[0].is_floating_point();
    for (size_t i = 0; i < averaged.size(); ++i)
      write(averaged[i],
            floating ? lerp(averaged[i], current[i], 1.0 - decay) : averaged[i] * decay + current[i] * (1.0 - decay));
  };
}

AveragedModelBase::AveragedModelBase(AveragedModelOptions options, Where where)
    : Module("AveragedModel"), options_(std::move(options)) {
  CallSiteScope site(where);
  check(!(options_.avg_fn && options_.multi_avg_fn), "AveragedModel: give only one of avg_fn and multi_avg_fn");
}

AveragedModelBase::KeepGenerators::KeepGenerators(const nn::Module& model) {
  std::vector<Device> devices{kCPU, default_device()};
  for (const Tensor& tensor : model.parameters()) devices.push_back(tensor.device());
  for (const Tensor& tensor : model.buffers()) devices.push_back(tensor.device());
  for (const Device& device : devices) {
    bool seen = false;
    for (const auto& [kept, state] : saved_) seen = seen || kept == device;
    if (!seen) saved_.emplace_back(device, default_generator(device).get_state());
  }
}

AveragedModelBase::KeepGenerators::~KeepGenerators() {
  for (const auto& [device, state] : saved_) default_generator(device).set_state(state);
}

void AveragedModelBase::adopt_copy(nn::Module& model, const std::shared_ptr<nn::Module>& copy) {
  check(copy.get() != &model, "AveragedModel: make_copy returned the model itself; it must build a new module");
  const OrderedDict<Tensor> parameters = model.named_parameters(), buffers = model.named_buffers();
  const OrderedDict<Tensor> copy_parameters = copy->named_parameters(), copy_buffers = copy->named_buffers();
  check_same_names(parameters, copy_parameters, "parameters");
  check_same_names(buffers, copy_buffers, "buffers");
  // A factory that hands out a submodule of the model would average the model into itself.
  std::unordered_map<const Storage*, std::string> model_storage;
  for (const OrderedDict<Tensor>* theirs : {&parameters, &buffers})
    for (const auto& [name, tensor] : *theirs)
      if (tensor.impl()->storage != nullptr) model_storage.emplace(tensor.impl()->storage.get(), name);
  for (const OrderedDict<Tensor>* ours : {&copy_parameters, &copy_buffers})
    for (const auto& [name, tensor] : *ours) {
      const auto shared = model_storage.find(tensor.impl()->storage.get());
      check(shared == model_storage.end(),
            "AveragedModel: make_copy built a module whose '{}' shares memory with the model's '{}'; it must build "
            "new modules",
            name, shared == model_storage.end() ? "" : shared->second);
    }
  const auto modules = model.named_modules();
  auto copy_modules = copy->named_modules();
  NoGradGuard no_grad;
  for (const auto& [source, target] : {std::pair{&parameters, &copy_parameters}, std::pair{&buffers, &copy_buffers}})
    for (const auto& [name, tensor] : *source) {
      Tensor value = tensor.detach().clone();
      if (options_.device) value = value.to(*options_.device);
      // Not load_state_dict: it would convert the values to the copy's dtype.
      replace_data(*target->at(name).impl(), *value.impl());
    }
  for (const auto& [name, parameter] : parameters)
    Tensor(copy_parameters.at(name)).requires_grad_(parameter.requires_grad());
  // Pre-order: a module's train() reaches its children, which are set after it.
  for (const auto& [name, module] : modules) {
    auto* target = copy_modules.find(name);
    check(target != nullptr, "AveragedModel: make_copy built a module without the model's submodule '{}'", name);
    (*target)->train(module->is_training());
  }
  copy_module_ = register_module("module", copy);
  n_averaged_ = register_buffer("n_averaged", zeros({}, {.dtype = DType::Int64, .device = options_.device}));
}

void AveragedModelBase::update_parameters(nn::Module& model, Where where) {
  CallSiteScope site(where);
  NoGradGuard no_grad;
  nn::Module& copy = *copy_module_;
  OrderedDict<Tensor> averaged = copy.named_parameters(), current = model.named_parameters();
  const OrderedDict<Tensor> copy_buffers = copy.named_buffers(), model_buffers = model.named_buffers();
  check_pairs(averaged, current, "parameters", "parameter");
  check_pairs(copy_buffers, model_buffers, "buffers", "buffer");
  if (options_.use_buffers) {
    for (const auto& [name, tensor] : copy_buffers) averaged.insert(name, tensor);
    for (const auto& [name, tensor] : model_buffers) current.insert(name, tensor);
  }
  std::vector<Tensor> averages, values;
  for (const Tensor& tensor : averaged.values()) averages.push_back(tensor.detach());
  for (size_t i = 0; i < averages.size(); ++i) values.push_back(current.values()[i].detach().to(averages[i].device()));

  if (n_averaged_.item_int64() == 0) {
    for (size_t i = 0; i < averages.size(); ++i) averages[i].copy_(values[i]);
  } else if (options_.multi_avg_fn || !options_.avg_fn) {
    // By device and dtype, in order of first appearance (PyTorch's _group_tensors_by_device_and_dtype).
    struct Group {
      Device device;
      DType dtype;
      std::vector<Tensor> averages, values;
    };
    std::vector<Group> groups;
    for (size_t i = 0; i < averages.size(); ++i) {
      size_t g = 0;
      while (g < groups.size() && !(groups[g].device == averages[i].device() && groups[g].dtype == averages[i].dtype()))
        ++g;
      if (g == groups.size()) groups.push_back({averages[i].device(), averages[i].dtype(), {}, {}});
      groups[g].averages.push_back(averages[i]);
      groups[g].values.push_back(values[i]);
    }
    for (const auto& [device, dtype, group_averages, group_values] : groups) {
      const Tensor num_averaged = n_averaged_.to(device);
      if (options_.multi_avg_fn) {
        options_.multi_avg_fn(group_averages, group_values, num_averaged);
      } else if (device.is_cuda()) {
        // PyTorch's default takes its foreach (lerp) form where foreach kernels exist, the
        // per-tensor formula elsewhere.
        get_swa_multi_avg_fn()(group_averages, group_values, num_averaged);
      } else {
        for (size_t i = 0; i < group_averages.size(); ++i) apply_swa(group_averages[i], group_values[i], num_averaged);
      }
    }
  } else {
    for (size_t i = 0; i < averages.size(); ++i)
      averages[i].copy_(options_.avg_fn(averages[i], values[i], n_averaged_.to(averages[i].device())));
  }
  if (!options_.use_buffers) {
    const std::vector<Tensor> ours = copy_buffers.values(), theirs = model_buffers.values();
    for (size_t i = 0; i < ours.size(); ++i) ours[i].detach().copy_(theirs[i].detach().to(ours[i].device()));
  }
  n_averaged_.copy_(n_averaged_ + 1.0);  // int64: a whole number keeps an integer tensor's dtype
}

}  // namespace ember::optim
