// optim::update_bn: PyTorch 2.3's torch.optim.swa_utils.update_bn. Averaged weights were never run
// through the network, so BatchNorm's running statistics do not fit them; update_bn recomputes them
// with one pass over the data: every BatchNorm's running_mean, running_var and num_batches_tracked
// are reset and its momentum set to nullopt (the cumulative average), the model runs forward in
// training mode under no-grad, and the momenta are restored. After a pass over batches x_1..x_B,
// each BatchNorm's running_mean is the mean of the B batch means of its input and running_var the
// mean of the B unbiased batch variances (equal weights per batch, as PyTorch's cumulative average).
//
//   optim::update_bn(loader, swa_model);  // a DataLoader: each batch's data is the input
//
// `inputs`: any range of Tensors, of data::Batch (its data is the input) or of pairs, tuples or
// vectors of Tensors (the first is the input: PyTorch takes input[0] of a list or tuple). `model`: a
// module holder (model(x) is called), or a module with forward(x) (an AveragedModel). With a device
// each input is moved there first. Afterwards the whole model is in training mode if the model
// itself was before, else in eval mode, as PyTorch's model.train(was_training). A model without
// BatchNorm is left alone and the inputs are not read.
#pragma once

#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/data/dataset.h"
#include "runtime/dispatch.h"
#include "runtime/nn/holder.h"
#include "runtime/nn/modules/batch_norm.h"

namespace ember::optim {

namespace detail {

// For its lifetime, every BatchNorm of the model has reset statistics and momentum nullopt and the
// model is in training mode; afterwards (also when a forward throws) the momenta and the model's
// mode are restored.
class BatchNormRecount {
 public:
  explicit BatchNormRecount(nn::Module& model);
  ~BatchNormRecount();
  BatchNormRecount(const BatchNormRecount&) = delete;
  BatchNormRecount& operator=(const BatchNormRecount&) = delete;
  bool empty() const { return momenta_.empty(); }

 private:
  nn::Module& model_;
  bool was_training_ = false;
  std::vector<std::pair<nn::BatchNormImpl*, std::optional<double>>> momenta_;
};

template <typename Model>
constexpr bool is_holder = requires {
  typename Model::ImplType;
};

template <typename Item>
Tensor first_input(const Item& item) {
  using Plain = std::remove_cvref_t<Item>;
  if constexpr (std::is_convertible_v<const Plain&, const Tensor&>)
    return item;
  else if constexpr (std::is_same_v<Plain, data::Batch>)
    return item.data;
  else if constexpr (requires { std::get<0>(item); })
    return std::get<0>(item);
  else
    return item.at(0);
}

}  // namespace detail

template <typename Inputs, typename Model>
void update_bn(Inputs&& inputs, Model& model, std::optional<Device> device = std::nullopt,
               Where where = Where::current()) {
  CallSiteScope site(where);
  NoGradGuard no_grad;
  nn::Module* module = nullptr;
  if constexpr (detail::is_holder<Model>)
    module = model.get();
  else
    module = &model;
  detail::BatchNormRecount recount(*module);
  if (recount.empty()) return;
  for (auto&& item : inputs) {
    Tensor input = detail::first_input(item);
    if (device) input = input.to(*device);
    if constexpr (detail::is_holder<Model>)
      model(input);
    else
      model.forward(input);
  }
}

}  // namespace ember::optim
