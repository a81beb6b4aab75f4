// retain_grad(): a non-leaf tensor keeping its gradient in .grad (node.h).
#include <mutex>
#include <utility>

#include "runtime/autograd/node.h"
#include "runtime/tensor.h"

namespace ember::autograd {

namespace {
std::weak_ptr<TensorImpl>& retained_slot(Node& node, uint32_t output) {
  if (node.retained_by.empty()) node.retained_by.resize(static_cast<size_t>(node.num_outputs()));
  return node.retained_by[output];
}
}  // namespace

void retain_grad_of(const std::shared_ptr<TensorImpl>& tensor) {
  tensor->meta().retains_grad = true;
  retained_slot(*tensor->grad_fn, tensor->output_nr) = tensor;
}

void move_retained_grad(TensorImpl& tensor, Node* old_fn, uint32_t old_output) {
  if (old_fn == tensor.grad_fn.get() && old_output == tensor.output_nr) return;
  std::weak_ptr<TensorImpl> retainer;
  if (old_fn != nullptr && old_output < old_fn->retained_by.size())
    retainer = std::exchange(old_fn->retained_by[old_output], {});
  // No node any more (detach_()): the tensor became a leaf, which retains nothing.
  if (!tensor.grad_fn || retainer.expired()) {
    tensor.autograd_meta->retains_grad = false;
    return;
  }
  retained_slot(*tensor.grad_fn, tensor.output_nr) = std::move(retainer);
}

void store_retained_grad(const std::weak_ptr<TensorImpl>& retainer, const Tensor& gradient) {
  const std::shared_ptr<TensorImpl> tensor = retainer.lock();
  if (!tensor) return;
  AutogradMeta& meta = tensor->meta();
  const std::lock_guard lock(meta.mutex);
  // As PyTorch: the first gradient is copied (the engine goes on to use it), later ones are added
  // out of place, so a .grad the user already holds keeps its value. Both are recorded in a
  // create_graph backward (the engine's grad mode), so the .grad can be differentiated again.
  Tensor sum = meta.grad && meta.grad->defined() ? *meta.grad + gradient : gradient.clone();
  meta.grad = std::make_shared<Tensor>(std::move(sum));
}

}  // namespace ember::autograd
