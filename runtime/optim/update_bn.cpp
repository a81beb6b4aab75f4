// optim::update_bn's preparation and restoration of the model's BatchNorm layers.
#include "runtime/optim/update_bn.h"

namespace ember::optim::detail {

BatchNormRecount::BatchNormRecount(nn::Module& model) : model_(model) {
  for (const auto& module : model.modules()) {
    auto* batch_norm = dynamic_cast<nn::BatchNormImpl*>(module.get());
    if (batch_norm == nullptr) continue;
    batch_norm->reset_running_stats();
    momenta_.emplace_back(batch_norm, batch_norm->options().momentum);
  }
  if (momenta_.empty()) return;
  was_training_ = model.is_training();
  model.train();
  for (const auto& [batch_norm, momentum] : momenta_) batch_norm->set_momentum(std::nullopt);
}

BatchNormRecount::~BatchNormRecount() {
  if (momenta_.empty()) return;
  for (const auto& [batch_norm, momentum] : momenta_) batch_norm->set_momentum(momentum);
  model_.train(was_training_);
}

}  // namespace ember::optim::detail
