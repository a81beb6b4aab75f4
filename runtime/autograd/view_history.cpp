// Remaking a view's autograd history after an in-place update of its base (view_history.h).
#include "runtime/autograd/view_history.h"

#include <memory>
#include <vector>

#include "runtime/autograd/node.h"
#include "runtime/dispatch.h"

namespace ember::autograd {

namespace {

// One view, its parent's history already up to date. Under the view's lock, and only if no other
// thread remade it meanwhile; the version is published last (view_version_of).
void remake_one(TensorImpl& view) {
  const std::lock_guard lock(view.view_origin->remake_mutex);
  const uint64_t version = view.storage->version();
  if (view_version_of(view) == version) return;
  auto publish = [&] { std::atomic_ref(view.view_version).store(version, std::memory_order_release); };
  // A leaf the user made require grad keeps accumulating into its own .grad.
  if (view.requires_grad) return publish();
  const Tensor parent(view.view_origin->parent);
  if (!parent.requires_grad()) {  // brings the parent up to date first
    // The base left autograd (detach_()): the view's old history would still send gradient into
    // the graph the base was detached from. PyTorch's remade node has no edge there either.
    set_history(view, nullptr, 0);
    return publish();
  }
  // The replay records a view node (under a capture mode too: the compiled backward then follows
  // the same path as eager); grad mode may be off where the history is read (an optimizer step).
  const AutoGradMode recording(true);
  const Tensor inputs[] = {parent};
  const TensorList remade = dispatch(OpCall{*view.view_origin->op, inputs, view.view_origin->attrs});
  set_history(view, remade[0].impl()->grad_fn, remade[0].impl()->output_nr);
  publish();
}

}  // namespace

void mark_views_returned_together(std::vector<Tensor>& views, const char* function) {
  for (Tensor& view : views) {
    TensorImpl& impl = *view.impl();
    if (!impl.view_origin) continue;
    // A new origin rather than a changed one: origins are shared read-only once made.
    const ViewOrigin& origin = *impl.view_origin;
    impl.view_origin = std::make_shared<const ViewOrigin>(origin.parent, origin.op, origin.attrs, function);
  }
}

void remake_view_history(TensorImpl& view) {
  // The stale ancestors first, oldest first, so that each remake finds its parent up to date: a
  // chain of views of views is walked in a loop, not by one recursion per link.
  std::vector<TensorImpl*> chain{&view};
  for (TensorImpl* parent = view.view_origin->parent.get();
       parent->view_origin && view_version_of(*parent) != parent->storage->version();
       parent = parent->view_origin->parent.get())
    chain.push_back(parent);
  for (auto stale = chain.rbegin(); stale != chain.rend(); ++stale) remake_one(**stale);
}

}  // namespace ember::autograd

namespace ember {

ViewOrigin::~ViewOrigin() {
  // The outermost origin being freed owns the list; parents released while it drains it (whose
  // own origins would free their parents in turn) are appended instead of freed in place.
  thread_local std::vector<std::shared_ptr<TensorImpl>>* pending = nullptr;
  if (pending != nullptr) {
    pending->push_back(std::move(parent));
    return;
  }
  std::vector<std::shared_ptr<TensorImpl>> parents;
  pending = &parents;
  parents.push_back(std::move(parent));
  while (!parents.empty()) {
    std::shared_ptr<TensorImpl> next = std::move(parents.back());
    parents.pop_back();
    next.reset();  // may append its own parent
  }
  pending = nullptr;
}

}  // namespace ember
