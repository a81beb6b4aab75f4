// Remaking a view's autograd history after an in-place update of its base (view_history.h).
#include "runtime/autograd/view_history.h"

#include "runtime/dispatch.h"

namespace ember::autograd {

void remake_view_history(TensorImpl& view) {
  view.view_version = view.storage->version();
  // A leaf the user made require grad keeps accumulating into its own .grad.
  if (view.requires_grad) return;
  const Tensor parent(view.view_origin->parent);
  if (!parent.requires_grad()) return;  // brings the parent up to date first
  // The replay records a view node (under a capture mode too: the compiled backward then follows
  // the same path as eager); grad mode may be off where the history is read (an optimizer step).
  const AutoGradMode recording(true);
  const Tensor inputs[] = {parent};
  const TensorList remade = dispatch(OpCall{*view.view_origin->op, inputs, view.view_origin->attrs});
  view.grad_fn = remade[0].impl()->grad_fn;
  view.output_nr = remade[0].impl()->output_nr;
}

}  // namespace ember::autograd
