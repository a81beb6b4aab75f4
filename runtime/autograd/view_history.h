// Views and in-place updates of their base. A view shares its base's storage, so after
// `v = t.t(); t.add_(b)` the view's values already include b; its autograd history must too, or
// gradients through `v` would skip the update (b would get none). As in PyTorch, a view made while
// grad mode is on remembers how it was made (its parent and the view op with its attributes); when
// its storage's version has moved since its history was last set, the next reader of that history
// (requires_grad(), grad_fn(), a dispatched op, backward) remakes it by replaying the view op on the
// parent, whose own history is brought up to date the same way. Views made under NoGradGuard and
// detach()ed aliases have no origin and are never remade.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/ops/attrs.h"
#include "runtime/tensor.h"
#include "runtime/tensor_impl.h"

namespace ember {

struct OpDef;

struct ViewOrigin {
  std::shared_ptr<TensorImpl> parent;  // the tensor the view op was applied to
  const OpDef* op = nullptr;           // a registry op of kind View
  Attrs attrs;
  // The function that returned this view together with others (split, chunk, unbind), or null
  // (mark_views_returned_together).
  const char* multi_output_function = nullptr;
  // Serializes remaking the view's history: threads running backward through one shared view
  // (weight tying, Hogwild-style training) find it stale at once after an update of its base.
  mutable std::mutex remake_mutex;
  // Frees a chain of views of views (each origin holds its parent) in a loop: freed recursively,
  // 300,000 slices of slices overflowed the stack.
  ~ViewOrigin();
};

namespace autograd {

// Records that `views` were returned together by `function` (split, chunk, unbind). PyTorch
// refuses an in-place update of such a view, or of a view of one, while recording gradients (one
// backward node stands for all of them and cannot be rebased for one). ember's pieces are separate
// views and could be followed, but a program relying on that would fail under PyTorch, so
// view_path (copy_slices.h) refuses it alike. Views made without grad mode have no origin to mark.
void mark_views_returned_together(std::vector<Tensor>& views, const char* function);

// Replays the view op on the parent and takes the result's grad_fn (see above).
void remake_view_history(TensorImpl& view);

// The storage version a view's history reflects. Published with release after the new grad_fn
// is in place, so a reader that finds it current also sees that grad_fn (view_history.cpp).
inline uint64_t view_version_of(const TensorImpl& impl) {
  return std::atomic_ref(const_cast<uint64_t&>(impl.view_version)).load(std::memory_order_acquire);
}

// The check every reader of autograd history makes first: one pointer test for non-views.
inline void refresh_view_history(TensorImpl& impl) {
  if (impl.view_origin && view_version_of(impl) != impl.storage->version()) remake_view_history(impl);
}

}  // namespace autograd
}  // namespace ember
